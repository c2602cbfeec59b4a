"""Expectations CAVI needs: gamma moments and the per-cell local updates (numba kernels).

Local updates work on the dense matrix of cells; kernels take ``alpha`` already broadcast to
(n_rows, n_cols) (a zero-stride view); ``alpha = 0`` marks a noiseless cell (y = y~).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange
from scipy import special

TINY = 1e-300  # floor for rates that enter a logarithm
_EPS = 1e-16
_FPMIN = 1e-300
_MAXIT = 1_000_000
PARALLEL_MIN_CELLS = 50_000  # smaller problems run serially (thread start-up dominates)
ROWS_PER_CHUNK = 8
SUM_MAX_MEAN = 50.0  # q(y) wider than this Poisson mean: use cdfs instead of summation


class Moments(NamedTuple):
    """E[x], G[x] = exp(E[ln x]), Var[x] and E[ln x] of a factor, elementwise."""

    mean: np.ndarray
    gmean: np.ndarray
    var: np.ndarray
    elog: np.ndarray


def gamma_moments(shape: np.ndarray, rate: np.ndarray) -> Moments:
    """Moments of Gamma(shape, rate): E = s/r, E[ln x] = digamma(s) - ln r, Var = s/r^2."""
    elog = special.digamma(shape) - np.log(rate)
    return Moments(shape / rate, np.exp(elog), shape / rate**2, elog)


def point_moments(value: np.ndarray) -> Moments:
    """Moments of a point mass (a factor held fixed)."""
    value = np.maximum(np.asarray(value, dtype=np.float64), TINY)
    return Moments(value, value, np.zeros_like(value), np.log(value))


def gamma_elbo(shape: np.ndarray, rate: np.ndarray, a0: float, b0: float, m: Moments) -> float:
    """Sum over entries of E_q[ln Gamma(x; a0, b0)] + H[q], q = Gamma(shape, rate)."""
    prior = a0 * math.log(b0) - special.gammaln(a0) + (a0 - 1.0) * m.elog - b0 * m.mean
    entropy = special.gammaln(shape) - (shape - 1.0) * special.digamma(shape) - np.log(rate) + shape
    return float(np.sum(prior + entropy))


@njit(cache=True)
def digamma_nb(x):
    """digamma(x) for x > 0: recurrence up to x >= 10, then the asymptotic series."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
    return result + math.log(x) - 0.5 / x - series


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
def _collapsed_cell_tails(t, alpha, s):
    """collapsed_cell via Poisson cdfs (wide distributions): y <= t has mass
    alpha^t e^(s/alpha) F(t; s/alpha), y > t has alpha^(-t) e^(s alpha) SF(t; s alpha)."""
    lam_up = s * alpha
    log_alpha = math.log(alpha)
    if t < 0:
        return lam_up, -t * log_alpha + lam_up
    lam_low = s / alpha
    lgam = math.lgamma(t + 1.0)
    lq_low = log_gamma_pq_scaled(t + 1.0, lam_low)[1]
    lp_up = log_gamma_pq_scaled(t + 1.0, lam_up)[0]
    log_low = t * log_alpha + lq_low
    log_up = -t * log_alpha + lp_up
    log_z = _logaddexp(log_low, log_up)
    # truncated means: lam F(t-1)/F(t) = lam (1 - p(t)/F(t));
    # lam SF(t-1)/SF(t) = lam (1 + p(t)/SF(t))
    ratio = math.exp(t * math.log(lam_low) - lgam - lq_low)
    if ratio < 0.5 or t == 0:
        mean_low = lam_low * (1.0 - ratio)
    else:  # far left tail: 1 - ratio cancels, take F(t - 1) directly
        mean_low = lam_low * math.exp(log_gamma_pq_scaled(float(t), lam_low)[1] - lq_low)
    mean_up = lam_up * (1.0 + math.exp(t * math.log(lam_up) - lgam - lp_up))
    w_low = math.exp(log_low - log_z)
    return w_low * mean_low + (1.0 - w_low) * mean_up, log_z


