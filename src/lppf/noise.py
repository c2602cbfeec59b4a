"""The noise laws of the three mechanisms: integer noise ``tau`` with a symmetric pmf p.

* geometric, parameter alpha in [0, 1): ``p(k) = (1 - alpha)/(1 + alpha) alpha^|k|``,
  variance ``2 alpha / (1 - alpha)^2``;
* discrete Gaussian (Canonne, Kamath, Steinke 2020), parameter sigma >= 0:
  ``p(k) = exp(-k^2 / (2 sigma^2)) / C(sigma)``, ``C = sum_k exp(-k^2 / (2 sigma^2))``;
  its variance is below sigma^2 (equal to it within 1e-300 relative from sigma = 4 on);
* Skellam (Agarwal, Kairouz, Liu 2021), parameter mu >= 0, the mean of each of two Poisson
  draws ``tau = g+ - g-``: ``p(k) = e^(-2 mu) I_|k|(2 mu)``, variance ``2 mu``.

A parameter of 0 is no noise (tau = 0). All three are log-concave, so the conditional of a
true count behind a privatized one is unimodal (:mod:`lppf.noise_conditional`). Skellam
ratios ``r_j = I_(j+1)(x) / I_j(x)`` (x = 2 mu) come from a continued fraction at the top of
a table and the stable backward recurrence ``r_(j-1) = 1 / (2 j / x + r_j)`` below it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_CF_EPS = 1e-17
_CF_MAXIT = 10_000_000
DG_DIRECT = 16.0  # sigma below this: normalizer and variance by direct sums
DG_WIDTH = 40.0  # direct sums run over |k| <= DG_WIDTH sigma + 2


@njit(cache=True)
def bessel_ratio(j, x):
    """r_j(x) = I_(j+1)(x) / I_j(x) for an integer j >= 0 and x > 0, by the continued
    fraction ``1 / (2 (j + 1) / x + 1 / (2 (j + 2) / x + ...))`` (modified Lentz)."""
    tiny = 1e-300
    inv_x = 1.0 / x
    f = tiny
    c, d = f, 0.0
    for i in range(1, _CF_MAXIT):
        b = 2.0 * (j + i) * inv_x
        d = b + d
        d = tiny if d == 0.0 else d
        c = b + 1.0 / c
        c = tiny if c == 0.0 else c
        d = 1.0 / d
        delta = c * d
        f *= delta
        if abs(delta - 1.0) < _CF_EPS:
            break
    return f


@njit(cache=True)
def skellam_log_ratios(x, n):
    """ln r_j(x) for j = 0 .. n - 1 (r_j = I_(j+1)(x) / I_j(x), x > 0): the continued fraction
    at j = n, then the backward recurrence, which damps rounding errors."""
    out = np.empty(n)
    r = bessel_ratio(n, x)
    for j in range(n, 0, -1):
        r = 1.0 / (2.0 * j / x + r)
        out[j - 1] = math.log(r)
    return out


def skellam_log0(mu: float) -> float:
    """ln p(0) = ln(e^(-2 mu) I_0(2 mu)) of Skellam noise."""
    from scipy import special

    x = 2.0 * mu
    # ive(0, x) turns NaN near x = 1.1e9; i0e stays accurate there (and differs from ive in
    # the last bit at about half of smaller x, so ive keeps its range)
    return float(np.log(special.ive(0, x) if x < 1e9 else special.i0e(x)))


def skellam_logpmf_table(mu: float, n: int) -> np.ndarray:
    """ln p(k) of Skellam(mu) noise for k = 0 .. n (shape (n + 1,)), mu > 0."""
    lr = skellam_log_ratios(2.0 * mu, n)
    return skellam_log0(mu) + np.concatenate(([0.0], np.cumsum(lr)))


def dg_log_norm(sigma: float) -> float:
    """ln C(sigma), C = sum_k exp(-k^2 / (2 sigma^2)): a direct sum for small sigma, else
    ln(sqrt(2 pi) sigma) (Poisson summation: the rest is below exp(-2 pi^2 sigma^2))."""
    if sigma >= DG_DIRECT:
        return math.log(math.sqrt(2.0 * math.pi) * sigma)
    k = np.arange(-math.ceil(DG_WIDTH * sigma) - 2, math.ceil(DG_WIDTH * sigma) + 3)
    return float(np.log(np.exp(-k * k / (2.0 * sigma * sigma)).sum()))


def variance(mechanism: str, param: float) -> float:
    """Variance of the noise of ``mechanism`` with parameter ``param`` (scalar)."""
    param = float(param)
    if param == 0.0:
        return 0.0
    if mechanism == "geometric":
        return 2.0 * param / (1.0 - param) ** 2
    if mechanism == "skellam":
        return 2.0 * param
    if param >= DG_DIRECT:
        return param * param
    k = np.arange(0, math.ceil(DG_WIDTH * param) + 3)
    w = np.exp(-k * k / (2.0 * param * param) - dg_log_norm(param))
    return float(2.0 * np.sum(k * k * w))


def logpmf(mechanism: str, tau, param) -> np.ndarray:
    """ln p(tau) of the noise of ``mechanism`` (``tau`` and ``param`` broadcast; a parameter
    of 0 puts all mass on tau = 0)."""
    tau, param = np.broadcast_arrays(np.asarray(tau, dtype=np.int64),
                                     np.asarray(param, dtype=np.float64))
    out = np.where(tau == 0, 0.0, -np.inf)
    k = np.abs(tau)
    for value in np.unique(param[param > 0]):
        at = param == value
        if mechanism == "geometric":
            out[at] = (math.log1p(-value) - math.log1p(value) + k[at] * math.log(value))
        elif mechanism == "discrete-gaussian":
            out[at] = -k[at] ** 2 / (2.0 * value * value) - dg_log_norm(value)
        else:
            out[at] = skellam_logpmf_table(value, int(k[at].max()))[k[at]]
    return out[()]


def sample(mechanism: str, param: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Seeded noise of the shape of ``param`` (simulations only): geometric and Skellam as
    differences of numpy geometric or Poisson draws, the discrete Gaussian by the rejection
    sampler of Canonne, Kamath and Steinke (2020) on numpy uniforms."""
    if mechanism == "geometric":
        return (rng.geometric(1.0 - param) - 1) - (rng.geometric(1.0 - param) - 1)
    if mechanism == "skellam":
        return rng.poisson(param) - rng.poisson(param)
    return discrete_gaussian(param, lambda n: 1.0 - rng.random(n))


