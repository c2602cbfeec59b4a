"""Skellam and Bessel distributions: log-pmfs, moments and an exact Bessel sampler.

The Bessel distribution ``Bes(nu, a)`` on ``m = 0, 1, ...`` has

    P(m) = (a/2)^(2m+nu) / (m! Gamma(m+nu+1) I_nu(a)),

mode ``floor((sqrt(a^2+nu^2) - nu)/2)``, mean ``(a/2) I_(nu+1)(a) / I_nu(a)`` and variance
``a^2/4 - nu mean - mean^2`` (from ``E[m (m+nu)] = a^2/4``). It is discrete log-concave:
``P(m+1)/P(m) = (a/2)^2 / ((m+1)(m+1+nu))`` decreases in ``m``.

The ``*_nb`` functions are scalar numba kernels, usable inside other ``prange`` kernels; the
sampler draws from a xoshiro state passed to it (one per chunk, see :mod:`lppf._numba`). The other
functions are vectorized numpy entry points that broadcast their arguments.

``log I_nu(a)`` in numba (``log_bessel_i_nb``) combines three methods, each used where it is
accurate to about 1e-13 relative:

* ``nu >= 20``: the uniform (Debye) expansion in ``1/nu``, DLMF 10.41.3, with ``U_0..U_10``;
* ``nu < 20`` and ``a >= max(30, nu^2)``: the large-argument (Hankel) expansion, DLMF 10.40.1;
* otherwise: the power series, summed outward from its largest term (the Bessel mode).

The sampler (``bessel_sample_nb``) is exact inversion from the mode outward; for small ``a``
it needs a handful of flops, for moderate ``a`` no normalizing constant at all (geometric
bounds on the tails with rejection), and ``log I_nu(a)`` only for wide distributions, where
the search takes O(sd) steps. ``bench/bench_foundation.py`` measures it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange
from numpy.polynomial import Polynomial

from lppf._numba import chunk_seeds, rng_state, uniform

_NU_DEBYE = 20.0  # Debye expansion from this order on
_A_HANKEL = 30.0  # Hankel expansion for a >= max(_A_HANKEL, nu^2) (nu < _NU_DEBYE)
_TOL = 2.0**-56  # relative size of the neglected series tail
_LOG_2PI = math.log(2.0 * math.pi)
_BOUND_FRAC = 0.05  # bounded sampler: each geometric tail bound is at most this share of the core
_VAR_BOUNDED = 64.0  # sampler: up to this (approximate) variance use the bounded method
_SAMPLE_CHUNK = 4096  # draws per reseeded chunk in bessel_sample


def _debye_polynomials(n_terms: int = 11) -> np.ndarray:
    """Coefficients (row k: ascending powers of p) of the Debye polynomials U_k(p), DLMF 10.41.10:
    ``U_(k+1) = p^2 (1-p^2) U_k' / 2 + (1/8) int_0^p (1 - 5 t^2) U_k(t) dt``, ``U_0 = 1``."""
    p2 = Polynomial([0.0, 0.0, 1.0])
    polys = [Polynomial([1.0])]
    for _ in range(n_terms - 1):
        u = polys[-1]
        integral = (Polynomial([1.0, 0.0, -5.0]) * u).integ() / 8
        polys.append(0.5 * p2 * (1 - p2) * u.deriv() + integral)
    out = np.zeros((n_terms, 3 * (n_terms - 1) + 1))
    for k, u in enumerate(polys):
        out[k, : len(u.coef)] = u.coef
    return out


_DEBYE_U = _debye_polynomials()


# ---------------------------------------------------------------------------------------------
# log I_nu(a) in numba


@njit(cache=True)
def _log_bessel_i_debye(nu, a):
    """Uniform expansion: I_nu(nu z) ~ e^(nu eta) / sqrt(2 pi nu sqrt(1+z^2)) sum_k U_k(p)/nu^k."""
    z = a / nu
    s = math.sqrt(1.0 + z * z)
    p = 1.0 / s
    eta = s + math.log(z / (1.0 + s))
    total = 0.0
    inv_nu_k = 1.0
    n_terms = _DEBYE_U.shape[0]
    for k in range(n_terms):
        u = 0.0
        for j in range(3 * k, -1, -1):  # Horner; U_k has degree 3k
            u = u * p + _DEBYE_U[k, j]
        total += u * inv_nu_k
        inv_nu_k /= nu
    return nu * eta - 0.5 * (_LOG_2PI + math.log(nu) + math.log(s)) + math.log(total)


