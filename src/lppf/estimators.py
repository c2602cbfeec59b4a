"""scikit-learn style estimators for locally private Poisson factorization.

>>> model = PoissonMF(n_components=25, method="private", seed=0).fit(Y_noisy, alpha=0.5)
>>> model.mu_hat_, model.theta_, model.phi_, model.y_hat_

``__init__`` only stores its arguments; :meth:`fit` validates them and the data (raising
:class:`lppf._io.InputError` with a one-line message), runs the backend (:mod:`lppf.mcmc` or
:mod:`lppf.cavi`) and copies the :class:`lppf.results.FitResult` into attributes ending in
``_``. :data:`DEFAULTS` holds every default, shared with ``lppf fit``.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import time
from typing import Any

import numpy as np

from lppf._io import InputError, as_count_matrix, save_npz
from lppf._numba import threads as numba_threads
from lppf.mechanisms import check_alpha
from lppf.results import INFERENCES, METHODS, FitData, FitResult

DEFAULTS: dict[str, Any] = {
    "n_components": 10,
    "method": "private",
    "inference": "mcmc",
    "a0": 0.1,  # gamma prior shape
    "b0": 1.0,  # gamma prior rate
    "n_iter": 2000,  # MCMC: total iterations including burn-in; CAVI: maximum iterations
    "burnin": 1000,
    "thin": 20,
    "n_chains": 1,  # MCMC: independent chains, samples pooled
    "tol": 1e-5,  # CAVI: stop when the relative change of mu_hat drops below (0: never)
    "restarts": 1,  # CAVI: random restarts, best ELBO kept
    "seed": None,  # None: a fresh seed, recorded in ``seed_``
    "threads": None,  # numba threads; None: numba's default
    "progress": False,
}


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive_float(name: str, value: Any, allow_zero: bool = False) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, "
                         f"got {value!r}")
    return value


def _as_alpha(alpha: Any, shape: tuple[int, int]) -> np.ndarray:
    """alpha as a 2-d float64 array of shape (1, 1), (n_rows, 1) or ``shape``."""
    alpha = np.array(check_alpha(alpha), dtype=np.float64)
    if alpha.ndim == 0:
        return alpha.reshape(1, 1)
    if alpha.ndim == 1 and len(alpha) == shape[0]:
        return alpha[:, None]
    if alpha.ndim == 2 and alpha.shape in ((1, 1), (shape[0], 1), shape):
        return alpha
    raise InputError(f"alpha: shape {alpha.shape} does not fit counts of shape {shape} "
                     "(use a scalar, one value per row or one per cell)")


def _as_mask(mask: Any, shape: tuple[int, int]) -> np.ndarray:
    if mask is None:
        return np.zeros(shape, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != bool and not (mask.dtype.kind in "iu" and np.isin(mask, (0, 1)).all()):
        raise InputError(f"mask: expected a boolean (or 0/1) array, got dtype {mask.dtype}")
    if mask.shape != shape:
        raise InputError(f"mask: shape {mask.shape} does not match counts of shape {shape}")
    return mask.astype(bool)


class _PoissonFactorization:
    """Shared machinery; subclasses set the model name and the factor shapes."""

    _model = ""
    _factors: tuple[str, ...] = ()

    def __init__(self, n_components: int = DEFAULTS["n_components"], *,
                 method: str = DEFAULTS["method"], inference: str = DEFAULTS["inference"],
                 a0: float = DEFAULTS["a0"], b0: float = DEFAULTS["b0"],
                 n_iter: int = DEFAULTS["n_iter"], burnin: int = DEFAULTS["burnin"],
                 thin: int = DEFAULTS["thin"], n_chains: int = DEFAULTS["n_chains"],
                 tol: float = DEFAULTS["tol"],
                 restarts: int = DEFAULTS["restarts"], seed: int | None = DEFAULTS["seed"],
                 threads: int | None = DEFAULTS["threads"],
                 progress: bool = DEFAULTS["progress"]) -> None:
        self.n_components = n_components
        self.method = method
        self.inference = inference
        self.a0 = a0
        self.b0 = b0
        self.n_iter = n_iter
        self.burnin = burnin
        self.thin = thin
        self.n_chains = n_chains
        self.tol = tol
        self.restarts = restarts
        self.seed = seed
        self.threads = threads
        self.progress = progress

    # -- scikit-learn protocol
    @classmethod
    def _param_names(cls) -> list[str]:
        params = inspect.signature(cls.__init__).parameters
        return [p for p in params if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> _PoissonFactorization:
        """Set constructor arguments; unknown names are an error."""
        for name, value in params.items():
            if name not in self._param_names():
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if k == "n_components" or v != DEFAULTS[k]]
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- validation
    def _check_params(self) -> None:
        if self.method not in METHODS:
            raise InputError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.inference not in INFERENCES:
            raise InputError(f"inference must be one of {', '.join(INFERENCES)}, "
                             f"got {self.inference!r}")
        _positive_int("n_components", self.n_components)
        _positive_float("a0", self.a0)
        _positive_float("b0", self.b0)
        _positive_int("n_iter", self.n_iter)
        _positive_float("tol", self.tol, allow_zero=True)
        _positive_int("restarts", self.restarts)
        if self.threads is not None:
            _positive_int("threads", self.threads)
        if self.seed is not None:
            _positive_int("seed", self.seed, minimum=0)
        if self.inference == "mcmc":
            _positive_int("burnin", self.burnin, minimum=0)
            _positive_int("thin", self.thin)
            _positive_int("n_chains", self.n_chains)
            if self.n_iter - self.burnin < self.thin:
                raise InputError(f"n_iter ({self.n_iter}) must exceed burnin ({self.burnin}) "
                                 f"by at least thin ({self.thin}) to keep one sample")

    def _factor_shapes(self, shape: tuple[int, int]) -> dict[str, tuple[int, int]]:
        raise NotImplementedError

    def _check_fix(self, fix: dict | None, shape: tuple[int, int]) -> dict[str, np.ndarray]:
        expected = self._factor_shapes(shape)
        out = {}
        for name, value in (fix or {}).items():
            if name not in expected:
                raise InputError(f"fix: unknown factor {name!r} (choose from "
                                 f"{', '.join(expected)})")
            value = np.asarray(value, dtype=np.float64)
            if value.shape != expected[name]:
                raise InputError(f"fix[{name!r}]: shape {value.shape}, expected "
                                 f"{expected[name]}")
            if not np.all(np.isfinite(value)) or np.any(value <= 0):
                raise InputError(f"fix[{name!r}]: values must be finite and > 0")
            out[name] = np.ascontiguousarray(value)
        if len(out) == len(expected):
            raise InputError("fix: cannot hold every factor fixed")
        return out

    def _check_data(self, Y: Any, alpha: Any, mask: Any, fix: dict | None) -> FitData:
        private = self.method != "nonprivate"
        Y = as_count_matrix(Y, "Y", signed=private)
        if self.method in ("private", "private-collapsed") and alpha is None:
            raise InputError(f"alpha is required for method {self.method!r}")
        alpha = np.zeros((1, 1)) if alpha is None or not private else _as_alpha(alpha, Y.shape)
        mask = _as_mask(mask, Y.shape)
        noiseless = np.broadcast_to(alpha == 0, Y.shape) & (Y < 0) & ~mask
        if self.method != "naive" and noiseless.any():
            d, v = np.argwhere(noiseless)[0]
            raise InputError(f"Y[{d}, {v}] = {Y[d, v]} < 0 in a cell with alpha = 0 (no noise)")
        return FitData(Y, alpha, mask, self._check_fix(fix, Y.shape))

    # -- fitting
    def fit(self, Y: Any, alpha: Any = None, mask: Any = None,
            fix: dict | None = None) -> _PoissonFactorization:
        """Fit to counts ``Y`` (privatized for private/naive methods, true for nonprivate).

        alpha : noise level in [0, 1): scalar, one per row or one per cell (required for
            private methods; ignored by nonprivate). mask : bool, True = held out.
        fix : factors held at given values, e.g. ``{"phi": Phi_KV}``.
        """
        self._check_params()
        data = self._check_data(Y, alpha, mask, fix)
        self.seed_ = (int(np.random.SeedSequence().generate_state(1)[0])
                      if self.seed is None else int(self.seed))
        rng = np.random.default_rng(self.seed_)
        start = time.perf_counter()
        with numba_threads(self.threads) as n_threads:
            self.threads_ = n_threads
            result = self._run(data, rng)
        self._store(result, time.perf_counter() - start)
        return self

    def _run(self, data: FitData, rng: np.random.Generator) -> FitResult:
        common = {"method": self.method, "n_components": int(self.n_components),
                  "a0": float(self.a0), "b0": float(self.b0), "rng": rng,
                  "threads": self.threads, "progress": bool(self.progress)}
        if self.inference == "mcmc":
            from lppf.mcmc import fit_mcmc

            return fit_mcmc(self._model, data, n_iter=int(self.n_iter),
                            burnin=int(self.burnin), thin=int(self.thin),
                            n_chains=int(self.n_chains), **common)
        from lppf.cavi import fit_cavi

        return fit_cavi(self._model, data, max_iter=int(self.n_iter), tol=float(self.tol),
                        restarts=int(self.restarts), **common)

    def _store(self, result: FitResult, total: float) -> None:
        self.result_ = result
        self.mu_hat_ = result.mu_hat
        for name in self._factors:
            setattr(self, f"{name}_", result.factors.get(name))
        self.y_hat_ = result.y_hat
        self.samples_ = result.samples
        self.log_joint_ = result.log_joint
        self.trace_ = result.trace
        self.variational_ = result.variational
        self.elapsed_ = {**result.elapsed, "total": total}
        self.n_iter_ = result.n_iter

    # -- output
    def config(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Every setting of the fit (JSON-serializable)."""
        params = self.get_params()
        params.pop("progress")
        return {"model": self._model, **params, "seed": getattr(self, "seed_", self.seed),
                "numba_threads": getattr(self, "threads_", None),
                "input": None if input_path is None else str(input_path)}

    def to_arrays(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The fit as the arrays of the ``.npz`` layout (see README.md, "Output .npz")."""
        if not hasattr(self, "result_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit first")
        r = self.result_
        out: dict[str, Any] = {"mu_hat": r.mu_hat, **r.factors}
        if r.y_hat is not None:
            out["y_hat"] = r.y_hat
        out.update({f"{k}_samples": v for k, v in r.samples.items()})
        if r.log_joint is not None:
            out["log_joint"] = r.log_joint
        out.update({f"trace_{k}": v for k, v in r.trace.items()})
        out.update({f"q_{k}": v for k, v in r.variational.items()})
        out["elapsed_seconds"] = np.float64(self.elapsed_["total"])
        out.update({f"elapsed_{k}": np.float64(v) for k, v in r.elapsed.items()
                    if k != "total"})
        out.update({f"extra_{k}": np.asarray(v) for k, v in r.extra.items()})
        out.update({f"diag_{k}": np.asarray(v) for k, v in r.diagnostics.items()})
        out["iterations"] = np.int64(r.n_iter)
        out["seed"] = np.int64(self.seed_)
        out["config"] = np.array(json.dumps(self.config(input_path), sort_keys=True))
        return out

    def to_inference_data(self):
        """The MCMC samples as an ``arviz.InferenceData``: posterior factors and mu at the
        diagnosed cells (chain, draw, ...), the post-burn-in log likelihood in
        ``sample_stats`` (:func:`lppf.diagnostics.to_inference_data`)."""
        if not hasattr(self, "result_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit first")
        r = self.result_
        if not r.diagnostics:
            raise ValueError("to_inference_data needs an MCMC fit (inference='mcmc')")
        from lppf.diagnostics import to_inference_data

        n_chains = int(r.extra["n_chains"])
        loglik = np.reshape(r.trace["loglik"], (n_chains, -1))[:, int(self.burnin):]
        return to_inference_data(r.samples, loglik, r.diagnostics["mu_cells"], n_chains)

    def save(self, path: str | os.PathLike[str], *,
             input_path: str | os.PathLike[str] | None = None) -> None:
        """Write the fit ``.npz`` atomically."""
        save_npz(path, **self.to_arrays(input_path))


class PoissonMF(_PoissonFactorization):
    """Poisson matrix factorization (topics): ``Y`` (D, V), ``mu = Theta_DK @ Phi_KV``.

    Fitted: ``mu_hat_``, ``theta_`` (D, K), ``phi_`` (K, V), ``y_hat_``, ``samples_``,
    ``log_joint_``, ``trace_``, ``variational_``, ``elapsed_``, ``n_iter_``, ``result_``,
    ``seed_`` (the seed used), ``threads_`` (numba threads used).
    """

    _model = "pmf"
    _factors = ("theta", "phi")

    def _factor_shapes(self, shape):
        K = int(self.n_components)
        return {"theta": (shape[0], K), "phi": (K, shape[1])}


class CommunityModel(_PoissonFactorization):
    """Overlapping community model (networks): ``Y`` (V, V),
    ``mu_ij = sum_cd theta_ic theta_jd pi_cd``; the diagonal is always held out.

    Fitted as :class:`PoissonMF`, with ``theta_`` (V, C) and ``pi_`` (C, C).
    """

    _model = "community"
    _factors = ("theta", "pi")

    def _factor_shapes(self, shape):
        C = int(self.n_components)
        return {"theta": (shape[0], C), "pi": (C, C)}

    def _check_data(self, Y, alpha, mask, fix):
        shape = np.shape(Y)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise InputError(f"Y: the community model needs a square matrix, got shape {shape}")
        data = super()._check_data(Y, alpha, mask, fix)
        mask = data.mask.copy()
        np.fill_diagonal(mask, True)
        return FitData(data.Y, data.alpha, mask, data.fix)


__all__ = ["DEFAULTS", "CommunityModel", "PoissonMF"]
