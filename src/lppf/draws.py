"""Gamma, binomial and multinomial draws for numba kernels, on the chunk-local xoshiro256+
stream of :mod:`lppf._numba` (:func:`lppf._numba.rng_state`, :func:`lppf._numba.uniform`).

:func:`gamma_draws` draws gammas (Marsaglia and Tsang on polar-method normals), in parallel
over fixed chunks where numpy's generator would take one core, and :func:`gamma_posterior`
the factors of a sweep with them; the scalar draws are ``inline="always"`` for the per-cell
kernels of the samplers.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from lppf._numba import at, at_most, chunk_seeds, rng_state, uniform

GAMMA_CHUNK = 4096  # entries per reseeded chunk of gamma draws


@njit(cache=True, inline="always")
def _normal(rs, spare):
    """N(0, 1) by Marsaglia's polar method from the uniforms of ``rs``; each accepted pair
    gives two draws, the second kept in ``spare`` (1,) (NaN: none kept)."""
    if not math.isnan(spare[0]):
        x, spare[0] = spare[0], math.nan
        return x
    while True:
        x = 2.0 * uniform(rs) - 1.0
        y = 2.0 * uniform(rs) - 1.0
        s = x * x + y * y
        if 0.0 < s < 1.0:
            f = math.sqrt(-2.0 * math.log(s) / s)
            spare[0] = y * f
            return x * f


@njit(cache=True, inline="always")
def standard_gamma(a, rs, spare):
    """Gamma(a, 1), a > 0: Marsaglia and Tsang (2000) for shape a, or for a < 1 for shape
    a + 1 times U^(1/a) (U on (0, 1])."""
    b = a + 1.0 if a < 1.0 else a
    d = b - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = _normal(rs, spare)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(rs)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2 or math.log(u) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            break
    if a < 1.0:
        return d * v * math.exp(math.log(1.0 - uniform(rs)) / a)
    return d * v


@njit(cache=True, parallel=True, nogil=True)
def _gamma_chunks(shape, scale, seeds, out):
    n = len(out)
    for c in prange(len(seeds)):
        rs = rng_state(seeds[c])
        spare = np.full(1, math.nan)
        for i in range(c * GAMMA_CHUNK, min((c + 1) * GAMMA_CHUNK, n)):
            out[i] = standard_gamma(shape[i], rs, spare) * scale[i]


def gamma_draws(shape: np.ndarray, scale: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Independent Gamma(shape, scale) draws (shape > 0, ``scale`` broadcast to the shape of
    ``shape``), in parallel over fixed chunks of ``GAMMA_CHUNK`` entries each seeded from
    ``rng``: the same draws for any thread count."""
    shape = np.asarray(shape, dtype=np.float64)
    flat_shape = np.ascontiguousarray(shape).ravel()
    flat_scale = np.ascontiguousarray(np.broadcast_to(scale, shape.shape), np.float64).ravel()
    seeds = chunk_seeds(rng, shape.size, GAMMA_CHUNK)
    out = np.empty(shape.size)
    with at_most(len(seeds)):
        _gamma_chunks(flat_shape, flat_scale, seeds, out)
    return out.reshape(shape.shape)


@njit(cache=True, parallel=True, nogil=True)
def _posterior_chunks(counts, a0, rate, b0, floor, seeds, out):
    n_cols = out.shape[1]
    for c in prange(len(seeds)):
        rs = rng_state(seeds[c])
        spare = np.full(1, math.nan)
        for f in range(c * GAMMA_CHUNK, min((c + 1) * GAMMA_CHUNK, out.size)):
            i, j = f // n_cols, f % n_cols
            scale = 1.0 / (b0 + at(rate, i, j))
            out[i, j] = max(standard_gamma(a0 + counts[i, j], rs, spare) * scale, floor)


