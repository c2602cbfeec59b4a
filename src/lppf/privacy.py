"""Privacy accounting of the three mechanisms for one released count, with neighbouring
inputs ``|y - y'| <= N`` (the precision N, the sensitivity Delta of the literature).

* geometric, alpha: ``(N, epsilon)``-limited-precision local privacy with
  ``epsilon = N ln(1/alpha)`` (Schein et al. 2019), pure: delta = 0;
* discrete Gaussian, sigma: ``rho``-zCDP with ``rho = N^2 / (2 sigma^2)``, and the tight
  ``(epsilon, delta)`` of Canonne, Kamath and Steinke (2020, Theorem 7):
  ``delta = P[Z > epsilon sigma^2 / N - N / 2] - e^epsilon P[Z > epsilon sigma^2 / N + N / 2]``
  for Z discrete Gaussian (computed by summing its pmf);
* Skellam, mu (each Poisson's mean): Renyi DP of order a with the bound of Agarwal, Kairouz
  and Liu (2021, Theorem 3.5, one dimension, Delta_1 = Delta_2 = N)
  ``eps(a) = a N^2 / (4 mu) + min(((2 a - 1) N^2 + 6 N) / (16 mu^2), 3 N / (4 mu))``,
  converted to ``(epsilon, delta)`` by Canonne, Kamath and Steinke (2020, Proposition 12),
  ``epsilon = eps(a) + ln(1 - 1/a) - (ln delta + ln a) / (a - 1)``, minimized over a grid of
  orders a.

A parameter array is judged by its weakest cell (smallest alpha, sigma or mu > 0).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from lppf.noise import DG_DIRECT, DG_WIDTH, dg_log_norm, variance
from lppf.validation import InputError, check_mechanism, check_noise

DEFAULT_DELTA = 1e-6  # delta of the (epsilon, delta) stated when none is asked for
ORDERS = 1.0 + np.geomspace(1e-3, 1e5, 4000)  # Renyi orders searched by the conversion
_BISECT = 200


def _weakest(mechanism: str, param) -> float:
    param = check_noise(mechanism, param)
    noisy = param[param > 0]
    return float(noisy.min()) if noisy.size else 0.0


def _positive(value, name: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{name} must be finite and > 0, got {value!r}")
    return value


def _delta(delta) -> float:
    delta = DEFAULT_DELTA if delta is None else float(delta)
    if not 0 < delta < 1:
        raise InputError(f"delta must lie in (0, 1), got {delta!r}")
    return delta


def _dg_tails(sigma: float):
    """c -> P[Z > c] (c an array) for Z discrete Gaussian(sigma): exact sums over a table
    built once for sigma, Gaussian tails beyond the direct range (where the two agree to
    rounding)."""
    from scipy import special

    if sigma >= DG_DIRECT * 64:
        return lambda c: special.ndtr(-(np.floor(c) + 0.5) / sigma)
    k = np.arange(-math.ceil(DG_WIDTH * sigma) - 2, math.ceil(DG_WIDTH * sigma) + 3)
    p = np.exp(-k * k / (2.0 * sigma * sigma) - dg_log_norm(sigma))
    tail = np.concatenate((np.cumsum(p[::-1])[::-1], [0.0]))  # P[Z >= k[i]]
    return lambda c: tail[np.clip(np.floor(c).astype(np.int64) + 1 - k[0], 0, k.size)]


def _dg_delta(tails, sigma: float, epsilon: float, precision: float) -> float:
    a = epsilon * sigma * sigma / precision
    lo, hi = tails(np.array([a - precision / 2.0, a + precision / 2.0]))
    return float(max(lo - math.exp(epsilon) * hi, 0.0))


def dg_delta(sigma: float, epsilon: float, precision: float) -> float:
    """The tight delta of the discrete Gaussian at epsilon (CKS 2020, Theorem 7)."""
    return _dg_delta(_dg_tails(sigma), sigma, epsilon, precision)


def dg_epsilon(sigma: float, delta: float, precision: float) -> float:
    """The smallest epsilon with :func:`dg_delta` <= delta (bisection)."""
    tails = _dg_tails(sigma)
    lo, hi = 0.0, 1.0
    while _dg_delta(tails, sigma, hi, precision) > delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _dg_delta(tails, sigma, mid, precision) > delta else (lo, mid)
    return hi


def skellam_rdp(mu: float, order, precision: float) -> np.ndarray:
    """The Renyi bound eps(a) of AKL 2021 for one count (see the module docstring)."""
    a, n = np.asarray(order, dtype=np.float64), float(precision)
    return (a * n * n / (4.0 * mu)
            + np.minimum(((2.0 * a - 1.0) * n * n + 6.0 * n) / (16.0 * mu * mu),
                         3.0 * n / (4.0 * mu)))


def skellam_epsilon(mu: float, delta: float, precision: float) -> tuple[float, float]:
    """(epsilon, the order a that gives it) of the converted Renyi bound."""
    a = ORDERS
    eps = (skellam_rdp(mu, a, precision) + np.log1p(-1.0 / a)
           - (math.log(delta) + np.log(a)) / (a - 1.0))
    best = int(np.argmin(eps))
    return float(max(eps[best], 0.0)), float(a[best])


def privacy(mechanism: str, param, precision=1.0, delta=None) -> dict:
    """The guarantee of a release with noise ``param`` (any shape; the weakest cell counts)
    for neighbours within ``precision``; ``delta`` (default :data:`DEFAULT_DELTA`) for the
    (epsilon, delta) of the discrete Gaussian and Skellam.

    Returns a dict: ``mechanism``, the parameter by name, ``precision``, ``epsilon``,
    ``delta`` (0 for the geometric), ``rho`` (discrete Gaussian), ``renyi_order`` and
    ``renyi_epsilon`` (Skellam: the order used and its bound), ``variance`` and
    ``statement`` (one line)."""
    check_mechanism(mechanism)
    n = _positive(precision, "precision")
    value = _weakest(mechanism, param)
    name = {"geometric": "alpha", "discrete-gaussian": "sigma", "skellam": "mu"}[mechanism]
    out = {"mechanism": mechanism, name: value, "precision": n,
           "variance": variance(mechanism, value)}
    if value == 0.0:
        out.update(epsilon=math.inf, delta=1.0 if mechanism != "geometric" else 0.0,
                   statement=f"no privacy: {name} = 0, the counts are released as they are")
        return out
    if mechanism == "geometric":
        eps = -n * math.log(value)
        out.update(epsilon=eps, delta=0.0, statement=(
            f"geometric alpha = {value:.6g}: ({n:g}, {eps:.6g})-limited-precision local "
            f"privacy per count (epsilon = N ln(1/alpha), delta = 0)"))
        return out
    delta = _delta(delta)
    if mechanism == "discrete-gaussian":
        rho = n * n / (2.0 * value * value)
        eps = dg_epsilon(value, delta, n)
        out.update(rho=rho, epsilon=eps, delta=delta, statement=(
            f"discrete Gaussian sigma = {value:.6g}, precision N = {n:g}: {rho:.6g}-zCDP "
            f"per count, and ({eps:.6g}, {delta:g})-DP (tight, Canonne-Kamath-Steinke "
            f"2020)"))
        return out
    eps, order = skellam_epsilon(value, delta, n)
    out.update(epsilon=eps, delta=delta, renyi_order=order,
               renyi_epsilon=float(skellam_rdp(value, order, n)), statement=(
                   f"Skellam mu = {value:.6g}, precision N = {n:g}: ({eps:.6g}, {delta:g})-DP "
                   f"per count (Renyi bound of Agarwal-Kairouz-Liu 2021 at order {order:.4g}, "
                   f"converted)"))
    return out


def matched_param(mechanism: str, epsilon, delta=None, precision=1.0) -> float:
    """The noise parameter whose release of one count is (epsilon, delta)-DP for neighbours
    within ``precision``: alpha = exp(-epsilon / N) for the geometric (delta unused: 0), the
    smallest sigma (discrete Gaussian, tight conversion) or mu (Skellam, converted Renyi
    bound) that reaches it, by bisection."""
    check_mechanism(mechanism)
    eps = _positive(epsilon, "epsilon")
    n = _positive(precision, "precision")
    if mechanism == "geometric":
        return math.exp(-eps / n)
    return _matched_param(mechanism, eps, _delta(delta), n)


@functools.lru_cache(maxsize=256)
def _matched_param(mechanism: str, eps: float, delta: float, n: float) -> float:
    """:func:`matched_param` of checked floats (a workflow plans many jobs on one grid)."""
    if mechanism == "discrete-gaussian":
        def eps_of(p):
            return dg_epsilon(p, delta, n)
    else:
        def eps_of(p):
            return skellam_epsilon(p, delta, n)[0]
    lo, hi = 1e-3, 1.0
    while eps_of(hi) > eps:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if eps_of(mid) > eps else (lo, mid)
        if hi / lo < 1 + 1e-10:
            break
    return hi


def param_for_variance(mechanism: str, var) -> float:
    """The noise parameter whose noise has variance ``var`` > 0: alpha solving
    ``2 alpha / (1 - alpha)^2 = var``, mu = var / 2, sigma by bisection on the exact
    discrete-Gaussian variance."""
    check_mechanism(mechanism)
    v = _positive(var, "variance")
    if mechanism == "geometric":
        return ((v + 1.0) - math.sqrt(2.0 * v + 1.0)) / v
    if mechanism == "skellam":
        return v / 2.0
    lo, hi = math.sqrt(v) * 0.5, math.sqrt(v) + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if variance(mechanism, mid) < v else (lo, mid)
    return hi


def noise_variance(mechanism: str, param) -> float:
    """Variance of the noise (the weakest cell's for an array)."""
    check_mechanism(mechanism)
    return variance(mechanism, _weakest(mechanism, param))
