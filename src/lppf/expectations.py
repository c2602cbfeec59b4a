"""Expectations shared by the EM start and CAVI: gamma moments and per-cell local updates.

Local updates work on the dense matrix of cells; kernels take ``alpha`` already broadcast to
(n_rows, n_cols) (a zero-stride view); ``alpha = 0`` marks a noiseless cell (y = y~).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from lppf.conditional import TINY_RATE as TINY
from lppf.conditional import mean_log_z, mean_log_z_noisy

PARALLEL_MIN_CELLS = 50_000  # smaller problems run serially (thread start-up dominates)
ROWS_PER_CHUNK = 8


class Moments(NamedTuple):
    """E[x], G[x] = exp(E[ln x]), Var[x] and E[ln x] of a factor, elementwise."""

    mean: np.ndarray
    gmean: np.ndarray
    var: np.ndarray
    elog: np.ndarray


def gamma_moments(shape: np.ndarray, rate: np.ndarray) -> Moments:
    """Moments of Gamma(shape, rate): E = s/r, E[ln x] = digamma(s) - ln r, Var = s/r^2."""
    from scipy import special  # here: MCMC starts import this module's kernels only

    elog = special.digamma(shape) - np.log(rate)
    return Moments(shape / rate, np.exp(elog), shape / rate**2, elog)


def point_moments(value: np.ndarray) -> Moments:
    """Moments of a point mass (a factor held fixed)."""
    value = np.maximum(np.asarray(value, dtype=np.float64), TINY)
    return Moments(value, value, np.zeros_like(value), np.log(value))


def gamma_elbo(shape: np.ndarray, rate: np.ndarray, a0: float, b0: float, m: Moments) -> float:
    """Sum over entries of E_q[ln Gamma(x; a0, b0)] + H[q], q = Gamma(shape, rate)."""
    from scipy import special  # here: MCMC starts import this module's kernels only

    prior = a0 * math.log(b0) - special.gammaln(a0) + (a0 - 1.0) * m.elog - b0 * m.mean
    entropy = special.gammaln(shape) - (shape - 1.0) * special.digamma(shape) - np.log(rate) + shape
    return float(np.sum(prior + entropy))


@njit(cache=True, inline="always")
def digamma_nb(x):
    """digamma(x) for x > 0: the recurrence digamma(x) = digamma(x + 1) - 1 / x up to x >= 10,
    its terms summed as one fraction p / q (one division), then the asymptotic series."""
    result = 0.0
    if x < 1e-8:  # keeps q away from underflow
        result = -1.0 / x
        x += 1.0
    p, q = 0.0, 1.0
    while x < 10.0:
        p = p * x + q  # p / q + 1 / x
        q *= x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
    return result - p / q + math.log(x) - 0.5 / x - series


# exp(digamma(n)) = exp(H_(n-1) - Euler's gamma) at n = 1 .. 1024
_EXP_DIGAMMA_INT = np.exp(np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1.0, 1024.0))))
                          - np.euler_gamma)


@njit(cache=True, inline="always")
def exp_digamma(x):
    """exp(digamma(x)) = G[z] / scale of z ~ Gamma(x, scale), from a table at the integers
    up to 1024 (the shape 1 + E[g-] of the private local step), else :func:`digamma_nb`."""
    n = int(x)
    if n == x and 1 <= n <= len(_EXP_DIGAMMA_INT):
        return _EXP_DIGAMMA_INT[n - 1]
    return math.exp(digamma_nb(x))


# E[y] and ln Z of the optimal q(y) ∝ S^y / y! alpha^|y~ - y|: the collapsed conditional of
# the true count with rate S = G[mu] (the geometric mean rate), collapsed_cell(t, alpha, S)
collapsed_cell = mean_log_z


@njit(cache=True)
def _collapsed_rows(Y, alpha, S, mask, Ey, R, row_log, start, stop):
    a_last, inv_a, log_a, log_noise = -1.0, 0.0, 0.0, 0.0  # of the last noise level seen
    for d in range(start, stop):
        acc = 0.0
        for v in range(Y.shape[1]):
            if mask[d, v]:
                continue
            a = alpha[d, v]
            s = max(S[d, v], TINY)
            if a == 0.0:
                Ey[d, v], log_z = mean_log_z(Y[d, v], a, s)
            else:
                if a != a_last:
                    a_last, inv_a, log_a = a, 1.0 / a, math.log(a)
                    log_noise = math.log1p(-a) - math.log1p(a)
                Ey[d, v], log_z = mean_log_z_noisy(Y[d, v], a, s, inv_a, log_a)
                log_z += log_noise
            R[d, v] = Ey[d, v] / s
            acc += log_z
        row_log[d] = acc


@njit(parallel=True, cache=True)
def _collapsed_chunks(Y, alpha, S, mask, Ey, R, row_log):
    n_rows = Y.shape[0]
    for c in prange((n_rows + ROWS_PER_CHUNK - 1) // ROWS_PER_CHUNK):
        stop = min((c + 1) * ROWS_PER_CHUNK, n_rows)
        _collapsed_rows(Y, alpha, S, mask, Ey, R, row_log, c * ROWS_PER_CHUNK, stop)


def collapsed_refresh(Y, alpha, S, mask) -> tuple[np.ndarray, np.ndarray, float]:
    """Optimal q(y_dv) ∝ S^y / y! alpha^|y~ - y| for every unmasked cell (S floored at TINY).

    Returns E[y] and R = E[y] / S, both (n_rows, n_cols) and zero where masked, and the sum
    over unmasked cells of ln Z + ln((1-alpha)/(1+alpha)): the data part of the ELBO when
    the allocation is optimal.
    """
    Ey = np.zeros(Y.shape)
    R = np.zeros(Y.shape)
    row_log = np.zeros(Y.shape[0])
    if Y.size >= PARALLEL_MIN_CELLS:
        _collapsed_chunks(Y, alpha, S, mask, Ey, R, row_log)
    else:
        _collapsed_rows(Y, alpha, S, mask, Ey, R, row_log, 0, Y.shape[0])
    return Ey, R, float(row_log.sum())


def collapsed_local(Y, alpha, S, mask) -> tuple[np.ndarray, float]:
    """E[y] and the ELBO's data part of :func:`collapsed_refresh`."""
    Ey, _, total = collapsed_refresh(Y, alpha, S, mask)
    return Ey, total


