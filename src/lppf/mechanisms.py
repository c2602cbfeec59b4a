"""The release mechanisms: ``y~ = y + tau`` with integer noise ``tau`` iid per cell.

``MECHANISMS``: ``"geometric"`` (the two-sided geometric, the paper's), ``"discrete-gaussian"``
and ``"skellam"``; their laws are in :mod:`lppf.noise`, their guarantees in :mod:`lppf.privacy`
(re-exported here: :func:`privacy`, :func:`matched_param`, :func:`noise_variance`,
:func:`param_for_variance`).

Geometric: ``P(tau) = (1 - alpha)/(1 + alpha) alpha^|tau|`` for integer ``tau`` and
``0 <= alpha < 1``. Noise is sampled exactly as the difference of two iid geometric counts on
{0, 1, ...} with ``P(g = k) = (1 - alpha) alpha^k``. With ``alpha = exp(-epsilon / N)`` the
mechanism is ``(N, epsilon)``-limited-precision locally private: neighbouring inputs
``|y - y'| <= N`` change the log-likelihood of any output by at most ``epsilon = N ln(1/alpha)``.

The noise parameter (alpha, sigma or mu) is a scalar, one value per row (shape ``(n_rows,)``
or ``(n_rows, 1)``: per document or per actor), or one value per cell (the shape of ``Y``);
any shape broadcastable to ``Y`` is accepted, a 1-d array always meaning one value per row.
"""

from __future__ import annotations

import math
import os

import numpy as np

