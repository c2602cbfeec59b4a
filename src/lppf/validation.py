"""The one place where the inputs of a fit are checked.

:func:`check_params` checks the settings and :func:`fit_data` builds the
:class:`~lppf.results.FitData` contract; the estimators, ``lppf fit`` and the workflow go
through them and the inference backends trust what they return. Every refusal is an
:class:`~lppf.io.InputError` with a one-line message and ``param`` naming the argument at fault.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np

from lppf.io import COUNT_LIMIT, InputError, as_count_matrix, check_seed
from lppf.mechanisms import check_alpha, real_array
from lppf.results import INFERENCES, METHODS, MODELS, PRIVATE_METHODS, FitData

PRIOR_RANGE = (1e-8, 1e8)  # gamma prior shapes and rates outside it are degenerate


def _int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}", name)
    if value >= COUNT_LIMIT:
        raise InputError(f"{name} must be below 2**31, got {value}", name)
    return int(value)


def _prior(name: str, value: Any) -> None:
    value = _float(name, value)
    low, high = PRIOR_RANGE
    if not low <= value <= high:
        raise InputError(f"{name} = {value:g} lies outside [{low:g}, {high:g}] (a degenerate "
                         "gamma prior)", name)


def _float(name: str, value: Any, allow_zero: bool = False) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a real number, got {value!r}", name)
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be a number, got {value!r}", name) from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, "
                         f"got {value!r}", name)
    return value


def check_params(*, method: str, inference: str, n_components: Any, a0: Any, b0: Any,
                 max_iter: Any, burnin: Any, thin: Any, tol: Any, restarts: Any,
                 n_chains: Any = 1, random_state: Any = None, threads: Any = None) -> None:
    """Check the settings of a fit. MCMC keeps ``(max_iter - burnin) // thin`` samples: at
    least one is required. ``random_state``: None, a seed or a numpy Generator."""
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}", "method")
    if inference not in INFERENCES:
        raise InputError(f"inference must be one of {', '.join(INFERENCES)}, "
                         f"got {inference!r}", "inference")
    _int("n_components", n_components)
    _prior("a0", a0)
    _prior("b0", b0)
    _int("max_iter", max_iter)
    _float("tol", tol, allow_zero=True)
    _int("restarts", restarts)
    if threads is not None:
        _int("threads", threads)
    if random_state is not None and not isinstance(random_state, np.random.Generator):
        check_seed(random_state, "random_state")
    if inference == "mcmc":
        _int("burnin", burnin, minimum=0)
        _int("thin", thin)
        _int("n_chains", n_chains)
        if max_iter - burnin < thin:
            raise InputError(f"max_iter ({max_iter}) must exceed burnin ({burnin}) by at least "
                             f"thin ({thin}) to keep one sample", "burnin")


def factor_shapes(model: str, shape: tuple[int, int], n_components: int
                  ) -> dict[str, tuple[int, int]]:
    """Shapes of the factors: pmf theta (D, K), phi (K, V); community theta (V, C), pi (C, C)."""
    K = int(n_components)
    if model == "pmf":
        return {"theta": (shape[0], K), "phi": (K, shape[1])}
    return {"theta": (shape[0], K), "pi": (K, K)}


def _alpha(alpha: Any, shape: tuple[int, int]) -> np.ndarray:
    """alpha as a 2-d float64 array of shape (1, 1), (n_rows, 1) or ``shape``."""
    try:
        alpha = np.array(check_alpha(alpha), dtype=np.float64)
    except InputError as exc:
        raise InputError(str(exc), "alpha") from None
    if alpha.ndim == 0:
        return alpha.reshape(1, 1)
    if alpha.ndim == 1 and len(alpha) == shape[0]:
        return alpha[:, None]
    if alpha.ndim == 2 and alpha.shape in ((1, 1), (shape[0], 1), shape):
        return alpha
    raise InputError(f"alpha: shape {alpha.shape} does not fit counts of shape {shape} "
                     "(use a scalar, one value per row or one per cell)", "alpha")


def _mask(mask: Any, shape: tuple[int, int]) -> np.ndarray:
    if mask is None:
        return np.zeros(shape, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != bool and not (mask.dtype.kind in "iu" and np.isin(mask, (0, 1)).all()):
        raise InputError(f"mask: expected a boolean (or 0/1) array, got dtype {mask.dtype}",
                         "mask")
    if mask.shape != shape:
        raise InputError(f"mask: shape {mask.shape} does not match counts of shape {shape}",
                         "mask")
    return mask.astype(bool)


def _fix(model: str, fix: dict | None, shape: tuple[int, int],
         n_components: int) -> dict[str, np.ndarray]:
    expected = factor_shapes(model, shape, n_components)
    out = {}
    for name, value in (fix or {}).items():
        if name not in expected:
            raise InputError(f"fix: unknown factor {name!r} (choose from "
                             f"{', '.join(expected)})", f"fix_{name}")
        try:
            value = real_array(value, f"fix[{name!r}]")
        except InputError as exc:
            raise InputError(str(exc), f"fix_{name}") from None
        if value.shape != expected[name]:
            raise InputError(f"fix[{name!r}]: shape {value.shape}, expected {expected[name]}",
                             f"fix_{name}")
        if not np.all(np.isfinite(value)) or np.any(value <= 0):
            raise InputError(f"fix[{name!r}]: values must be finite and > 0", f"fix_{name}")
        out[name] = np.ascontiguousarray(value)
    if len(out) == len(expected):
        raise InputError("fix: cannot hold every factor fixed", "fix")
    return out


def _count_matrix(Y: Any, signed: bool) -> np.ndarray:
    try:
        return as_count_matrix(Y, "Y", signed=signed)
    except InputError as exc:
        raise InputError(str(exc), "Y") from None


def _check_memory(model: str, shape: tuple[int, int], n_components: int, n_saved: int) -> None:
    """Refuse a fit whose factors and saved samples cannot fit in this machine's memory."""
    per_sample = sum(a * b for a, b in factor_shapes(model, shape, n_components).values())
    need = 8.0 * per_sample * (n_saved + 8)
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # pragma: no cover - not on POSIX
        return
    if need > have and 8.0 * per_sample * 9 <= have:  # one sample fits: too many are kept
        raise InputError(f"max_iter, burnin and thin keep {n_saved} samples, about "
                         f"{need / 2**30:.3g} GiB for a {shape[0]} x {shape[1]} matrix with "
                         f"n_components = {n_components}, more than this machine's "
                         f"{have / 2**30:.3g} GiB: raise thin or lower max_iter", "max_iter")
    if need > have:
        raise InputError(f"n_components = {n_components} needs about {need / 2**30:.3g} GiB "
                         f"for the factors of a {shape[0]} x {shape[1]} matrix, more than "
                         f"this machine's {have / 2**30:.3g} GiB", "n_components")