@njit(cache=True)
def _log_bessel_i_hankel(nu, a):
    """Large argument: I_nu(a) ~ e^a / sqrt(2 pi a) sum_k (-1)^k a_k(nu) / a^k."""
    mu = 4.0 * nu * nu
    term = 1.0
    total = 1.0
    k = 1
    while k < 2.0 * a:
        term *= -(mu - (2.0 * k - 1.0) ** 2) / (8.0 * a * k)
        total += term
        if abs(term) < _TOL * abs(total):
            break
        k += 1
    return a - 0.5 * (_LOG_2PI + math.log(a)) + math.log(total)


@njit(cache=True)
def _series_sum(nu, q, mode):
    """Sum of the Bessel pmf terms P(m)/P(mode) over m >= 0, q = (a/2)^2."""
    total = 1.0
    term = 1.0
    m = mode
    while True:  # right of the mode the ratio falls below 1 and keeps falling
        r = q / ((m + 1.0) * (m + 1.0 + nu))
        term *= r
        total += term
        m += 1.0
        if r < 0.5 and term < _TOL * total:
            break
    term = 1.0
    m = mode
    while m > 0.0:
        term *= m * (m + nu) / q
        total += term
        m -= 1.0
        if term < _TOL * total:
            break
    return total


@njit(cache=True)
def _log_term(m, nu, a):
    """log of (a/2)^(2m+nu) / (m! Gamma(m+nu+1)), the unnormalized Bessel pmf."""
    return (2.0 * m + nu) * math.log(0.5 * a) - math.lgamma(m + 1.0) - math.lgamma(m + nu + 1.0)


@njit(cache=True)
def bessel_mode_nb(nu, a):
    """Mode of Bes(nu, a): floor((sqrt(a^2+nu^2) - nu)/2), computed without cancellation."""
    return math.floor(0.5 * a * a / (math.sqrt(a * a + nu * nu) + nu)) if a > 0.0 else 0.0


@njit(cache=True)
def log_bessel_i_nb(nu, a):
    """log I_nu(a) for real nu >= 0, a >= 0 (a == 0 gives 0 for nu == 0 and -inf otherwise)."""
    if a <= 0.0:
        return 0.0 if nu == 0.0 else -math.inf
    if nu >= _NU_DEBYE:
        return _log_bessel_i_debye(nu, a)
    if a >= max(_A_HANKEL, nu * nu):
        return _log_bessel_i_hankel(nu, a)
    mode = bessel_mode_nb(nu, a)
    return _log_term(mode, nu, a) + math.log(_series_sum(nu, 0.25 * a * a, mode))


@njit(cache=True)
def bessel_logpmf_nb(m, nu, a):
    """log P(m) of Bes(nu, a); -inf outside the support."""
    if m < 0:
        return -math.inf
    if a <= 0.0:
        return 0.0 if m == 0 else -math.inf
    return _log_term(float(m), nu, a) - log_bessel_i_nb(nu, a)


@njit(cache=True)
def bessel_mean_nb(nu, a):
    """Mean (a/2) I_(nu+1)(a) / I_nu(a) of Bes(nu, a)."""
    if a <= 0.0:
        return 0.0
    return 0.5 * a * math.exp(log_bessel_i_nb(nu + 1.0, a) - log_bessel_i_nb(nu, a))


# ---------------------------------------------------------------------------------------------
# exact sampler


@njit(cache=True)
def _chop_down(u, mode, p_mode, nu, q, lo, hi):
    """Inversion by sequential search in the order mode, mode+1, mode-1, mode+2, ... on [lo, hi].

    ``u`` is uniform on [0, mass) and ``p_mode`` the (possibly unnormalized) mass at the mode.
    Returns -1 if ``u`` exceeds the mass on [lo, hi] (or the terms underflow).
    """
    if u < p_mode:
        return int(mode)
    u -= p_mode
    right = p_mode
    left = p_mode
    kr = mode
    kl = mode
    while (kr < hi and right > 0.0) or (kl > lo and left > 0.0):
        if kr < hi:
            right *= q / ((kr + 1.0) * (kr + 1.0 + nu))
            kr += 1.0
            if u < right:
                return int(kr)
            u -= right
        if kl > lo:
            left *= kl * (kl + nu) / q
            kl -= 1.0
            if u < left:
                return int(kl)
            u -= left
    return -1


