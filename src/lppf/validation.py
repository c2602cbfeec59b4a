"""The one place where inputs are checked: values, count matrices, noise levels, seeds and the
settings and data of a fit.

The mechanism, ``lppf privatize``, ``lppf fit``, the estimators and the workflow's config
check (through :func:`check_params`) all go through these functions, and the inference
backends trust what :func:`fit_data` returns. Every refusal is an :class:`InputError` with a
one-line message; ``param`` names the argument at fault where there is one.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

COUNT_LIMIT = 2**31  # counts (and privatized counts) must lie strictly within +- this
SEED_LIMIT = 2**63  # seeds are stored as int64

METHODS = ("private", "private-collapsed", "naive", "nonprivate")
PRIVATE_METHODS = ("private", "private-collapsed")  # methods with latent true counts
INFERENCES = ("mcmc", "cavi")
# MCMC samplers of the community model's fixed-count fits (lppf.mcmc.community.uses_hmc)
SAMPLERS = ("auto", "gibbs", "hmc")
MODELS = ("pmf", "community")
MECHANISMS = ("geometric", "discrete-gaussian", "skellam")  # additive integer noise
NOISE_PARAMS = {"geometric": "alpha", "discrete-gaussian": "sigma", "skellam": "mu"}


class InputError(ValueError):
    """Bad user input. The message is one line naming the file, key or value at fault.

    ``param`` names the argument at fault when there is one (``"Y"``, ``"mask"``,
    ``"fix_phi"``, ``"n_iter"``, ...), so that a front end can name its own option for it.
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(one_line(message))
        self.param = param


def one_line(text: Any) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def reason(exc: BaseException) -> str:
    """An exception as one line: its type, and its message when it has one."""
    text = one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# The largest alpha whose noise stays within the count limit: P(|tau| >= 2**31) =
# 2 alpha^(2**31) / (1 + alpha) <= exp(-32) per cell.
ALPHA_MAX = 1.0 - 2.0**-26


def real_array(value, name: str) -> np.ndarray:
    """``value`` as a float array if it holds real numbers only (no bools, complex numbers or
    strings), else one line naming ``name``."""
    try:
        array = np.asarray(value)
        if array.dtype.kind == "O" and all(
                isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)
                for v in array.flat):
            array = array.astype(float)
    except (TypeError, ValueError, OverflowError):
        array = None
    if array is None or array.dtype.kind not in "iuf":
        what = type(value).__name__ if array is None else f"dtype {array.dtype}"
        raise InputError(f"{name}: expected numbers (real, not bool or text), got {what}")
    return array.astype(float)


def check_alpha(alpha, shape: tuple[int, ...] | None = None, name: str = "alpha") -> np.ndarray:
    """Validate ``alpha`` (real, finite, in [0, ALPHA_MAX]); if ``shape`` is given, also check
    that it broadcasts to ``shape`` and return a 1-d ``alpha`` as a column (one value per
    row). Above ALPHA_MAX the noise would exceed the count limit 2**31."""
    alpha = real_array(alpha, name)
    bad = ~(np.isfinite(alpha) & (alpha >= 0) & (alpha < 1))
    if np.any(bad):
        raise InputError(f"{name} must lie in [0, 1), got {float(alpha[bad].flat[0])!r}")
    if np.any(alpha > ALPHA_MAX):
        raise InputError(f"{name} = {float(alpha.max())!r} is too close to 1: its noise would "
                         f"exceed the count limit 2**31 (at most 1 - 2**-26)")
    return alpha if shape is None else _broadcastable(alpha, shape, name)