def discrete_gaussian(sigma: np.ndarray, uniform) -> np.ndarray:
    """Discrete Gaussian noise (shape of ``sigma``) by Algorithm 3 of Canonne, Kamath and
    Steinke (2020) in floating point: with ``s = floor(sigma) + 1``, draw Y from the discrete
    Laplace law ``P(Y) ∝ exp(-|Y| / s)`` and accept it with probability
    ``exp(-(|Y| - sigma^2 / s)^2 / (2 sigma^2))``; ``uniform(n)`` gives n uniforms in (0, 1].
    The law is exact up to the rounding of the uniforms and of exp."""
    sigma = np.asarray(sigma, dtype=np.float64)
    out = np.zeros(sigma.shape, dtype=np.int64)
    todo = np.flatnonzero(sigma > 0)
    while todo.size:
        sig = sigma.flat[todo]
        s = np.floor(sig) + 1.0
        log_a = -1.0 / s
        g = np.floor(np.log(uniform(todo.size)) / log_a) - np.floor(
            np.log(uniform(todo.size)) / log_a)
        accept = np.log(uniform(todo.size)) < -(np.abs(g) - sig * sig / s) ** 2 / (2 * sig * sig)
        out.flat[todo[accept]] = g[accept]
        todo = todo[~accept]
    return out