@njit(cache=True)
def bessel_mode_sq(nu, half_a_sq):
    """Mode of Bes(nu, a) from (a/2)^2: floor((sqrt(a^2 + nu^2) - nu) / 2), stably."""
    if half_a_sq <= 0.0:
        return 0.0
    return math.floor(2.0 * half_a_sq / (math.sqrt(4.0 * half_a_sq + nu * nu) + nu))


@njit(cache=True)
def _private_rows(Y, alpha, S, Emu, Vmu, shape_plus, shape_minus, mask, R, Ey, start, stop):
    for d in range(start, stop):
        for v in range(Y.shape[1]):
            if mask[d, v]:
                continue
            t = Y[d, v]
            a = alpha[d, v]
            s = max(S[d, v], TINY)
            if a == 0.0:
                R[d, v] = t / s
                Ey[d, v] = t
                continue
            g_plus = a * exp_digamma(shape_plus[d, v])
            g_minus = a * exp_digamma(shape_minus[d, v])
            mean = a * shape_plus[d, v] + Emu[d, v]
            var = a * a * shape_plus[d, v] + Vmu[d, v]
            g_sum = mean * math.exp(-var / (2.0 * mean * mean))
            m = bessel_mode_sq(abs(t), g_minus * g_sum)
            y_plus = m if t <= 0 else m + t
            e_g_minus = m - t if t <= 0 else m
            R[d, v] = y_plus / (g_plus + s)
            Ey[d, v] = R[d, v] * s
            shape_plus[d, v] = 1.0 + R[d, v] * g_plus
            shape_minus[d, v] = 1.0 + e_g_minus


@njit(parallel=True, cache=True)
def _private_chunks(Y, alpha, S, Emu, Vmu, shape_plus, shape_minus, mask, R, Ey):
    n_rows = Y.shape[0]
    for c in prange((n_rows + ROWS_PER_CHUNK - 1) // ROWS_PER_CHUNK):
        stop = min((c + 1) * ROWS_PER_CHUNK, n_rows)
        _private_rows(Y, alpha, S, Emu, Vmu, shape_plus, shape_minus, mask, R, Ey,
                      c * ROWS_PER_CHUNK, stop)


def private_local(Y, alpha, S, Emu, Vmu, shape_plus, shape_minus, mask):
    """One local step of the paper's private CAVI, every unmasked cell.

    q(lambda+-) = Gamma(shape+-, rate 1/alpha). m = mode of Bes(|y~|, 2 sqrt(G[lam-] G[lam+ + mu]))
    with G[lam+ + mu] by the delta method; E[y+], E[g-] from m; (g+, y_1..y_K) multinomial with
    weights (G[lam+], G[mu_1], ..., G[mu_K]) and S = sum_k G[mu_k]. Updates the lambda shapes
    in place (1 + E[g+-]) and returns R = E[y+] / (G[lam+] + S) and E[y] = R S.
    """
    R = np.zeros(Y.shape)
    Ey = np.zeros(Y.shape)
    args = (Y, alpha, S, Emu, Vmu, shape_plus, shape_minus, mask, R, Ey)
    if Y.size >= PARALLEL_MIN_CELLS:
        _private_chunks(*args)
    else:
        _private_rows(*args, 0, Y.shape[0])
    return R, Ey


@njit(cache=True)
def _cell_dot_range(A, B, rows, cols, out, start, stop):
    for n in range(start, stop):
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[rows[n], k] * B[cols[n], k]
        out[n] = acc


@njit(parallel=True, cache=True)
def _cell_dot_chunks(A, B, rows, cols, out):
    chunk = 4096
    for c in prange((rows.size + chunk - 1) // chunk):
        _cell_dot_range(A, B, rows, cols, out, c * chunk, min((c + 1) * chunk, rows.size))


def cell_dot(A, B, rows, cols) -> np.ndarray:
    """out[n] = sum_k A[rows[n], k] B[cols[n], k]: the rate sum at a list of cells."""
    out = np.empty(rows.size)
    if rows.size * A.shape[1] >= PARALLEL_MIN_CELLS:
        _cell_dot_chunks(A, B, rows, cols, out)
    else:
        _cell_dot_range(A, B, rows, cols, out, 0, rows.size)
    return out
