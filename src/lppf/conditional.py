"""The collapsed conditional of a true count given its privatized value.

With the mechanism's auxiliaries integrated out, a true count y >= 0 behind the privatized
count y~ = t, with Poisson rate mu and noise level 0 < alpha < 1, has

    f(y) = mu^y / y! * alpha^|t - y|,    P(y | t, mu) = f(y) / Z(t, mu, alpha).

f is log-concave: f(y + 1) / f(y) = c / (y + 1) with c = mu / alpha for y < t and mu alpha
for y >= t, so its mode is max(floor(mu alpha), min(t, floor(mu / alpha)), 0). For t <= 0 it
is Pois(mu alpha) and Z = alpha^-t e^(mu alpha); for t > 0 a two-piece mixture of
Pois(mu / alpha) truncated to [0, t] and Pois(mu alpha) truncated to (t, inf):

    Z = alpha^t e^(mu / alpha) F(t; mu / alpha) + alpha^-t e^(mu alpha) SF(t; mu alpha)

(F, SF: Poisson cdf and survival function). alpha = 0 (no noise) is the point mass y = t.
Here: the mode and ratios, E[y] with ln Z (:func:`mean_log_z`; for many cells at once the
power series of :mod:`lppf.series` stands in where it can, :mod:`lppf.cells`), the pmf on a grid
(:func:`mixture_pmf`), a range holding its mass (:func:`support`) and an exact sampler
(:func:`sample`). Sums run over masses relative to f(mode) = 1, walking out from the mode
until a mass drops below ``TINY_MASS`` of the total (the tails of a log-concave pmf decay at
least geometrically).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from lppf._numba import uniform
from lppf.log_densities import log_factorial

TINY_MASS = 2.0**-53  # relative mass below which a walk stops
TINY_RATE = 1e-300  # floor for rates that enter a logarithm
WALK_MAX_STEPS = 1000  # walks longer than this (pmfs wider than ~1e4): Poisson cdfs instead
WALK_MAX_MODE = 1e15  # modes beyond this (not an exact integer): Poisson cdfs
CORE_MASS = 2.0**-10  # relative mass where the core walk of sample stops
CORE_CELLS = 128  # cells of its core (scratch length); wider pmfs: walk_sample
SMALL_POISSON = 16.0  # y~ <= 0: Pois(mu alpha) by inversion from 0 below this mean
FROM_ZERO = 16.0  # mu / alpha below this: the core walk starts at 0, not at the mode
LANES = 8  # cells drawn side by side by sample_lanes
LANE_CELLS = 16  # masses y = 0 .. LANE_CELLS - 1 of each lane
LANE_MAX_HI = 6.0  # largest mu alpha of a lane (keeps the bound on its tail tight)
_INV = 1.0 / np.arange(1.0, 257.0)  # 1 / (y + 1) for small y: multiplications, no divisions
_EPS = 1e-16
_FPMIN = 1e-300
_MAXIT = 1_000_000


@njit(cache=True, inline="always")
def ratio(y, t, c_lo, c_hi):
    """f(y + 1) / f(y) = c / (y + 1) with c = c_lo (mu / alpha) for y < t, c_hi (mu alpha)
    otherwise."""
    c = c_lo if y < t else c_hi
    return c * _INV[y] if y < len(_INV) else c / (y + 1.0)


@njit(cache=True, inline="always")
def inv_ratio(y, t, ic_lo, ic_hi):
    """f(y - 1) / f(y) = y / c with c = c_lo for y - 1 < t and c_hi otherwise (reciprocals
    ``ic_lo = 1 / c_lo``, ``ic_hi = 1 / c_hi`` given)."""
    return (ic_lo if y - 1 < t else ic_hi) * y


@njit(cache=True, inline="always")
def mode(t, c_lo, c_hi):
    """argmax_y f(y) = max(floor(c_hi), min(t, floor(c_lo)), 0) for c_lo = mu / alpha,
    c_hi = mu alpha (c_lo may overflow)."""
    return max(math.floor(c_hi), math.floor(min(float(t), c_lo)), 0)


@njit(cache=True, inline="always")
def log_f(y, t, log_mu, log_a):
    """ln f(y) = y ln mu - ln y! + |t - y| ln alpha."""
    return y * log_mu - log_factorial(y) + abs(t - y) * log_a


# ---------------------------------------------------------------------------------------------
# sampler


@njit(cache=True)
def walk_sample(m, t, c_lo, c_hi, u):
    """Exact inverse-CDF draw (uniform ``u``) given the mode ``m`` and c_lo, c_hi of
    :func:`ratio`.

    The walk goes up from the mode, then down, until the masses drop below ``TINY_MASS`` of
    the total; a second identical walk inverts the CDF."""
    ic_lo, ic_hi = 1.0 / c_lo, 1.0 / c_hi
    z = 1.0
    f = 1.0
    y = m
    while True:
        f *= ratio(y, t, c_lo, c_hi)
        y += 1
        if not f > TINY_MASS * z:  # (also ends on NaN)
            break
        z += f
    f = 1.0
    y = m
    while y > 0:
        f *= inv_ratio(y, t, ic_lo, ic_hi)
        y -= 1
        if not f > TINY_MASS * z:
            break
        z += f
    target = u * z
    cum = 1.0
    if target < cum:
        return m
    f = 1.0
    y = m
    while True:
        f *= ratio(y, t, c_lo, c_hi)
        y += 1
        if not f > TINY_MASS * z:
            break
        cum += f
        if target < cum:
            return y
    f = 1.0
    y = m
    while y > 0:
        f *= inv_ratio(y, t, ic_lo, ic_hi)
        y -= 1
        if not f > TINY_MASS * z:
            break
        cum += f
        if target < cum:
            return y
    return m  # target within rounding of the total


@njit(cache=True, inline="always")
def poisson_small(lam, rs):
    """Pois(lam) for 0 < lam < ``SMALL_POISSON`` by inversion from 0 with P(0) = e^-lam (a
    uniform of the xoshiro state ``rs``); a uniform past the summed masses (rounding) draws
    again."""
    while True:
        u = uniform(rs)
        p = math.exp(-lam)
        cum = p
        y = 0
        while u >= cum and p > TINY_MASS * cum:
            y += 1
            p *= lam * _INV[y - 1] if y <= len(_INV) else lam / y
            cum += p
        if u < cum:
            return y


@njit(cache=True, inline="always")
def sample(t, mu, a, inv_a, rs, core, core_mass=CORE_MASS):
    """One exact draw of y ~ P(y | t, mu) for 0 < a < 1 (``inv_a = 1 / a``), mu >= 0, from the
    uniforms of the xoshiro state ``rs`` (:func:`lppf._numba.uniform`); ``core`` is scratch
    (its length caps the cells of the core, wider pmfs go to :func:`walk_sample`).

    y~ <= 0 with mu alpha < ``SMALL_POISSON``: :func:`poisson_small`. Otherwise, walking out
    from the mode (from 0 when mu / alpha < ``FROM_ZERO``: no walk down, and masses relative
    to f(0) stay below e^16) until a mass drops to ``core_mass`` of the running total gives
    the core masses and, as the ratios f(y + 1) / f(y) fall away from the mode
    (log-concavity), a geometric bound on each tail beyond: Z <= Z_hi = core + bounds. A
    target u Z_hi is inverted over the core, then over the tails walked exactly (to
    ``TINY_MASS``); a target beyond them (probability (Z_hi - Z) / Z_hi) draws again. Each
    try returns y with probability f(y) / Z_hi, so the accepted draw is exact, and most draws
    never walk the tails. (A walk up from 0 cannot stop before the mode: there each mass is
    the largest so far, above ``core_mass`` of the total for fewer than 1 / ``core_mass``
    cells; if it did, the ratio would be >= 1 and :func:`walk_sample` takes over.)"""
    c_hi = mu * a
    if not c_hi > 0.0:  # mu = 0, a NaN rate (never from checked inputs), or mu a < 5e-324
        if not mu > 0.0 or t <= 0:  # then P(y > t) < 1e-300 and, for t <= 0, P(y > 0) too
            return 0
        c_hi = 5e-324  # y~ > 0: the mass sits in [0, t], by the ratios c_lo / (y + 1)
    if t <= 0 and c_hi < SMALL_POISSON:
        return poisson_small(c_hi, rs)
    inv_mu = 1.0 / mu
    c_lo, ic_lo, ic_hi = mu * inv_a, a * inv_mu, inv_a * inv_mu
    m = mode(t, c_lo, c_hi) if c_lo >= FROM_ZERO else 0
    size = len(core)
    core[0] = 1.0
    z, n = 1.0, 1
    f, y = 1.0, m
    while True:  # up: masses of m + 1, m + 2, ... until one is small
        f *= ratio(y, t, c_lo, c_hi)
        y += 1
        if f <= core_mass * z or n == size:
            break
        core[n] = f
        z += f
        n += 1
    r_up = ratio(y, t, c_lo, c_hi)
    f_up, y_up, n_up = f, y, n
    f, y = 1.0, m
    f_dn, y_dn, r_dn = 0.0, 0, 0.0
    while y > 0:  # down: masses of m - 1, m - 2, ..., 0 until one is small
        f *= inv_ratio(y, t, ic_lo, ic_hi)
        y -= 1
        if (f <= core_mass * z and y > 0) or n == size:
            f_dn, y_dn, r_dn = f, y, inv_ratio(y, t, ic_lo, ic_hi)
            break
        core[n] = f
        z += f
        n += 1
    if n == size or r_up >= 1.0 or r_dn >= 1.0:  # too wide for the core (or no bound)
        return walk_sample(m, t, c_lo, c_hi, uniform(rs))
    z_hi = z + f_up / (1.0 - r_up) + f_dn / (1.0 - r_dn)
    while True:
        target = uniform(rs) * z_hi
        cum = 0.0
        for i in range(n):
            cum += core[i]
            if target < cum:
                return m + i if i < n_up else m + n_up - 1 - i
        f, y = f_up, y_up
        while f > TINY_MASS * z:
            cum += f
            if target < cum:
                return y
            f *= ratio(y, t, c_lo, c_hi)
            y += 1
        f, y = f_dn, y_dn
        while f > TINY_MASS * z:
            cum += f
            if target < cum:
                return y
            if y == 0:
                break
            f *= inv_ratio(y, t, ic_lo, ic_hi)
            y -= 1


@njit(cache=True)
def sample_cell(t, mu, a, inv_a, rs, core):
    """:func:`sample` compiled once as a function of its own: its callers call it instead of
    inlining it (compile time)."""
    return sample(t, mu, a, inv_a, rs, core)


@njit(cache=True, inline="always")
def fits_lanes(t, c_lo, c_hi, n_cells):
    """Whether :func:`sample_lanes` with ``n_cells`` masses can draw P(y | t, mu): the walk
    starts at 0 (c_lo = mu / alpha < ``FROM_ZERO``), y~ < n_cells so that every ratio from
    y = n_cells - 1 on is c_hi / (y + 1), and 0 < c_hi = mu alpha < n_cells (ratios < 1
    there), c_hi <= ``LANE_MAX_HI``."""
    return 0.0 < c_hi <= LANE_MAX_HI and c_hi < n_cells and c_lo < FROM_ZERO and t < n_cells


@njit(cache=True, inline="always")
def sample_lanes(n, t_L, par, rs, core, cum, work, y_L):
    """Exact draws y_l ~ P(y | t_l, mu_l) for the first ``n`` of ``LANES`` lanes, each a cell
    that :func:`fits_lanes`, side by side; ``y_L`` (LANES,) int gets them.

    ``t_L`` (LANES,) holds y~ and ``par`` (4, LANES) c_lo = mu / alpha, c_hi = mu alpha, mu
    and alpha of each lane (lanes n and beyond: any values that fit, ignored). With N =
    len(cum), ``cum`` (N, LANES) gets the running sums of the masses f(y) / f(0), y < N, by
    the ratios of :func:`ratio`, and

        Z_hi = cum[N - 1] + f(N) / (1 - c_hi / (N + 1)) >= Z,

    every ratio from y = N on being at most c_hi / (N + 1). The target u Z_hi (a uniform of
    the xoshiro state ``rs`` per lane) is found by counting the sums below it: loops of fixed
    length over lanes, which the compiler turns into vector instructions, with no exit to
    mispredict. A target past the sums walks the tail exactly; one past the tail (probability
    (Z_hi - Z) / Z_hi) draws the cell again by :func:`sample` (scratch ``core``). Each y comes
    with probability f(y) / Z_hi from the first try and (Z_hi - Z) / Z_hi f(y) / Z from the
    second: f(y) / Z. ``work`` (2, LANES) is scratch: the last mass and the target. Rows
    are indexed in place, not sliced: a slice costs numba a reference count."""
    N = cum.shape[0]
    for l in range(LANES):
        work[0, l] = 1.0
        cum[0, l] = 1.0
    for y in range(1, N):
        inv = _INV[y - 1]
        for l in range(LANES):
            work[0, l] *= (par[0, l] if y - 1 < t_L[l] else par[1, l]) * inv
            cum[y, l] = cum[y - 1, l] + work[0, l]
    for l in range(n):
        f_next = work[0, l] * par[1, l] * _INV[N - 1]
        work[1, l] = uniform(rs) * (cum[N - 1, l] + f_next / (1.0 - par[1, l] * _INV[N]))
    for l in range(LANES):
        y_L[l] = 0
    for y in range(N):
        for l in range(LANES):
            y_L[l] += cum[y, l] <= work[1, l]
    for l in range(n):
        if y_L[l] == N:
            y_L[l] = _lane_tail(N - 1, work[0, l], cum[N - 1, l], work[1, l], t_L[l], par[2, l],
                                par[3, l], rs, core)


@njit(cache=True)
def _lane_tail(y, f, cum, target, t, mu, a, rs, core):
    """The tail of :func:`sample_lanes` past mass f = f(y) and running sum ``cum``: the first
    y' > y whose running sum passes ``target``, or, once the masses are negligible, a new
    draw by :func:`sample`."""
    c_hi = mu * a
    while True:
        f *= c_hi / (y + 1.0)
        y += 1
        cum += f
        if target < cum:
            return y
        if f <= TINY_MASS * cum:
            return sample_cell(t, mu, a, 1.0 / a, rs, core)


# ---------------------------------------------------------------------------------------------
# mean and normalizer


@njit(cache=True)
def _walk_sums(m, t, c_lo, c_hi, ic_lo, ic_hi):
    """(sum_y f(y) / f(m), sum_y (y - m) f(y) / f(m), done) by a walk out from the mode
    ``m`` (``ic_lo = 1 / c_lo``, ``ic_hi = 1 / c_hi``); done is False when a direction takes
    more than ``WALK_MAX_STEPS`` steps."""
    total, first = 1.0, 0.0
    f, y, dy = 1.0, m, 0.0
    while True:
        f *= ratio(y, t, c_lo, c_hi)
        y += 1
        dy += 1.0
        if f <= TINY_MASS * total:
            break
        if dy > WALK_MAX_STEPS:
            return total, first, False
        total += f
        first += dy * f
    f, y, dy = 1.0, m, 0.0
    while y > 0:
        f *= inv_ratio(y, t, ic_lo, ic_hi)
        y -= 1
        dy -= 1.0
        if f <= TINY_MASS * total:
            break
        if dy < -WALK_MAX_STEPS:
            return total, first, False
        total += f
        first += dy * f
    return total, first, True


@njit(cache=True)
def _logaddexp(a, b):
    hi = max(a, b)
    if hi == -math.inf:
        return hi
    return hi + math.log1p(math.exp(-abs(a - b)))


@njit(cache=True)
def log_gamma_pq_scaled(a, x):
    """(ln(e^x P(a, x)), ln(e^x Q(a, x))): regularized incomplete gamma functions times e^x.

    For integer a = k + 1: e^x Q(a, x) = e^x F(k; x) and e^x P(a, x) = e^x SF(k; x) with F, SF
    the Poisson cdf and survival function; the e^x scaling keeps far tails finite. Series for
    x < a + 1 (where P <= 1/2 roughly), Lentz continued fraction for Q otherwise.
    """
    lpre = a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:
        ap = a
        term = 1.0 / a
        total = term
        for _ in range(_MAXIT):
            ap += 1.0
            term *= x / ap
            total += term
            if term < total * _EPS:
                break
        lp = lpre + math.log(total)
        return lp, x + math.log1p(-math.exp(lp - x))
    b = x + 1.0 - a
    c = 1.0 / _FPMIN
    d = 1.0 / b
    h = d
    for i in range(1, _MAXIT):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _FPMIN:
            d = _FPMIN
        c = b + an / c
        if abs(c) < _FPMIN:
            c = _FPMIN
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    lq = lpre + math.log(h)
    return x + math.log1p(-math.exp(lq - x)), lq


@njit(cache=True)
def _mean_log_z_cdf(t, a, mu, log_a):
    """:func:`mean_log_z` for t >= 1 from Poisson cdfs (wide pmfs): y <= t has mass
    alpha^t e^(mu/alpha) F(t; mu/alpha), y > t has alpha^(-t) e^(mu alpha) SF(t; mu alpha)."""
    lam_up, lam_low = mu * a, mu / a
    lgam = math.lgamma(t + 1.0)
    lq_low = log_gamma_pq_scaled(t + 1.0, lam_low)[1]
    lp_up = log_gamma_pq_scaled(t + 1.0, lam_up)[0]
    log_low = t * log_a + lq_low
    log_up = -t * log_a + lp_up
    log_z = _logaddexp(log_low, log_up)
    # truncated means: lam F(t-1)/F(t) = lam (1 - p(t)/F(t));
    # lam SF(t-1)/SF(t) = lam (1 + p(t)/SF(t))
    p_ratio = math.exp(t * math.log(lam_low) - lgam - lq_low)
    if p_ratio < 0.5:
        mean_low = lam_low * (1.0 - p_ratio)
    else:  # far left tail: 1 - p_ratio cancels, take F(t - 1) directly
        mean_low = lam_low * math.exp(log_gamma_pq_scaled(float(t), lam_low)[1] - lq_low)
    mean_up = lam_up * (1.0 + math.exp(t * math.log(lam_up) - lgam - lp_up))
    w_low = math.exp(log_low - log_z)
    return w_low * mean_low + (1.0 - w_low) * mean_up, log_z


@njit(cache=True)
def mean_log_z_noisy(t, a, mu, inv_a, log_a):
    """(E[y], ln Z) for 0 < a < 1 and mu > 0, given ``inv_a = 1 / a`` and ``log_a = ln a``.

    t <= 0: Pois(mu a) in closed form. t >= 1: a walk out from the mode, or Poisson cdfs
    for pmfs too wide to walk (the walk takes O(sd) steps)."""
    c_hi = mu * a
    if t <= 0:
        return c_hi, c_hi - t * log_a
    c_lo = mu * inv_a
    if c_hi < WALK_MAX_MODE:
        m = mode(t, c_lo, c_hi)
        inv_mu = 1.0 / mu
        total, first, done = _walk_sums(m, t, c_lo, c_hi, a * inv_mu, inv_a * inv_mu)
        if done and m <= 16 and 1e-15 < mu < 1e15:  # mu^m total within range: one log
            return m + first / total, (math.log(total * mu**m) - log_factorial(m)
                                       + abs(t - m) * log_a)
        if done:
            return m + first / total, log_f(m, t, math.log(mu), log_a) + math.log(total)
    return _mean_log_z_cdf(t, a, mu, log_a)


@njit(cache=True, inline="always")
def mean_log_z_noiseless(t, mu):
    """(E[y], ln Z) of a noiseless cell: y = y~, Z = mu^y~ / y~!."""
    return float(t), t * math.log(mu) - math.lgamma(t + 1.0)


@njit(cache=True)
def mean_log_z(t, a, mu):
    """E[y] and ln Z of P(y | t, mu) (mu floored at ``TINY_RATE``; a = 0: y = t >= 0)."""
    mu = max(mu, TINY_RATE)
    if a == 0.0:
        return mean_log_z_noiseless(t, mu)
    return mean_log_z_noisy(t, a, mu, 1.0 / a, math.log(a))


# ---------------------------------------------------------------------------------------------
# pmf


@njit(cache=True)
def _add_pmf(t, a, mu, y_W, weight, out_W):
    """out_W += weight * P(y_W | t, mu). On a grid of consecutive values (the usual one) the
    pmf is taken at the grid's value nearest the mode and carried to the others by the
    ratios of :func:`ratio` (a mass that underflows to 0 ends its walk); elsewhere from its
    logarithm at each value."""
    if a == 0.0 or mu <= 0.0:
        at = t if a == 0.0 else 0
        for w in range(len(y_W)):
            if y_W[w] == at:
                out_W[w] += weight
        return
    log_a, log_mu = math.log(a), math.log(mu)
    log_z = mean_log_z_noisy(t, a, mu, 1.0 / a, log_a)[1]
    n = len(y_W)
    if n == 0:
        return
    y0 = y_W[0]
    consecutive = y0 >= 0
    for w in range(n):
        consecutive &= y_W[w] == y0 + w
    if not consecutive:
        for w in range(n):
            y = y_W[w]
            if y >= 0:
                out_W[w] += weight * math.exp(log_f(y, t, log_mu, log_a) - log_z)
        return
    c_lo, c_hi = mu / a, mu * a
    m = min(max(mode(t, c_lo, c_hi), y0), y0 + n - 1)
    p_m = weight * math.exp(log_f(m, t, log_mu, log_a) - log_z)
    p = p_m
    for y in range(m, y0 + n):  # up: p(y) to p(y + 1)
        out_W[y - y0] += p
        p *= ratio(y, t, c_lo, c_hi)
        if p == 0.0:
            break
    ic_lo, ic_hi = a / mu, 1.0 / (mu * a)
    p = p_m
    for y in range(m, y0, -1):  # down: p(y) to p(y - 1)
        p *= inv_ratio(y, t, ic_lo, ic_hi)
        if p == 0.0:
            break
        out_W[y - 1 - y0] += p


@njit(cache=True)
def mixture_pmf(t_m, a_m, mu_Sm, y_mW):
    """Mean over samples s of P(y_mW[n] | t_m[n], mu_Sm[s, n], a_m[n]), shape (m, W)."""
    n_samples, n_cells = mu_Sm.shape
    out_mW = np.zeros(y_mW.shape)
    for n in range(n_cells):
        for s in range(n_samples):
            _add_pmf(t_m[n], a_m[n], mu_Sm[s, n], y_mW[n], 1.0 / n_samples, out_mW[n])
    return out_mW


def support(t: np.ndarray, a: np.ndarray, mu_lo: np.ndarray,
            mu_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell range [lo, hi] of y holding all but a negligible part of P(y | t, mu) for
    every mu in [mu_lo, mu_hi].

    Below t the conditional is Pois(mu / alpha) truncated to y <= t, above it Pois(mu alpha)
    truncated to y > t; each piece lies within 8 standard deviations (+10) of its mode.
    """
    with np.errstate(divide="ignore"):
        low = np.minimum(t, mu_lo / a)
    high = np.maximum(t, mu_hi * a)
    lo = np.maximum(low - 8 * np.sqrt(np.maximum(low, 0)) - 10, 0)
    hi = np.maximum(high + 8 * np.sqrt(np.maximum(high, 0)) + 10, lo)
    return np.floor(lo).astype(np.int64), np.ceil(hi).astype(np.int64)