def fit_data(model: str, method: str, Y: Any, alpha: Any = None, mask: Any = None,
             fix: dict | None = None, *, n_components: int, n_saved: int = 1) -> FitData:
    """Check and assemble the data of a fit.

    Y : (n_rows, n_cols) counts, privatized (may be negative) unless ``method`` is
        ``nonprivate``; |y| < 2**31. Square with at least 2 rows for the community model.
    alpha : scalar, (n_rows,), (n_rows, 1) or (n_rows, n_cols) in [0, 1); required for the
        private methods, ignored (zeros) for nonprivate.
    mask : bool (n_rows, n_cols), True = held out; the community diagonal is added. At least
        one cell must stay observed.
    fix : factors held fixed, finite and > 0, of the shapes of :func:`factor_shapes`.
    n_saved : samples an MCMC fit keeps (for the memory estimate).
    """
    if model not in MODELS:
        raise InputError(f"model must be one of {', '.join(MODELS)}, got {model!r}", "model")
    private = method != "nonprivate"
    Y = _count_matrix(Y, signed=private)
    if Y.size == 0:  # scikit-learn's wording, which its estimator checks expect
        what = "sample" if Y.shape[0] == 0 else "feature"
        raise InputError(f"Y: found array with 0 {what}(s) (shape={Y.shape}) while a "
                         "minimum of 1 is required.", "Y")
    if model == "community":
        if Y.shape[0] != Y.shape[1]:
            raise InputError(f"Y: the community model needs a square matrix, got shape "
                             f"{Y.shape}", "Y")
        if Y.shape[0] < 2:
            raise InputError("Y: the community model needs at least 2 actors, got "
                             "n_samples = 1", "Y")
    if method in PRIVATE_METHODS and alpha is None:
        raise InputError(f"alpha is required for method {method!r}", "alpha")
    alpha = np.zeros((1, 1)) if alpha is None or not private else _alpha(alpha, Y.shape)
    mask = _mask(mask, Y.shape)
    if model == "community":
        np.fill_diagonal(mask, True)
    if mask.all():
        raise InputError("mask: holds out every cell, nothing left to fit", "mask")
    noiseless = np.broadcast_to(alpha == 0, Y.shape) & (Y < 0) & ~mask
    if method != "naive" and noiseless.any():
        d, v = np.argwhere(noiseless)[0]
        raise InputError(f"Y[{d}, {v}] = {Y[d, v]} < 0 in a cell with alpha = 0 (no noise)", "Y")
    _check_memory(model, Y.shape, int(n_components), n_saved)
    return FitData(Y, alpha, mask, _fix(model, fix, Y.shape, n_components))


__all__ = ["check_params", "factor_shapes", "fit_data"]
