"""The two-sided geometric mechanism: ``y~ = y + tau``, ``tau ~ 2Geo(alpha)``.

``P(tau) = (1 - alpha)/(1 + alpha) alpha^|tau|`` for integer ``tau`` and ``0 <= alpha < 1``.
Noise is sampled exactly as the difference of two iid geometric counts on {0, 1, ...} with
``P(g = k) = (1 - alpha) alpha^k``. With ``alpha = exp(-epsilon / N)`` the mechanism is
``(N, epsilon)``-limited-precision locally private: neighbouring inputs ``|y - y'| <= N`` change
the log-likelihood of any output by at most ``epsilon = N ln(1/alpha)``.

``alpha`` is a scalar, one value per row (shape ``(n_rows,)`` or ``(n_rows, 1)``: per
document or per actor), or one value per cell (the shape of ``Y``); any shape broadcastable
to ``Y`` is accepted, a 1-d array always meaning one value per row.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from lppf.io import InputError, as_count_matrix, check_seed

_U53 = 2.0**-53


def _check_positive(value, name: str) -> np.ndarray:
    value = real_array(value, name)
    bad = ~(np.isfinite(value) & (value > 0))
    if np.any(bad):
        raise InputError(f"{name} must be finite and > 0, got {float(value[bad].flat[0])!r}")
    return value


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
    if shape is None:
        return alpha
    if alpha.ndim == 1:
        alpha = alpha[:, None]
    try:
        if np.broadcast_shapes(alpha.shape, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise InputError(
            f"{name}: shape {alpha.shape} does not match counts of shape {tuple(shape)} "
            "(use a scalar, one value per row or one per cell)"
        ) from None
    return alpha


def epsilon_to_alpha(epsilon, precision) -> np.ndarray:
    """alpha = exp(-epsilon / N) for privacy level ``epsilon > 0`` and precision ``N > 0``."""
    epsilon = _check_positive(epsilon, "epsilon")
    precision = _check_positive(precision, "precision")
    return np.exp(-epsilon / precision)[()]


def alpha_to_epsilon(alpha, precision) -> np.ndarray:
    """epsilon = N ln(1/alpha) (``inf`` for ``alpha = 0``, i.e. no noise)."""
    alpha = check_alpha(alpha)
    precision = _check_positive(precision, "precision")
    with np.errstate(divide="ignore"):
        return (-precision * np.log(alpha))[()]


def noise_logpmf(tau, alpha) -> np.ndarray:
    """log P(tau) = log((1 - alpha)/(1 + alpha)) + |tau| log(alpha) of 2Geo(alpha), broadcast."""
    from scipy import special  # here, so that importing this module stays cheap

    alpha = check_alpha(alpha)
    return (np.log1p(-alpha) - np.log1p(alpha) + special.xlogy(np.abs(tau), alpha))[()]


def _geometric_seeded(rng: np.random.Generator, alpha: np.ndarray, shape) -> np.ndarray:
    """Counts on {0, 1, ...} with P(k) = (1-alpha) alpha^k (numpy counts trials: subtract 1)."""
    return rng.geometric(1.0 - alpha, size=shape) - 1


def _secure_uniform(n: int) -> np.ndarray:
    """n uniforms on (0, 1] with 53-bit resolution from the OS CSPRNG (``os.urandom``)."""
    bits = np.frombuffer(os.urandom(8 * n), dtype=np.uint64) >> np.uint64(11)
    return (bits.astype(float) + 1.0) * _U53


def _geometric_secure(alpha: np.ndarray) -> np.ndarray:
    """Geometric counts by inversion, ``floor(log V / log alpha)`` with V ~ U(0, 1] from the OS:
    ``P(g >= k) = P(V <= alpha^k) = alpha^k`` up to the 2^-53 grid of V."""
    v = _secure_uniform(alpha.size).reshape(alpha.shape)
    out = np.zeros(alpha.shape, dtype=np.int64)
    pos = alpha > 0
    out[pos] = np.floor(np.log(v[pos]) / np.log(alpha[pos]))
    return out


def _generator(rng) -> np.random.Generator:
    """A numpy Generator from ``rng``: None (fresh), a Generator (or BitGenerator,
    SeedSequence), or a seed in [0, 2**63)."""
    if rng is None or isinstance(rng, np.random.Generator | np.random.BitGenerator
                                 | np.random.SeedSequence):
        return np.random.default_rng(rng)
    return np.random.default_rng(check_seed(rng, "rng"))


def privatize(Y, alpha, rng=None, secure: bool = False) -> np.ndarray:
    """Return ``Y + tau`` (dense int64, may be negative), ``tau ~ 2Geo(alpha)`` iid per cell.

    Y: non-negative integer matrix (dense or scipy sparse), shape (n_rows, n_cols).
    alpha: scalar, per-row (``(n_rows,)`` or ``(n_rows, 1)``) or per-cell array in [0, 1);
        ``alpha = 0`` adds no noise.
    rng: seed or ``numpy.random.Generator`` (reproducible noise, for simulations). With
        ``secure=False`` and ``rng=None`` a fresh numpy generator is used.
    secure: draw the noise from the operating system's cryptographically secure generator
        (``os.urandom``): every geometric count is an inversion of its own 53-bit uniform, so
        no seeded pseudo-random stream is involved. Use this to release real data. It refuses
        ``rng``. The 53-bit grid bounds ``|tau|`` by ``53 ln 2 / ln(1/alpha)``, a deviation
        from the exact mechanism of probability below 2^-53 per cell.
    """
    if secure and rng is not None:
        raise InputError("secure noise cannot be seeded: drop the seed or secure=True")
    Y = as_count_matrix(Y)
    alpha = check_alpha(alpha, Y.shape)
    if secure:
        alpha = np.ascontiguousarray(np.broadcast_to(alpha, Y.shape))
        tau = _geometric_secure(alpha) - _geometric_secure(alpha)
    else:
        rng = _generator(rng)
        tau = _geometric_seeded(rng, alpha, Y.shape) - _geometric_seeded(rng, alpha, Y.shape)
    return Y + tau