@njit(cache=True)
def _tail_right(u, k, t, nu, q):
    """Invert ``u`` over the terms k+1, k+2, ... (``t``: the term at k; ratios below 1 and
    falling); -1 as soon as ``u`` exceeds a geometric bound on the remaining mass."""
    while True:
        t *= q / ((k + 1.0) * (k + 1.0 + nu))
        k += 1.0
        if u < t:
            return int(k)
        u -= t
        r = q / ((k + 1.0) * (k + 1.0 + nu))
        if u >= t * r / (1.0 - r):
            return -1


@njit(cache=True)
def _tail_left(u, k, t, nu, q):
    """As :func:`_tail_right` over the terms k-1, k-2, ..., 0."""
    while k > 0.0:
        t *= k * (k + nu) / q
        k -= 1.0
        if u < t:
            return int(k)
        u -= t
        r = k * (k + nu) / q
        if u >= t * r / (1.0 - r):
            return -1
    return -1


@njit(cache=True)
def _sample_bounded(nu, q, mode, rs):
    """Exact rejection-inversion without the normalizing constant.

    Terms ``P(m)/P(mode)`` are summed outward from the mode, giving a core [lo, hi], until the
    geometric bound ``t r / (1 - r)`` on the rest of each tail (t: last term, r < 1: next pmf
    ratio, ratios fall further out) is at most ``_BOUND_FRAC`` of the core. A uniform on
    [0, core + bounds) is inverted over core and tails and redrawn if it falls past the true
    tail mass.
    """
    core = 1.0
    k = mode
    t = 1.0
    r = q / ((k + 1.0) * (k + 1.0 + nu))
    while t * r > _BOUND_FRAC * core * (1.0 - r):
        t *= r
        k += 1.0
        core += t
        r = q / ((k + 1.0) * (k + 1.0 + nu))
    hi, t_hi, bound_hi = k, t, t * r / (1.0 - r)
    k = mode
    t = 1.0
    r = k * (k + nu) / q
    while t * r > _BOUND_FRAC * core * (1.0 - r):
        t *= r
        k -= 1.0
        core += t
        r = k * (k + nu) / q
    lo, t_lo, bound_lo = k, t, t * r / (1.0 - r)
    total = core + bound_hi + bound_lo
    while True:
        u = uniform(rs) * total
        if u < core:
            m = _chop_down(u, mode, 1.0, nu, q, lo, hi)
        elif u < core + bound_hi:
            m = _tail_right(u - core, hi, t_hi, nu, q)
        else:
            m = _tail_left(u - core - bound_hi, lo, t_lo, nu, q)
        if m >= 0:
            return m


@njit(cache=True, inline="always")
def _sample_mode_zero(nu, q, rs):
    """Exact draw of Bes(nu, a) with mode 0 (q = (a/2)^2 < nu + 1) by rejection-inversion:
    ``u`` uniform on [0, S_up), ``S_up = 1 + t1 / (1 - r1)`` bounding ``sum_m P(m)/P(0)``
    (t1 = q / (nu + 1) the term at 1, r1 = q / (2 (nu + 2)) the next ratio; ratios fall).
    0 if ``u < 1``, else the walk m = 1, 2, ... of :func:`_tail_right`, redrawn when ``u``
    passes the bound on the remaining mass. Mostly 0 or 1 step: no normalizing series."""
    t1 = q / (nu + 1.0)
    s_up = 1.0 + t1 / (1.0 - 0.5 * q / (nu + 2.0))
    while True:
        u = uniform(rs) * s_up
        if u < 1.0:
            return 0
        m = _tail_right(u - 1.0, 0.0, 1.0, nu, q)
        if m >= 0:
            return m


@njit(cache=True, inline="always")
def bessel_sample_nb(nu, a, rs):
    """One exact draw from Bes(nu, a) (nu >= 0, a >= 0; a == 0 returns 0), from the
    uniforms of the xoshiro state ``rs`` (:func:`lppf._numba.rng_state`).

    Inversion by search from the mode outward with the pmf ratio
    ``P(m+1)/P(m) = (a/2)^2 / ((m+1)(m+1+nu))``, three ways:

    * mode 0 (``(a/2)^2 < nu + 1``): :func:`_sample_mode_zero`, no series sum;
    * wide distributions with a closed-form ``log I_nu(a)`` (Debye or Hankel expansion):
      ``P(mode)`` from it, chop-down search in O(sd) steps;
    * otherwise: :func:`_sample_bounded` (no normalizing constant needed).
    """
    if a <= 0.0:
        return 0
    q = 0.25 * a * a
    if q < nu + 1.0:
        return _sample_mode_zero(nu, q, rs)
    mode = bessel_mode_nb(nu, a)
    var_approx = 1.0 / (1.0 / (mode + 1.0) + 1.0 / (mode + 1.0 + nu))
    if var_approx <= _VAR_BOUNDED or not (nu >= _NU_DEBYE or a >= max(_A_HANKEL, nu * nu)):
        return _sample_bounded(nu, q, mode, rs)
    p_mode = math.exp(_log_term(mode, nu, a) - log_bessel_i_nb(nu, a))
    while True:
        u = uniform(rs)
        m = _chop_down(u, mode, p_mode, nu, q, 0.0, math.inf)
        if m >= 0:
            return m