def _broadcastable(value: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``value`` (a 1-d one made a column: one value per row), checked to broadcast to
    ``shape``."""
    if value.ndim == 1:
        value = value[:, None]
    try:
        if np.broadcast_shapes(value.shape, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise InputError(
            f"{name}: shape {value.shape} does not match counts of shape {tuple(shape)} "
            "(use a scalar, one value per row or one per cell)"
        ) from None
    return value


# Largest sigma (discrete Gaussian) and mu (Skellam, the mean of each Poisson draw) whose noise
# stays far within the count limit: 2**31 is more than 128 standard deviations away.
SIGMA_MAX = 2.0**24
SKELLAM_MU_MAX = 2.0**40


def check_mechanism(mechanism: Any) -> str:
    """A mechanism name, one of :data:`MECHANISMS`."""
    if mechanism not in MECHANISMS:
        raise InputError(f"mechanism must be one of {', '.join(MECHANISMS)}, got "
                         f"{mechanism!r}", "mechanism")
    return mechanism


def check_noise(mechanism: str, value, shape: tuple[int, ...] | None = None,
                name: str | None = None) -> np.ndarray:
    """The noise parameter of ``mechanism`` checked as :func:`check_alpha` checks alpha:
    ``alpha`` in [0, 1) (geometric), ``sigma`` in [0, ``SIGMA_MAX``] (discrete Gaussian) or
    ``mu`` in [0, ``SKELLAM_MU_MAX``] (Skellam); 0 means no noise."""
    check_mechanism(mechanism)
    name = name or NOISE_PARAMS[mechanism]
    if mechanism == "geometric":
        return check_alpha(value, shape, name)
    top = SIGMA_MAX if mechanism == "discrete-gaussian" else SKELLAM_MU_MAX
    value = real_array(value, name)
    bad = ~(np.isfinite(value) & (value >= 0) & (value <= top))
    if np.any(bad):
        raise InputError(f"{name} must lie in [0, {top:g}], got {float(value[bad].flat[0])!r}")
    return value if shape is None else _broadcastable(value, shape, name)


def check_sparse(Y: Any, name: str = "Y") -> Any:
    """A scipy sparse matrix whose index arrays are checked against its shape (scipy trusts
    them when a matrix is built from arrays: an index out of range reads out of bounds)."""
    check = getattr(Y, "check_format", None)
    try:
        if check is not None:
            check(full_check=True)
        elif hasattr(Y, "tocsr"):
            Y.tocsr().check_format(full_check=True)
    except (ValueError, TypeError, IndexError) as exc:
        raise InputError(f"{name}: not a valid sparse matrix ({reason(exc)})") from None
    return Y


def as_count_matrix(Y: Any, name: str = "Y", signed: bool = False) -> np.ndarray:
    """Validate a count matrix and return it as a dense ``int64`` array.

    Accepts dense arrays and scipy sparse matrices. Rejects non-numeric dtypes, NaN/inf,
    non-integer values, counts of magnitude >= 2**31 and, unless ``signed``, negative values,
    with a message naming ``name``.
    """
    if hasattr(Y, "toarray"):
        Y = check_sparse(Y, name).toarray()
    try:
        Y = np.asarray(Y)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: not a numeric matrix ({reason(exc)})") from None
    if Y.dtype.kind == "b" or Y.dtype.kind not in "iuf":
        raise InputError(f"{name}: expected numeric counts, got dtype {Y.dtype}")
    if Y.ndim != 2:
        raise InputError(f"{name}: expected a 2-d matrix, got shape {Y.shape}")
    if Y.size == 0:
        return Y.astype(np.int64)
    if Y.dtype.kind == "f":
        if not np.all(np.isfinite(Y)):
            raise InputError(f"{name}: contains NaN or infinite values")
        if np.any(Y != np.round(Y)):
            raise InputError(f"{name}: contains non-integer values")
    low, high = Y.min().item(), Y.max().item()  # Python numbers: no overflow
    if high >= COUNT_LIMIT or low <= -COUNT_LIMIT:
        worst = high if high >= -low else low
        raise InputError(f"{name}: counts must lie within +-2**31, got {worst:.6g}")
    if not signed and low < 0:
        raise InputError(f"{name}: contains negative counts (min {int(low)})")
    return Y.astype(np.int64)


def check_seed(value: Any, name: str = "seed") -> int:
    """A seed: an integer in [0, 2**63)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputError(f"{name} must be an integer in [0, 2**63), got {value!r}", name)
    if not 0 <= value < SEED_LIMIT:
        raise InputError(f"{name} must be an integer in [0, 2**63), got {value}", name)
    return int(value)


@dataclass(frozen=True)
class FitData:
    """Validated inputs of a fit.

    Y : (n_rows, n_cols) int64. Privatized counts for ``private*``/``naive``, true counts for
        ``nonprivate``.
    alpha : float64 array broadcastable to Y (shape (), (n_rows, 1) or (n_rows, n_cols));
        all zeros for ``nonprivate``. alpha = 0 marks a noiseless cell.
    mask : (n_rows, n_cols) bool, True = held out (contributes nothing). For the community
        model the diagonal is always held out.
    fix : factors held at given values, e.g. ``{"phi": Phi_KV}``.
    mechanism : the noise of the release, one of :data:`MECHANISMS`; ``alpha`` then holds
        its parameter (:data:`NOISE_PARAMS`): alpha, sigma or mu, 0 for a noiseless cell.
    """

    Y: np.ndarray
    alpha: np.ndarray
    mask: np.ndarray
    fix: dict[str, np.ndarray] = field(default_factory=dict)
    mechanism: str = "geometric"


PRIOR_RANGE = (1e-8, 1e8)  # gamma prior shapes and rates outside it are degenerate
FIX_MAX = float(COUNT_LIMIT)  # fixed factors at or above it give rates no count can have
MAX_CHAINS = 1000  # MCMC chains run one after another: more is a typo, not a plan


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
                 n_chains: Any = 1, extend: Any = 0, sampler: Any = "auto",
                 random_state: Any = None, threads: Any = None) -> None:
    """Check the settings of a fit. MCMC keeps ``(max_iter - burnin) // thin`` samples: at
    least one is required; ``extend`` extensions may run ``max_iter + (max_iter - burnin)
    (2^(extend + 1) - 2)`` sweeps in all, below 2**31; ``sampler`` is one of
    :data:`SAMPLERS`. ``random_state``: None, a seed or a numpy Generator."""
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
        if n_chains > MAX_CHAINS:
            raise InputError(f"n_chains must be at most {MAX_CHAINS}, got {n_chains}",
                             "n_chains")
        if max_iter - burnin < thin:
            raise InputError(f"max_iter ({max_iter}) must exceed burnin ({burnin}) by at least "
                             f"thin ({thin}) to keep one sample", "burnin")
        _int("extend", extend, minimum=0)
        if sampler not in SAMPLERS:
            raise InputError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}",
                             "sampler")
        if max_iter + (max_iter - burnin) * (2 ** (extend + 1) - 2) >= COUNT_LIMIT:
            raise InputError(f"extend = {extend} could run more than 2**31 sweeps "
                             f"(max_iter {max_iter}, burnin {burnin})", "extend")