@njit(cache=True)
def _ratio(t, alpha, s, y):
    """w(y + 1) / w(y) for w(y) = s^y / y! alpha^|t - y|: non-increasing in y."""
    return s / ((y + 1.0) * alpha) if y < t else s * alpha / (y + 1.0)


@njit(cache=True)
def _collapsed_cell_sum(t, alpha, s, mode):
    """collapsed_cell by summing w(y) / w(mode) outward from the mode (log-concave w)."""
    total, first = 1.0, float(mode)
    term, y = 1.0, mode
    while True:
        term *= _ratio(t, alpha, s, y)
        y += 1
        total += term
        first += y * term
        if term < _EPS * total:
            break
    term, y = 1.0, mode
    while y > 0 and term >= _EPS * total:
        term /= _ratio(t, alpha, s, y - 1)
        y -= 1
        total += term
        first += y * term
    log_w = mode * math.log(s) - math.lgamma(mode + 1.0) + abs(t - mode) * math.log(alpha)
    return first / total, log_w + math.log(total)


@njit(cache=True)
def collapsed_cell(t, alpha, s):
    """E[y] and ln Z of q(y) = s^y / y! alpha^|t - y| / Z on y >= 0 (alpha = 0: y = t >= 0).

    Direct summation around the mode when q is narrow, Poisson cdfs otherwise.
    """
    s = max(s, TINY)
    if alpha == 0.0:
        return float(t), t * math.log(s) - math.lgamma(t + 1.0)
    low, up = s / alpha, s * alpha  # Poisson means of the pieces y <= t and y > t
    if t >= 1 and low - 1.0 < t:
        mode = max(0, math.ceil(low - 1.0))
        width = low
    else:
        mode = max(t, 0, math.ceil(min(up, 1e15) - 1.0))
        width = up
    if width > SUM_MAX_MEAN:
        return _collapsed_cell_tails(t, alpha, s)
    return _collapsed_cell_sum(t, alpha, s, mode)


@njit(cache=True)
def _collapsed_rows(Y, alpha, S, mask, Ey, row_log, start, stop):
    for d in range(start, stop):
        acc = 0.0
        for v in range(Y.shape[1]):
            if mask[d, v]:
                continue
            a = alpha[d, v]
            Ey[d, v], log_z = collapsed_cell(Y[d, v], a, S[d, v])
            acc += log_z + math.log1p(-a) - math.log1p(a)
        row_log[d] = acc


@njit(parallel=True, cache=True)
def _collapsed_chunks(Y, alpha, S, mask, Ey, row_log):
    n_rows = Y.shape[0]
    for c in prange((n_rows + ROWS_PER_CHUNK - 1) // ROWS_PER_CHUNK):
        stop = min((c + 1) * ROWS_PER_CHUNK, n_rows)
        _collapsed_rows(Y, alpha, S, mask, Ey, row_log, c * ROWS_PER_CHUNK, stop)


def collapsed_local(Y, alpha, S, mask) -> tuple[np.ndarray, float]:
    """Optimal q(y_dv) ∝ S^y / y! alpha^|y~ - y| for every unmasked cell.

    Returns E[y] (n_rows, n_cols) and the sum over unmasked cells of
    ln Z + ln((1-alpha)/(1+alpha)): the data part of the ELBO when the allocation is optimal.
    """
    Ey = np.zeros(Y.shape)
    row_log = np.zeros(Y.shape[0])
    if Y.size >= PARALLEL_MIN_CELLS:
        _collapsed_chunks(Y, alpha, S, mask, Ey, row_log)
    else:
        _collapsed_rows(Y, alpha, S, mask, Ey, row_log, 0, Y.shape[0])
    return Ey, float(row_log.sum())


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
            g_plus = a * math.exp(digamma_nb(shape_plus[d, v]))
            g_minus = a * math.exp(digamma_nb(shape_minus[d, v]))
            mean = a * shape_plus[d, v] + Emu[d, v]
            var = a * a * shape_plus[d, v] + Vmu[d, v]
            g_sum = math.exp(math.log(mean) - var / (2.0 * mean * mean))
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