def gamma_posterior(counts: np.ndarray, a0: float, rate: np.ndarray, b0: float, floor: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Draws of Gamma(shape a0 + counts, rate b0 + rate) floored at ``floor``, ``counts``
    (n, m) integers and ``rate`` (n, m), (1, m) or (n, 1): the numbers of
    ``np.maximum(gamma_draws(a0 + counts, 1 / (b0 + rate), rng), floor)`` to the bit, without
    its temporaries (they cost more than the draws of a small fit's sweep)."""
    counts = np.ascontiguousarray(counts)  # one compiled layout
    seeds = chunk_seeds(rng, counts.size, GAMMA_CHUNK)
    out = np.empty(counts.shape)
    with at_most(len(seeds)):
        _posterior_chunks(counts, float(a0), rate, float(b0), float(floor), seeds, out)
    return out


_BINV_MAX = 30.0  # n min(p, 1 - p) up to this: inversion; above: BTPE
_RECIP = 1.0 / np.maximum(np.arange(128), 1)  # 1 / x for the inversion walk (x <= 30 + 10 sqrt(31))


@njit(cache=True, inline="always")
def binomial(n, p, rs):
    """Binomial(n, p) draw (n >= 0 integer, p in [0, 1]) from the uniforms of the xoshiro
    state ``rs``, exact for any n: with r = min(p, 1 - p), inversion (BINV) when
    n r <= 30, else :func:`_btpe`; a draw for r is reflected to n - x when p > 0.5. The
    algorithms and their switch are numpy's (Kachitvichyanukul and Schmeiser 1988)."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    r = min(p, 1.0 - p)
    x = _binv(n, r, rs) if n * r <= _BINV_MAX else _btpe(n, r, rs)
    return n - x if p > 0.5 else x


@njit(cache=True, inline="always")
def _binv(n, r, rs):
    """Bin(n, r) by inversion from x = 0 (n r <= 30, r <= 0.5): pmf ratios
    f(x) / f(x - 1) = (n - x + 1) r / (x q); a walk past n r + 10 sd starts over."""
    q = 1.0 - r
    qn = math.exp(n * math.log1p(-r))
    s = r / q
    bound = min(n, n * r + 10.0 * math.sqrt(n * r * q + 1.0))
    x, px, u = 0, qn, uniform(rs)
    while u > px:
        x += 1
        if x > bound:
            x, px, u = 0, qn, uniform(rs)
        else:
            u -= px
            px *= (n - x + 1) * s * _RECIP[x]
    return x


@njit(cache=True, inline="always")
def _stirling_tail(x):
    """Stirling series remainder of log x! (as in BTPE's final test), x >= 1."""
    x2 = x * x
    return (13860.0 - (462.0 - (132.0 - (99.0 - 140.0 / x2) / x2) / x2) / x2) / x / 166320.0


@njit(cache=True)
def _btpe(n, r, rs):
    """Bin(n, r), n r > 30, r <= 0.5, by BTPE (Kachitvichyanukul and Schmeiser 1988):
    a triangle, two parallelograms and two exponential tails enclose the pmf around its
    mode m; a candidate is accepted by squeezes or, failing them, the exact pmf ratio
    (recursive near m, Stirling-bounded further out). As numpy's random_binomial_btpe."""
    q = 1.0 - r
    fm = n * r + r
    m = math.floor(fm)
    nrq = n * r * q
    p1 = math.floor(2.195 * math.sqrt(nrq) - 4.6 * q) + 0.5
    xm = m + 0.5
    xl, xr = xm - p1, xm + p1
    c = 0.134 + 20.5 / (15.3 + m)
    a = (fm - xl) / (fm - xl * r)
    laml = a * (1.0 + a / 2.0)
    a = (xr - fm) / (xr * q)
    lamr = a * (1.0 + a / 2.0)
    p2 = p1 * (1.0 + 2.0 * c)
    p3 = p2 + c / laml
    p4 = p3 + c / lamr
    while True:
        u = uniform(rs) * p4
        v = uniform(rs)
        if u <= p1:  # triangle: accepted at once
            return math.floor(xm - p1 * v + u)
        if u <= p2:  # parallelograms
            x = xl + (u - p1) / c
            v = v * c + 1.0 - abs(m - x + 0.5) / p1
            if v > 1.0:
                continue
            y = math.floor(x)
        elif u <= p3:  # left exponential tail
            y = math.floor(xl + math.log(v) / laml)
            if y < 0 or v == 0.0:
                continue
            v = v * (u - p2) * laml
        else:  # right exponential tail
            y = math.floor(xr - math.log(v) / lamr)
            if y > n or v == 0.0:
                continue
            v = v * (u - p3) * lamr
        k = abs(y - m)
        if k <= 20 or k >= nrq / 2.0 - 1:  # f(y) / f(m) by recursion
            s = r / q
            a = s * (n + 1)
            f = 1.0
            if m < y:
                for i in range(m + 1, y + 1):
                    f *= a / i - s
            elif m > y:
                for i in range(y + 1, m + 1):
                    f /= a / i - s
            if v <= f:
                return y
            continue
        rho = (k / nrq) * ((k * (k / 3.0 + 0.625) + 0.16666666666666666) / nrq + 0.5)
        t = -k * k / (2.0 * nrq)
        A = math.log(v)
        if A < t - rho:
            return y
        if A > t + rho:
            continue
        x1, f1, z, w = y + 1.0, m + 1.0, n + 1.0 - m, n - y + 1.0
        bound = (xm * math.log(f1 / x1) + (n - m + 0.5) * math.log(z / w)
                 + (y - m) * math.log(w * r / (x1 * q)) + _stirling_tail(f1)
                 + _stirling_tail(z) - _stirling_tail(x1) - _stirling_tail(w))
        if A <= bound:
            return y


@njit(cache=True, inline="always")
def multinomial(n, w, out, suffix, rs):
    """Draw ``out ~ Mult(n, w / sum(w))`` (w >= 0, length K) by sequential conditional
    binomials (:func:`binomial` on the xoshiro state ``rs``): O(K) work whatever n.
    ``suffix`` (K,) float is scratch for the tail sums of ``w``."""
    K = w.shape[0]
    tail = 0.0
    for k in range(K):
        out[k] = 0
    rem = n
    for k in range(K - 1, -1, -1):
        tail += w[k]
        suffix[k] = tail
    for k in range(K - 1):
        if rem == 0:
            return
        p = w[k] / suffix[k] if suffix[k] > 0.0 else 0.0
        if p >= 1.0:
            out[k] = rem
            return
        if p > 0.0:
            out[k] = binomial(rem, p, rs)
            rem -= out[k]
    out[K - 1] = rem