def check_sampler(sampler: str, model: str) -> None:
    """HMC samples the community model only (its fixed-count fits)."""
    if sampler == "hmc" and model != "community":
        raise InputError(f"sampler 'hmc' applies to the community model only, not {model!r} "
                         "(its fits are Gibbs)", "sampler")


def factor_shapes(model: str, shape: tuple[int, int], n_components: int
                  ) -> dict[str, tuple[int, int]]:
    """Shapes of the factors: pmf theta (D, K), phi (K, V); community theta (V, C), pi (C, C)."""
    K = int(n_components)
    if model == "pmf":
        return {"theta": (shape[0], K), "phi": (K, shape[1])}
    return {"theta": (shape[0], K), "pi": (K, K)}


def _alpha(alpha: Any, shape: tuple[int, int], mechanism: str = "geometric") -> np.ndarray:
    """alpha (the noise parameter of ``mechanism``) as a 2-d float64 array of shape (1, 1),
    (n_rows, 1) or ``shape``. Any shape :func:`check_alpha` accepts for ``shape`` (what the
    mechanism accepts) is accepted; one that is none of these three, e.g. (1, n_cols), is
    broadcast to ``shape``."""
    name = NOISE_PARAMS[mechanism]
    try:
        alpha = np.array(check_noise(mechanism, alpha), dtype=np.float64)
    except InputError as exc:
        raise InputError(str(exc), "alpha") from None
    column = alpha[:, None] if alpha.ndim == 1 else alpha
    try:
        fits = np.broadcast_shapes(column.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise InputError(f"{name}: shape {alpha.shape} does not fit counts of shape {shape} "
                         "(use a scalar, one value per row or one per cell)", "alpha")
    if column.ndim < 2:
        return column.reshape(1, 1)
    if column.shape in ((1, 1), (shape[0], 1), shape):
        return column
    return np.ascontiguousarray(np.broadcast_to(column, shape))


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
        if np.any(value >= FIX_MAX):
            raise InputError(f"fix[{name!r}]: values must lie below 2**31, got "
                             f"{float(value.max()):.6g} (rates beyond the count range)",
                             f"fix_{name}")
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
             fix: dict | None = None, *, n_components: int, n_saved: int = 1,
             mechanism: str = "geometric") -> FitData:
    """Check and assemble the data of a fit.

    Parameters
    ----------
    model : {"pmf", "community"}
    method : str
        One of :data:`METHODS`.
    Y : array-like or sparse matrix of shape (n_rows, n_cols)
        Counts, privatized (may be negative) unless ``method`` is ``nonprivate``;
        |y| < 2**31. Square with at least 2 rows for the community model.
    alpha : float or array-like, default=None
        Noise level in [0, 1): any shape :func:`check_alpha` accepts for ``Y`` (scalar, one
        per row, per column or per cell); required for the private methods, ignored (zeros)
        for nonprivate.
    mask : array-like of bool of shape (n_rows, n_cols), default=None
        True = held out; the community diagonal is added. At least one cell must stay
        observed.
    fix : dict of str to ndarray, default=None
        Factors held fixed, finite and > 0, of the shapes of :func:`factor_shapes`.
    n_components : int
    n_saved : int, default=1
        Samples an MCMC fit keeps (for the memory estimate).
    mechanism : str, default="geometric"
        The noise of the release (:data:`MECHANISMS`); ``alpha`` is then its parameter:
        sigma of the discrete Gaussian, mu (each Poisson's mean) of the Skellam noise.
        ``private`` (Bessel augmentation) needs the geometric mechanism.

    Returns
    -------
    FitData
        ``alpha`` of shape (1, 1), (n_rows, 1) or (n_rows, n_cols).
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
    check_mechanism(mechanism)
    if method == "private" and mechanism != "geometric":
        raise InputError(f"method 'private' (Bessel augmentation) needs the geometric "
                         f"mechanism, got {mechanism!r}: use 'private-collapsed'", "method")
    if method in PRIVATE_METHODS and alpha is None:
        raise InputError(f"{NOISE_PARAMS[mechanism]} is required for method {method!r}",
                         "alpha")
    alpha = (np.zeros((1, 1)) if alpha is None or not private
             else _alpha(alpha, Y.shape, mechanism))
    mask = _mask(mask, Y.shape)
    if model == "community":
        np.fill_diagonal(mask, True)
    if mask.all():
        raise InputError("mask: holds out every cell, nothing left to fit", "mask")
    noiseless = np.broadcast_to(alpha == 0, Y.shape) & (Y < 0) & ~mask
    if method != "naive" and noiseless.any():
        d, v = np.argwhere(noiseless)[0]
        raise InputError(f"Y[{d}, {v}] = {Y[d, v]} < 0 in a cell with "
                         f"{NOISE_PARAMS[mechanism]} = 0 (no noise)", "Y")
    _check_memory(model, Y.shape, int(n_components), n_saved)
    return FitData(Y, alpha, mask, _fix(model, fix, Y.shape, n_components),
                   mechanism if private else "geometric")


__all__ = ["ALPHA_MAX", "COUNT_LIMIT", "INFERENCES", "MECHANISMS", "METHODS", "MODELS",
           "NOISE_PARAMS", "PRIVATE_METHODS", "SAMPLERS", "SEED_LIMIT", "SIGMA_MAX",
           "SKELLAM_MU_MAX", "FitData", "InputError", "as_count_matrix", "check_alpha",
           "check_mechanism", "check_noise", "check_params", "check_sampler", "check_seed",
           "check_sparse", "factor_shapes", "fit_data", "real_array"]