@njit(cache=True, parallel=True)
def _bessel_sample_flat(nu, a, seeds, chunk):
    out = np.empty(nu.size, dtype=np.int64)
    for c in prange(seeds.size):
        rs = rng_state(seeds[c])  # per-chunk stream, see lppf._numba
        for i in range(c * chunk, min((c + 1) * chunk, nu.size)):
            out[i] = bessel_sample_nb(nu[i], a[i], rs)
    return out


@njit(cache=True)
def _log_bessel_i_flat(nu, a):
    out = np.empty(nu.size)
    for i in range(nu.size):
        out[i] = log_bessel_i_nb(nu[i], a[i])
    return out


# ---------------------------------------------------------------------------------------------
# vectorized entry points


def _check_params(nu: np.ndarray, a: np.ndarray) -> None:
    if not (np.all(np.isfinite(nu)) and np.all(np.isfinite(a))):
        raise ValueError("nu and a must be finite")
    if np.any(nu < 0) or np.any(a < 0):
        raise ValueError("nu and a must be non-negative")


def log_bessel_i(nu, a) -> np.ndarray:
    """log I_nu(a), broadcast over ``nu >= 0`` and ``a >= 0``.

    Uses ``log(scipy.special.ive(nu, a)) + a`` where ``ive`` is a normal float and the numba
    kernel (uniform/large-argument expansions, series) where it underflows.
    """
    from scipy import special  # here: a fit loads this module's kernels, not scipy.special

    nu, a = np.broadcast_arrays(np.asarray(nu, dtype=float), np.asarray(a, dtype=float))
    _check_params(nu, a)
    scaled = special.ive(nu, a)
    ok = scaled > 1e-290
    out = np.empty(nu.shape)
    out[ok] = np.log(scaled[ok]) + a[ok]
    bad = ~ok
    out[bad] = _log_bessel_i_flat(np.ascontiguousarray(nu[bad]), np.ascontiguousarray(a[bad]))
    return out[()]


