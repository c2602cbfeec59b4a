"""Coordinate-ascent variational inference (CAVI) for locally private Poisson factorization.

Methods: ``private`` (the published scheme: mode spike for the Bessel count, lambda factors,
delta method; no tractable ELBO), ``private-collapsed`` (exact optimal q(y) ∝ S^y / y!
alpha^|y~ - y|, closed-form truncated-Poisson expectations), ``naive`` (max(y~, 0) treated as
true counts) and ``nonprivate`` (true counts). See the README, "Variational inference (CAVI)".
"""

from __future__ import annotations

import numpy as np

from lppf.io import InputError
from lppf.results import METHODS, MODELS, FitData, FitResult

FACTOR_SHAPES = {"pmf": {"theta": ("rows", "k"), "phi": ("k", "cols")},
                 "community": {"theta": ("rows", "k"), "pi": ("k", "k")}}


def _check(model: str, data: FitData, method: str, n_components: int, a0: float, b0: float,
           max_iter: int, tol: float, restarts: int) -> None:
    if model not in MODELS:
        raise InputError(f"model must be one of {MODELS}, got {model!r}")
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if n_components < 1 or max_iter < 1 or restarts < 1:
        raise InputError(f"components, max_iter and restarts must be >= 1, got "
                         f"{n_components}, {max_iter}, {restarts}")
    if not (a0 > 0 and b0 > 0 and tol >= 0):
        raise InputError(f"need a0 > 0, b0 > 0, tol >= 0; got {a0}, {b0}, {tol}")
    Y, alpha = data.Y, np.asarray(data.alpha)
    n_rows, n_cols = Y.shape
    if model == "community" and n_rows != n_cols:
        raise InputError(f"community model needs a square Y, got shape {Y.shape}")
    if data.mask.shape != Y.shape:
        raise InputError(f"mask shape {data.mask.shape} differs from Y shape {Y.shape}")
    if alpha.ndim != 2 or alpha.shape[0] not in (1, n_rows) or alpha.shape[1] not in (1, n_cols):
        raise InputError(f"alpha shape {alpha.shape} does not broadcast to Y shape {Y.shape}")
    if not np.all((alpha >= 0) & (alpha < 1)):
        raise InputError("alpha must lie in [0, 1)")
    if method == "nonprivate" and Y.min(initial=0) < 0:
        raise InputError("nonprivate fits need non-negative counts Y")
    if method.startswith("private") and np.any((np.broadcast_to(alpha, Y.shape) == 0) & (Y < 0)):
        raise InputError("cells with alpha = 0 are noiseless and need non-negative counts")
    sizes = {"rows": n_rows, "cols": n_cols, "k": n_components}
    for name, value in data.fix.items():
        if name not in FACTOR_SHAPES[model]:
            raise InputError(f"cannot fix {name!r} in the {model} model")
        want = tuple(sizes[s] for s in FACTOR_SHAPES[model][name])
        value = np.asarray(value)
        if value.shape != want:
            raise InputError(f"fixed {name} has shape {value.shape}, expected {want}")
        if not np.all(np.isfinite(value) & (value >= 0)):
            raise InputError(f"fixed {name} must be finite and non-negative")


def fit_cavi(model: str, data: FitData, *, method: str, n_components: int, a0: float, b0: float,
             max_iter: int, tol: float, restarts: int, rng: np.random.Generator,
             threads: int | None = None, progress: bool = False) -> FitResult:
    """Fit ``model`` ("pmf" or "community") by CAVI with one of the four ``method``s.

    Iterates local factors -> global factors until the relative change of mu_hat (and of the
    ELBO where computable) in one iteration is below ``tol``, at most ``max_iter`` iterations
    (``tol = 0``: exactly ``max_iter``). ``restarts`` random initializations drawn from ``rng``;
    the one with the best final ELBO (``private``: log likelihood of y~ at mu_hat) is kept.
    """
    _check(model, data, method, n_components, a0, b0, max_iter, tol, restarts)
    if model == "pmf":
        from lppf.cavi.pmf import fit_pmf_cavi as backend
    else:
        from lppf.cavi.community import fit_community_cavi as backend
    return backend(data, method=method, n_components=n_components, a0=a0, b0=b0,
                   max_iter=max_iter, tol=tol, restarts=restarts, rng=rng, threads=threads,
                   progress=progress)
