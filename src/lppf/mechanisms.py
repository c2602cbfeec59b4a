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

import math
import os

import numpy as np

from lppf.validation import (
    InputError,
    as_count_matrix,
    check_alpha,
    check_seed,
    real_array,
)

_U53 = 2.0**-53


def _check_positive(value, name: str) -> np.ndarray:
    value = real_array(value, name)
    bad = ~(np.isfinite(value) & (value > 0))
    if np.any(bad):
        raise InputError(f"{name} must be finite and > 0, got {float(value[bad].flat[0])!r}")
    return value


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


def privacy_statement(alpha, epsilon=None, precision=None) -> str:
    """One line stating the guarantee of a release with noise level ``alpha`` (any shape):
    ``(N, epsilon)``-limited-precision local privacy with ``epsilon = N ln(1/alpha)``, for
    the smallest alpha (the weakest cell); cells with ``alpha = 0`` have none."""
    alpha = check_alpha(alpha)
    noisy = alpha[alpha > 0]
    clear = int(np.sum(alpha == 0))
    if noisy.size == 0:
        return "no privacy: alpha = 0, the counts are released as they are"
    weakest = float(noisy.min())
    per_unit = -math.log(weakest)
    if epsilon is not None and precision is not None:
        text = (f"epsilon = {float(epsilon):.6g} at precision N = {float(precision):.6g} "
                f"(alpha = {weakest:.6g})")
    else:
        text = (f"epsilon = {per_unit:.6g} N for every precision N (alpha = {weakest:.6g}; "
                f"e.g. N = 1: epsilon = {per_unit:.6g})")
    where = "every cell" if clear == 0 else f"every cell with alpha > 0 ({clear} without noise)"
    return f"(N, epsilon)-limited-precision local privacy for {where}: {text}"


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


def _noise_inversion(alpha: np.ndarray) -> np.ndarray:
    """2Geo(alpha) noise, the difference of two :func:`_geometric_secure` counts."""
    return _geometric_secure(alpha) - _geometric_secure(alpha)


def _opendp():
    """OpenDP's prelude with its contributed samplers enabled, or None if not installed."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    return dp


def _noise_opendp(dp, alpha: np.ndarray, chunk: int = 2**20) -> np.ndarray:
    """2Geo(alpha) noise from OpenDP's discrete Laplace sampler, ``P(tau) ~ exp(-|tau| / s)``
    with ``s = 1 / ln(1/alpha)``: exact integer arithmetic on operating-system randomness
    (one measurement per distinct alpha, in chunks of ``chunk`` cells)."""
    tau = np.zeros(alpha.shape, dtype=np.int64)
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    for a in np.unique(alpha[alpha > 0]):
        laplace = dp.m.make_laplace(domain, dp.l1_distance(T="i64"), scale=-1.0 / np.log(a))
        where = np.flatnonzero(alpha == a)
        for start in range(0, where.size, chunk):
            cells = where[start:start + chunk]
            tau.flat[cells] = laplace([0] * cells.size)
    return tau


def noise_sampler() -> str:
    """The sampler of secure noise on this installation: ``"opendp"`` (OpenDP's exact
    discrete Laplace, ``pip install 'lppf[secure]'``) or ``"inversion"`` (53-bit uniforms
    from ``os.urandom``, inverted; exact up to the 2^-53 grid)."""
    return "opendp" if _opendp() is not None else "inversion"


def privatize(Y, alpha, rng=None, secure: bool | None = None, *, return_info: bool = False):
    """Return ``Y + tau`` (dense int64, may be negative), ``tau ~ 2Geo(alpha)`` iid per cell.

    Parameters
    ----------
    Y : array-like, sparse matrix or pandas.DataFrame of shape (n_rows, n_cols)
        Non-negative integer counts; a DataFrame's index and columns are kept.
    alpha : float or array-like
        Noise level in [0, ``ALPHA_MAX``]: a scalar, one per row (``(n_rows,)`` or
        ``(n_rows, 1)``), or any shape broadcastable to ``Y`` (e.g. one per column or per
        cell); ``alpha = 0`` adds no noise.
    rng : int, numpy.random.Generator or None, default=None
        None draws the noise from the operating system's cryptographically secure
        generator: a release of real data. A seed or Generator makes the noise
        reproducible, for simulations only: whoever knows the seed can subtract the noise.
    secure : bool or None, default=None
        None: secure unless ``rng`` is given. True refuses ``rng``; False requires it.
    return_info : bool, default=False
        Also return how the noise was drawn.

    Returns
    -------
    Y_noisy : ndarray of shape (n_rows, n_cols) or pandas.DataFrame
        The privatized counts.
    info : dict
        Only with ``return_info``: ``source`` ("secure" or "seeded") and ``sampler``
        ("opendp", "inversion" or "numpy"; see :func:`noise_sampler`).

    Notes
    -----
    Secure noise comes from OpenDP's exact discrete Laplace sampler when OpenDP is installed
    (``lppf[secure]``), else by inverting 53-bit uniforms from ``os.urandom``, whose only
    deviation from the exact law is the 2^-53 grid (``|tau|`` capped at
    ``53 ln 2 / ln(1/alpha)``, an event of probability below 2^-53 per cell).
    """
    if secure is None:
        secure = rng is None
    if secure and rng is not None:
        raise InputError("secure noise cannot be seeded: drop the seed or secure=True")
    if not secure and rng is None:
        raise InputError("secure=False needs rng (a seed or numpy Generator): seeded noise is "
                         "for simulations; leave both out to release real data")
    frame = Y if hasattr(Y, "columns") and hasattr(Y, "index") else None
    Y = as_count_matrix(Y)
    alpha = check_alpha(alpha, Y.shape)
    if secure:
        alpha = np.ascontiguousarray(np.broadcast_to(alpha, Y.shape))
        dp = _opendp()
        sampler = "inversion" if dp is None else "opendp"
        tau = _noise_inversion(alpha) if dp is None else _noise_opendp(dp, alpha)
    else:
        sampler = "numpy"
        rng = _generator(rng)
        tau = _geometric_seeded(rng, alpha, Y.shape) - _geometric_seeded(rng, alpha, Y.shape)
    Y_noisy = Y + tau
    if frame is not None:  # a DataFrame keeps its row and column names
        Y_noisy = type(frame)(Y_noisy, index=frame.index, columns=frame.columns)
    if return_info:
        return Y_noisy, {"source": "secure" if secure else "seeded", "sampler": sampler}
    return Y_noisy
