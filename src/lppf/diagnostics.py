"""Convergence diagnostics of MCMC fits, computed with ArviZ.

Split R-hat and bulk/tail effective sample sizes of

* the log-likelihood trace after burn-in, (n_chains, n_iter - burnin) draws;
* mu at ``N_CELLS`` cells drawn once (seed ``CELL_SEED``) among the observed cells, at
  every saved sample, (n_chains, S) draws per cell.

With one chain, its two halves are passed to ArviZ as two chains (which splits them again).
R-hat above ``RHAT_WARN``
means the chains (or halves) disagree: a local mode or too short a burn-in.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

N_CELLS = 16  # cells of mu whose chains are diagnosed
CELL_SEED = 0  # the cells are the same for every fit of the same shape and mask
RHAT_WARN = 1.05

KEYS = ("rhat_loglik", "ess_bulk_loglik", "ess_tail_loglik", "cells", "rhat_mu",
        "ess_bulk_mu", "ess_tail_mu")


def diagnostic_cells(mask: np.ndarray, n: int = N_CELLS) -> np.ndarray:
    """(m, 2) row and column indices of up to ``n`` observed cells, fixed by ``CELL_SEED``."""
    rows, cols = np.nonzero(~np.asarray(mask, dtype=bool))
    pick = np.random.default_rng(CELL_SEED).permutation(len(rows))[:n]
    pick.sort()
    return np.stack([rows[pick], cols[pick]], axis=1).astype(np.int64)


def _arviz():
    """Import ArviZ (0.x: ``InferenceData``) without its once-a-day refactoring notice."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
        import arviz

    return arviz


def _stats(draws: np.ndarray) -> dict[str, np.ndarray]:
    """rhat, ess_bulk, ess_tail of (chain, draw, ...) draws, one value per trailing index."""
    az = _arviz()
    with warnings.catch_warnings():  # short chains are legitimate here
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        ds = az.convert_to_dataset({"x": draws})
    log = getattr(az, "_log", logging.getLogger("arviz"))  # arviz 0.x: its own Logger
    level = log.level
    log.setLevel(logging.ERROR)  # one chain is fine: split R-hat compares its halves
    try:
        out = {"rhat": az.rhat(ds)["x"].values}
        for kind in ("bulk", "tail"):
            out[f"ess_{kind}"] = az.ess(ds, method=kind)["x"].values
    finally:
        log.setLevel(level)
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def chain_diagnostics(loglik_CI: np.ndarray, mu_CSM: np.ndarray, cells: np.ndarray
                      ) -> dict[str, np.ndarray]:
    """Diagnostics of the post-burn-in log likelihood ``loglik_CI`` (chains, iterations) and
    of mu at ``cells`` (m, 2), ``mu_CSM`` (chains, saved samples, m). Keys: ``KEYS``;
    ``*_loglik`` are scalars, ``*_mu`` have one value per cell (NaN when too few draws)."""
    out: dict[str, np.ndarray] = {"cells": cells}
    for name, draws in (("loglik", loglik_CI), ("mu", mu_CSM)):
        if draws.shape[0] == 1:  # one chain: its two halves (ArviZ wants >= 2 chains)
            half = draws.shape[1] // 2
            draws = np.stack([draws[0, :half], draws[0, half:2 * half]])
        if draws.shape[1] < 4:  # arviz needs at least 4 draws per chain
            stats = {k: np.full(draws.shape[2:], np.nan) for k in ("rhat", "ess_bulk",
                                                                   "ess_tail")}
        else:
            stats = _stats(draws)
        for k, v in stats.items():
            out[f"{k}_{name}"] = v
    return out


def worst_rhat(diagnostics: dict[str, np.ndarray]) -> float:
    """The largest R-hat of the log likelihood and of mu (NaN ignored; NaN if none)."""
    values = np.concatenate([np.ravel(diagnostics.get("rhat_loglik", [])),
                             np.ravel(diagnostics.get("rhat_mu", []))])
    values = values[np.isfinite(values)]
    return float(values.max()) if len(values) else float("nan")


def warning_line(diagnostics: dict[str, np.ndarray]) -> str | None:
    """A one-line warning when the worst R-hat exceeds ``RHAT_WARN``, else None."""
    rhat = worst_rhat(diagnostics)
    if not rhat > RHAT_WARN:
        return None
    return (f"warning: R-hat {rhat:.3f} > {RHAT_WARN} (log likelihood "
            f"{float(diagnostics['rhat_loglik']):.3f}): the chains disagree; run longer, "
            "more chains, or check for local modes")


def to_inference_data(samples: dict[str, np.ndarray], loglik_CI: np.ndarray,
                      mu_CSM: np.ndarray, n_chains: int):
    """An ``arviz.InferenceData``: posterior factors and mu at the diagnosed cells
    (chain, draw, ...), the post-burn-in log likelihood in ``sample_stats``."""
    az = _arviz()
    posterior = {k: v.reshape(n_chains, -1, *v.shape[1:]) for k, v in samples.items()}
    posterior["mu_cells"] = mu_CSM
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        return az.from_dict(posterior=posterior, sample_stats={"loglik": loglik_CI})
