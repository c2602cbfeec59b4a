"""Gibbs updates of the latent true counts behind privatized counts.

Both kernels update every unmasked cell of ``Y_out`` in place, given the privatized counts
``Ytil`` (y~), the noise level ``alpha`` (2-d, broadcastable: (1, 1), (n_rows, 1) or
(n_rows, n_cols)), the dense Poisson rate ``mu`` and the mask (True = held out, untouched).
Cells with ``alpha = 0`` are noiseless: y = y~. Work runs in parallel over fixed chunks of
``lppf._numba.CHUNK`` rows; chunk ``c`` seeds its generator (the xoshiro state of
``lppf._numba.rng_state``) with ``seeds[c]`` (see ``lppf._numba.chunk_seeds``), so results
do not depend on the number of threads.

* :func:`sample_counts_private`: the Bessel augmentation of Schein et al. (ICML 2019),
  with auxiliary rates ``lam_plus``, ``lam_minus`` (float64, shape of Y) updated in place.
* :func:`sample_counts_collapsed`: the exact conditional with lambda and g integrated out,
  ``P(y | y~, mu) ∝ mu^y / y! * alpha^|y~ - y|`` on y >= 0 (docs/method.md, "Methods").
* :func:`sample_counts_noise`: the same for the discrete Gaussian and Skellam noise, p of
  :mod:`lppf.noise`, ``P(y | y~, mu) ∝ mu^y / y! p(y~ - y)`` (:mod:`lppf.noise_conditional`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from lppf import conditional, noise_conditional
from lppf._numba import CHUNK, at, rng_state, uniform
from lppf.distributions import bessel_sample_nb
from lppf.draws import binomial, standard_gamma

_SMALL_GAMMA = 13  # integer gamma shapes below this are drawn as sums of exponentials
_SMALL_BINOMIAL = 16  # binomial sizes below this are drawn as sums of Bernoulli draws

LANES = conditional.LANES


@njit(cache=True, inline="always")
def _gamma_int(shape, scale, rs, spare):
    """Gamma(shape, scale) for a positive integer shape from the uniforms of the xoshiro
    state ``rs``: a sum of exponentials when small, else Marsaglia and Tsang
    (:func:`lppf.draws.standard_gamma`, ``spare`` its (1,) spare normal); the two cost
    the same near shape 13."""
    if shape < _SMALL_GAMMA:
        prod = 1.0
        for _ in range(shape):
            prod *= 1.0 - uniform(rs)
        return -math.log(prod) * scale
    return standard_gamma(float(shape), rs, spare) * scale


@njit(cache=True, inline="always")
def _binomial(n, p, rs):
    """Binom(n, p): a sum of Bernoulli draws (uniforms of ``rs``) when n is small, else
    :func:`lppf.draws.binomial`."""
    if n >= _SMALL_BINOMIAL:
        return binomial(n, p, rs)
    k = 0
    for _ in range(n):
        k += uniform(rs) < p
    return k


@njit(cache=True, inline="always")
def _private_cell(t, mu, a, lp, lm, rs, spare):
    """One augmented update of a noisy cell; returns (y, new lam+, new lam-)."""
    m = bessel_sample_nb(abs(t), 2.0 * math.sqrt((mu + lp) * lm), rs)
    if t <= 0:
        y_plus = m
        g_minus = m - t
    else:
        y_plus = m + t
        g_minus = m
    y = _binomial(y_plus, mu / (mu + lp), rs)
    g_plus = y_plus - y
    return y, _gamma_int(1 + g_plus, a, rs, spare), _gamma_int(1 + g_minus, a, rs, spare)


@njit(cache=True, parallel=True, nogil=True)
def sample_counts_private(Ytil, alpha, mu, mask, lam_plus, lam_minus, Y_out, seeds):
    """Bessel-augmented update (Schein et al. 2019) of Y_out, lam_plus, lam_minus in place.

    Per unmasked noisy cell: m ~ Bes(|y~|, 2 sqrt((mu + lam+) lam-)); (y+, g-) = (m, m - y~)
    if y~ <= 0 else (m + y~, m); y ~ Binom(y+, mu / (mu + lam+)); g+ = y+ - y;
    lam+- ~ Gamma(1 + g+-, scale alpha)."""
    n_rows, n_cols = Ytil.shape
    for c in prange(len(seeds)):
        rs, spare = rng_state(seeds[c]), np.full(1, math.nan)
        for i in range(c * CHUNK, min((c + 1) * CHUNK, n_rows)):
            for j in range(n_cols):
                if mask[i, j]:
                    continue
                a = at(alpha, i, j)
                if a == 0.0:
                    Y_out[i, j] = Ytil[i, j]
                    continue
                y, lp, lm = _private_cell(Ytil[i, j], mu[i, j], a,
                                          lam_plus[i, j], lam_minus[i, j], rs, spare)
                Y_out[i, j] = y
                lam_plus[i, j] = lp
                lam_minus[i, j] = lm


@njit(cache=True, parallel=True, nogil=True)
def sample_counts_collapsed(Ytil, alpha, mu, mask, Y_out, seeds):
    """Exact update y ~ P(y | y~, mu) ∝ mu^y / y! alpha^|y~ - y|, in place. The cells of a
    row that fit :func:`lppf.conditional.fits_lanes` (most of them: small rates and counts)
    are gathered and drawn ``LANES`` at a time by :func:`lppf.conditional.sample_lanes`, the
    others one at a time by :func:`lppf.conditional.sample` (``sample_cell``, compiled
    once)."""
    n_rows, n_cols = Ytil.shape
    for c in prange(len(seeds)):
        rs = rng_state(seeds[c])
        core = np.empty(conditional.CORE_CELLS)
        t_L, j_L = np.zeros(LANES, np.int64), np.zeros(LANES, np.int64)
        y_L = np.zeros(LANES, np.int64)
        par, work = np.full((4, LANES), 0.5), np.empty((2, LANES))
        cum = np.empty((conditional.LANE_CELLS, LANES))
        for i in range(c * CHUNK, min((c + 1) * CHUNK, n_rows)):
            n = 0
            for j in range(n_cols + 1):  # a full batch is drawn before the next cell
                if n == LANES or (j == n_cols and n > 0):
                    conditional.sample_lanes(n, t_L, par, rs, core, cum, work, y_L)
                    for l in range(n):
                        Y_out[i, j_L[l]] = y_L[l]
                    n = 0
                if j == n_cols:
                    break
                if mask[i, j]:
                    continue
                a = at(alpha, i, j)
                t = Ytil[i, j]
                if a == 0.0:
                    Y_out[i, j] = t
                    continue
                m = mu[i, j]
                inv_a = 1.0 / a
                if not conditional.fits_lanes(t, m * inv_a, m * a, conditional.LANE_CELLS):
                    Y_out[i, j] = conditional.sample_cell(t, m, a, inv_a, rs, core)
                    continue
                t_L[n], j_L[n] = t, j
                par[0, n], par[1, n], par[2, n], par[3, n] = m * inv_a, m * a, m, a
                n += 1


@njit(cache=True, parallel=True, nogil=True)
def sample_counts_noise(Ytil, kind, code, par, var, lr, lc, mu, mask, Y_out, seeds):
    """Exact update y ~ P(y | y~, mu) ∝ mu^y / y! p(y~ - y) under the noise of
    :class:`lppf.noise_conditional.Tables` (``kind``, ``code``, ``par``, ``var``, ``lr``,
    ``lc``; the discrete Gaussian or Skellam noise), in place; noiseless cells (code -1):
    y = y~. As in
    :func:`sample_counts_collapsed`, the cells of a row that fit
    :func:`lppf.noise_conditional.fits_lanes` are drawn ``LANES`` at a time
    (:func:`lppf.noise_conditional.sample_lanes`), the others one at a time
    (:func:`lppf.noise_conditional.sample`)."""
    n_rows, n_cols = Ytil.shape
    nc = noise_conditional
    nr = lr.reshape(-1)
    half = lr.shape[2] // 2
    for c in prange(len(seeds)):
        rs = rng_state(seeds[c])
        up, down = np.empty(nc.WALK_CELLS), np.empty(nc.WALK_CELLS)
        t_L, j_L = np.zeros(LANES, np.int64), np.zeros(LANES, np.int64)
        base_L, p_L = np.zeros(LANES, np.int64), np.zeros(LANES, np.int64)
        y_L, mu_L = np.zeros(LANES, np.int64), np.full(LANES, 0.5)
        base_L[:] = nc.lane_base(0, 0, lr) if half > 0 else 0
        work, cum = np.empty((2, LANES)), np.empty((nc.LANE_CELLS, LANES))
        for i in range(c * CHUNK, min((c + 1) * CHUNK, n_rows)):
            n = 0
            for j in range(n_cols + 1):  # a full batch is drawn before the next cell
                if n == LANES or (j == n_cols and n > 0):
                    nc.sample_lanes(n, t_L, mu_L, base_L, p_L, kind, par, var, lr, nr, rs, up,
                                    down, cum, work, y_L)
                    for l in range(n):
                        Y_out[i, j_L[l]] = y_L[l]
                    n = 0
                if j == n_cols:
                    break
                if mask[i, j]:
                    continue
                p = at(code, i, j)
                t = Ytil[i, j]
                if p < 0:
                    Y_out[i, j] = t
                    continue
                m = mu[i, j]
                if half == 0 or not nc.fits_lanes(t, m, lc, p, half, nc.LANE_CELLS):
                    Y_out[i, j] = nc.sample(t, m, kind, par[p], var[p], lr, p, rs, up, down)
                    continue
                t_L[n], j_L[n], mu_L[n], p_L[n] = t, j, m, p
                base_L[n] = nc.lane_base(t, p, lr)
                n += 1


def sample_counts_tables(Ytil, noise, mu, mask, Y_out, seeds) -> None:
    """:func:`sample_counts_noise` with the noise given as a
    :class:`lppf.noise_conditional.Tables`."""
    sample_counts_noise(Ytil, noise.kind, noise.code, noise.par, noise.var, noise.lr,
                        noise.lc, mu, mask, Y_out, seeds)