def bessel_logpmf(m, nu, a) -> np.ndarray:
    """log P(m) of Bes(nu, a), broadcast over ``m``, ``nu`` and ``a`` (-inf off the support)."""
    from scipy import special  # here: a fit loads this module's kernels, not scipy.special

    m, nu, a = np.broadcast_arrays(np.asarray(m), np.asarray(nu, dtype=float),
                                   np.asarray(a, dtype=float))
    _check_params(nu, a)
    pos = a > 0
    log_i = log_bessel_i(nu, np.where(pos, a, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (special.xlogy(2.0 * m + nu, 0.5 * a) - special.gammaln(m + 1.0)
               - special.gammaln(m + nu + 1.0) - log_i)
    out = np.where(pos, out, np.where(m == 0, 0.0, -np.inf))
    return np.where(m >= 0, out, -np.inf)[()]


def bessel_mode(nu, a) -> np.ndarray:
    """Mode floor((sqrt(a^2+nu^2) - nu)/2) of Bes(nu, a), as int64."""
    nu, a = np.broadcast_arrays(np.asarray(nu, dtype=float), np.asarray(a, dtype=float))
    _check_params(nu, a)
    return np.floor(0.5 * a * a / np.maximum(np.hypot(a, nu) + nu, 1e-300)).astype(np.int64)[()]


def _bessel_ratio(nu: np.ndarray, a: np.ndarray) -> np.ndarray:
    """I_(nu+1)(a) / I_nu(a) for a > 0 (a ratio of ``ive`` values, or of log I where they
    underflow)."""
    from scipy import special  # here: a fit loads this module's kernels, not scipy.special

    num, den = special.ive(nu + 1.0, a), special.ive(nu, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = num / den
    bad = ~((num > 1e-290) & (den > 1e-290))
    if np.any(bad):
        ratio[bad] = np.exp(log_bessel_i(nu[bad] + 1.0, a[bad]) - log_bessel_i(nu[bad], a[bad]))
    return ratio


def bessel_mean(nu, a) -> np.ndarray:
    """Mean (a/2) I_(nu+1)(a) / I_nu(a) of Bes(nu, a)."""
    nu, a = np.broadcast_arrays(np.asarray(nu, dtype=float), np.asarray(a, dtype=float))
    _check_params(nu, a)
    pos = a > 0
    out = np.zeros(nu.shape)
    out[pos] = 0.5 * a[pos] * _bessel_ratio(nu[pos], a[pos])
    return out[()]


def bessel_var(nu, a) -> np.ndarray:
    """Variance a^2/4 - nu mean - mean^2 of Bes(nu, a)."""
    nu, a = np.broadcast_arrays(np.asarray(nu, dtype=float), np.asarray(a, dtype=float))
    mean = bessel_mean(nu, a)
    return np.maximum(0.25 * a * a - nu * mean - mean * mean, 0.0)[()]


def bessel_sample(nu, a, size=None, seed=None) -> np.ndarray:
    """Exact draws from Bes(nu, a) as int64, broadcasting ``nu``, ``a`` (and ``size``).

    ``seed``: int, ``numpy.random.Generator`` or None. Results depend on the seed only, not on
    the number of numba threads.
    """
    nu = np.asarray(nu, dtype=float)
    a = np.asarray(a, dtype=float)
    shape = np.broadcast_shapes(nu.shape, a.shape) if size is None else size
    nu, a = (np.ascontiguousarray(np.broadcast_to(x, shape)).ravel() for x in (nu, a))
    _check_params(nu, a)
    seeds = chunk_seeds(np.random.default_rng(seed), nu.size, _SAMPLE_CHUNK)
    return _bessel_sample_flat(nu, a, seeds, _SAMPLE_CHUNK).reshape(shape)[()]


# ---------------------------------------------------------------------------------------------
# Skellam


@njit(cache=True)
def skellam_logpmf_nb(k, mu1, mu2):
    """log P(k) of Skellam(mu1, mu2), the law of y1 - y2 with y_i ~ Pois(mu_i)."""
    if mu1 <= 0.0 or mu2 <= 0.0:
        if mu1 <= 0.0 and mu2 <= 0.0:
            return 0.0 if k == 0 else -math.inf
        rate, n = (mu1, k) if mu2 <= 0.0 else (mu2, -k)
        return n * math.log(rate) - rate - math.lgamma(n + 1.0) if n >= 0 else -math.inf
    x = 2.0 * math.sqrt(mu1 * mu2)
    return (-(mu1 + mu2) + 0.5 * k * math.log(mu1 / mu2)
            + log_bessel_i_nb(float(abs(k)), x))


def skellam_logpmf(k, mu1, mu2) -> np.ndarray:
    """log P(k) of Skellam(mu1, mu2), broadcast; mu1, mu2 >= 0 (one of them zero: Poisson).

    ``log P(k) = -(sqrt(mu1) - sqrt(mu2))^2 + (k/2) log(mu1/mu2) + log ive(|k|, 2 sqrt(mu1 mu2))``.
    """
    from scipy import special  # here: a fit loads this module's kernels, not scipy.special

    k, mu1, mu2 = np.broadcast_arrays(np.asarray(k), np.asarray(mu1, dtype=float),
                                      np.asarray(mu2, dtype=float))
    if np.any(mu1 < 0) or np.any(mu2 < 0) or not np.all(np.isfinite(mu1 + mu2)):
        raise ValueError("mu1 and mu2 must be finite and non-negative")
    both = (mu1 > 0) & (mu2 > 0)
    m1, m2 = np.where(both, mu1, 1.0), np.where(both, mu2, 1.0)
    x = 2.0 * np.sqrt(m1 * m2)
    out = (-((np.sqrt(m1) - np.sqrt(m2)) ** 2) + 0.5 * k * np.log(m1 / m2)
           + log_bessel_i(np.abs(k), x) - x)
    pois1 = special.xlogy(k, mu1) - mu1 - special.gammaln(np.abs(k) + 1.0)
    pois2 = special.xlogy(-k, mu2) - mu2 - special.gammaln(np.abs(k) + 1.0)
    out = np.where(both, out, np.where(mu2 == 0, np.where(k >= 0, pois1, -np.inf),
                                       np.where(k <= 0, pois2, -np.inf)))
    return out[()]