from lppf import noise
from lppf.privacy import matched_param, noise_variance, param_for_variance, privacy
from lppf.validation import (
    MECHANISMS,
    NOISE_PARAMS,
    InputError,
    as_count_matrix,
    check_alpha,
    check_mechanism,
    check_noise,
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


def noise_logpmf(tau, alpha, mechanism: str = "geometric") -> np.ndarray:
    """log P(tau) of the noise, broadcast: ``log((1 - alpha)/(1 + alpha)) + |tau| log(alpha)``
    of 2Geo(alpha), or of the discrete Gaussian or Skellam noise with parameter ``alpha``
    (sigma or mu; :func:`lppf.noise.logpmf`)."""
    if mechanism != "geometric":
        return noise.logpmf(mechanism, tau, check_noise(mechanism, alpha))
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


def noise_sampler(mechanism: str = "geometric") -> str:
    """The sampler of secure noise of ``mechanism`` on this installation: ``"opendp"``
    (OpenDP's exact discrete Laplace or discrete Gaussian samplers, ``pip install
    'lppf[secure]'``) or ``"inversion"`` (53-bit uniforms from ``os.urandom``, inverted;
    exact up to the 2^-53 grid, and for the discrete Gaussian up to the rounding of exp); the
    Skellam noise is always ``"inversion"`` of the Poisson cdf."""
    if mechanism == "skellam":
        return "inversion"
    return "opendp" if _opendp() is not None else "inversion"


def _dg_opendp(dp, sigma: np.ndarray, chunk: int = 2**20) -> np.ndarray:
    """Discrete Gaussian noise from OpenDP's exact sampler (integer arithmetic on
    operating-system randomness), one measurement per distinct sigma."""
    tau = np.zeros(sigma.shape, dtype=np.int64)
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    for s in np.unique(sigma[sigma > 0]):
        gaussian = dp.m.make_gaussian(domain, dp.l2_distance(T="i64"), scale=float(s))
        where = np.flatnonzero(sigma == s)
        for start in range(0, where.size, chunk):
            cells = where[start:start + chunk]
            tau.flat[cells] = gaussian([0] * cells.size)
    return tau


def _skellam_secure(mu: np.ndarray) -> np.ndarray:
    """Skellam noise, the difference of two Poisson(mu) counts, each by inverting scipy's
    Poisson cdf at a 53-bit uniform from ``os.urandom`` (exact up to the 2^-53 grid of the
    uniform and the double-precision rounding of the cdf)."""
    from scipy import stats

    def poisson():
        bits = np.frombuffer(os.urandom(8 * mu.size), dtype=np.uint64) >> np.uint64(11)
        u = ((bits.astype(float) + 0.5) * _U53).reshape(mu.shape)  # in (0, 1)
        return stats.poisson.ppf(u, mu).astype(np.int64)

    return np.where(mu > 0, poisson() - poisson(), 0)


def _secure_noise(mechanism: str, param: np.ndarray) -> tuple[np.ndarray, str]:
    """Secure noise of ``mechanism`` (param broadcast to the counts) and its sampler."""
    sampler = noise_sampler(mechanism)
    dp = _opendp() if sampler == "opendp" else None
    if mechanism == "geometric":
        tau = _noise_inversion(param) if dp is None else _noise_opendp(dp, param)
    elif mechanism == "discrete-gaussian":
        tau = (noise.discrete_gaussian(param, _secure_uniform) if dp is None
               else _dg_opendp(dp, param))
    else:
        tau = _skellam_secure(param)
    return tau, sampler


def _noise_param(mechanism: str, alpha, sigma, mu, shape) -> np.ndarray:
    """The one parameter of ``mechanism`` among alpha, sigma and mu, checked for ``shape``."""
    given = {"alpha": alpha, "sigma": sigma, "mu": mu}
    name = NOISE_PARAMS[mechanism]
    extra = [k for k, v in given.items() if v is not None and k != name]
    if extra:
        raise InputError(f"mechanism {mechanism!r} takes {name}, not {', '.join(extra)}")
    if given[name] is None:
        raise InputError(f"mechanism {mechanism!r} needs {name}")
    return check_noise(mechanism, given[name], shape)


def privatize(Y, alpha=None, rng=None, secure: bool | None = None, *,
              mechanism: str = "geometric", sigma=None, mu=None, return_info: bool = False):
    """Return ``Y + tau`` (dense int64, may be negative), ``tau`` iid per cell from the noise
    of ``mechanism``: 2Geo(alpha), the discrete Gaussian with parameter sigma, or Skellam
    noise, the difference of two Poisson(mu) counts.

    Parameters
    ----------
    Y : array-like, sparse matrix or pandas.DataFrame of shape (n_rows, n_cols)
        Non-negative integer counts; a DataFrame's index and columns are kept.
    alpha : float or array-like
        Geometric noise level in [0, ``ALPHA_MAX``]: a scalar, one per row (``(n_rows,)`` or
        ``(n_rows, 1)``), or any shape broadcastable to ``Y`` (e.g. one per column or per
        cell); ``alpha = 0`` adds no noise.
    rng : int, numpy.random.Generator or None, default=None
        None draws the noise from the operating system's cryptographically secure
        generator: a release of real data. A seed or Generator makes the noise
        reproducible, for simulations only: whoever knows the seed can subtract the noise.
    secure : bool or None, default=None
        None: secure unless ``rng`` is given. True refuses ``rng``; False requires it.
    mechanism : {"geometric", "discrete-gaussian", "skellam"}, default="geometric"
    sigma, mu : float or array-like
        The parameter of the discrete Gaussian (sigma >= 0) or of the Skellam noise (mu >= 0,
        the mean of each Poisson draw; variance 2 mu), shaped as ``alpha``.
    return_info : bool, default=False
        Also return how the noise was drawn.

    Returns
    -------
    Y_noisy : ndarray of shape (n_rows, n_cols) or pandas.DataFrame
        The privatized counts.
    info : dict
        Only with ``return_info``: ``source`` ("secure" or "seeded"), ``sampler``
        ("opendp", "inversion" or "numpy"; see :func:`noise_sampler`), ``mechanism`` and
        the parameter under its name (``alpha``, ``sigma`` or ``mu``).

    Notes
    -----
    Secure geometric and discrete-Gaussian noise comes from OpenDP's exact samplers when
    OpenDP is installed (``lppf[secure]``), else by inverting 53-bit uniforms from
    ``os.urandom`` (geometric: exact up to the 2^-53 grid, ``|tau|`` capped at
    ``53 ln 2 / ln(1/alpha)``, an event of probability below 2^-53 per cell; discrete
    Gaussian: the rejection sampler of :func:`lppf.noise.discrete_gaussian` on them). Secure
    Skellam noise inverts scipy's Poisson cdf at such uniforms.
    """
    check_mechanism(mechanism)
    if secure is None:
        secure = rng is None
    if secure and rng is not None:
        raise InputError("secure noise cannot be seeded: drop the seed or secure=True")
    if not secure and rng is None:
        raise InputError("secure=False needs rng (a seed or numpy Generator): seeded noise is "
                         "for simulations; leave both out to release real data")
    frame = Y if hasattr(Y, "columns") and hasattr(Y, "index") else None
    Y = as_count_matrix(Y)
    param = _noise_param(mechanism, alpha, sigma, mu, Y.shape)
    if secure:
        tau, sampler = _secure_noise(mechanism, np.ascontiguousarray(
            np.broadcast_to(param, Y.shape)))
    elif mechanism == "geometric":  # the draws of earlier versions, kept for their seeds
        sampler = "numpy"
        rng = _generator(rng)
        tau = (_geometric_seeded(rng, param, Y.shape)
               - _geometric_seeded(rng, param, Y.shape))
    else:
        sampler = "numpy"
        tau = noise.sample(mechanism, np.broadcast_to(param, Y.shape), _generator(rng))
    Y_noisy = Y + tau
    if frame is not None:  # a DataFrame keeps its row and column names
        Y_noisy = type(frame)(Y_noisy, index=frame.index, columns=frame.columns)
    if return_info:
        return Y_noisy, {"source": "secure" if secure else "seeded", "sampler": sampler,
                         "mechanism": mechanism, NOISE_PARAMS[mechanism]: param}
    return Y_noisy


__all__ = ["MECHANISMS", "alpha_to_epsilon", "epsilon_to_alpha", "matched_param",
           "noise_logpmf", "noise_sampler", "noise_variance", "param_for_variance", "privacy",
           "privacy_statement", "privatize"]
