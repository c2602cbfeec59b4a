"""The result every inference backend returns, and its layout in a fit ``.npz``.

MCMC (:mod:`lppf.mcmc`) and CAVI (:mod:`lppf.cavi`) backends share :class:`FitResult`, so
the estimators, the CLI and the workflow write one layout whatever the backend. The keys are
defined here once: :meth:`FitResult.to_arrays` and :meth:`FitResult.from_arrays` convert,
:func:`samples_key`, :func:`part_key` and :func:`part` name and read single entries (metrics,
figures, checks). :class:`lppf.fitting.Fit` adds the settings, seed and noise level and
writes and reads the file. The data a fit consumes, :class:`~lppf.validation.FitData`, is
built by :func:`lppf.validation.fit_data`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

FACTORS = {"pmf": ("theta", "phi"), "community": ("theta", "pi")}  # factor names by model
# FitResult fields stored one key per entry, under a prefix: {field: prefix}
PREFIXES = {"trace": "trace_", "variational": "q_", "elapsed": "elapsed_", "extra": "extra_",
            "diagnostics": "diag_"}
SECONDS = "elapsed_seconds"  # the fit's wall time in total (beside the phases' elapsed_*)


def samples_key(factor: str) -> str:
    """Key of a factor's thinned samples, e.g. ``phi_samples``."""
    return f"{factor}_samples"


def part_key(part: str, name: str) -> str:
    """Key of entry ``name`` of the FitResult field ``part``, e.g. ``diag_rhat_mu``."""
    return PREFIXES[part] + name


def part(arrays: Any, name: str) -> dict[str, Any]:
    """The entries of the FitResult field ``name`` in a fit's arrays, prefix removed."""
    prefix = PREFIXES[name]
    return {k[len(prefix):]: arrays[k] for k in arrays
            if k.startswith(prefix) and not (name == "elapsed" and k == SECONDS)}


@dataclass
class FitResult:
    """What a backend returns; estimators copy these into fitted attributes.

    mu_hat : (n_rows, n_cols) posterior mean (MCMC) or E_Q (CAVI) of the rate, every cell
        including masked ones.
    factors : point estimates, e.g. ``{"theta": (D, K), "phi": (K, V)}`` or
        ``{"theta": (V, C), "pi": (C, C)}`` (posterior means / variational means).
    y_hat : posterior mean of the true counts (private methods), else None.
    samples : thinned factor samples, e.g. ``{"theta": (S, D, K), ...}`` (MCMC only).
    log_joint : (S,) log joint probability of each saved sample (MCMC).
    trace : per-iteration traces, e.g. ``{"loglik": (I,)}`` or ``{"elbo": ..., "change": ...}``.
    variational : variational parameters (CAVI), e.g. ``{"theta_shape": ..., "theta_rate": ...}``.
    elapsed : seconds per phase, e.g. ``{"burnin": s, "sampling": s}``.
    n_iter : iterations run.
    extra : backend-specific details, e.g. ``{"n_chains": 2, "start_loglik": ...}``.
    diagnostics : MCMC convergence diagnostics (:mod:`lppf.diagnostics`): ``rhat_loglik``,
        ``ess_bulk_loglik``, ``ess_tail_loglik`` (scalars), ``cells`` (m, 2), ``rhat_mu``,
        ``ess_bulk_mu``, ``ess_tail_mu`` (m,), ``mu_cells`` (n_chains, S, m).
    """

    mu_hat: np.ndarray
    factors: dict[str, np.ndarray]
    n_iter: int
    elapsed: dict[str, float]
    y_hat: np.ndarray | None = None
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    log_joint: np.ndarray | None = None
    trace: dict[str, np.ndarray] = field(default_factory=dict)
    variational: dict[str, np.ndarray] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)

    def to_arrays(self, seconds: float | None = None) -> dict[str, Any]:
        """The result as arrays of the fit ``.npz`` (docs/usage.md, "Output .npz"); with
        ``seconds``, the total wall time as ``elapsed_seconds``."""
        out: dict[str, Any] = {"mu_hat": self.mu_hat, **self.factors}
        if self.y_hat is not None:
            out["y_hat"] = self.y_hat
        out.update({samples_key(k): v for k, v in self.samples.items()})
        if self.log_joint is not None:
            out["log_joint"] = self.log_joint
        out.update({part_key("trace", k): v for k, v in self.trace.items()})
        out.update({part_key("variational", k): v for k, v in self.variational.items()})
        if seconds is not None:
            out[SECONDS] = np.float64(seconds)
        out.update({part_key("elapsed", k): np.float64(v) for k, v in self.elapsed.items()
                    if k != "total"})
        out.update({part_key("extra", k): np.asarray(v) for k, v in self.extra.items()})
        out.update({part_key("diagnostics", k): np.asarray(v)
                    for k, v in self.diagnostics.items()})
        out["iterations"] = np.int64(self.n_iter)
        return out

    @classmethod
    def from_arrays(cls, arrays: Any, model: str, require: Any) -> FitResult:
        """The result stored in a fit's ``arrays`` (a mapping) of ``model``; ``require(key)``
        returns a key that must be present (or raises)."""
        factors = {name: require(name) for name in FACTORS[model]}
        samples = {name: arrays[samples_key(name)] for name in factors
                   if samples_key(name) in arrays}
        parts = {name: part(arrays, name) for name in PREFIXES}
        parts["elapsed"] = {k: float(v) for k, v in parts["elapsed"].items()}
        return cls(mu_hat=require("mu_hat"), factors=factors,
                   n_iter=int(require("iterations")), y_hat=arrays.get("y_hat"),
                   samples=samples, log_joint=arrays.get("log_joint"), **parts)
