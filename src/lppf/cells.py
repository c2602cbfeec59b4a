"""E[y] and ln Z of the collapsed conditional for a row of cells, under any mechanism's noise.

A cell of privatized count t, rate mu and noise value p (:class:`lppf.noise_conditional.Tables`;
p < 0: noiseless, y = t) takes one of three ways:

* a closed form: noiseless (E[y] = t, ln Z = t ln mu - ln t!), or geometric noise with
  t <= 0 (y ~ Pois(mu alpha): E[y] = mu alpha, ln Z = mu alpha - t ln alpha);
* the power series of :mod:`lppf.series`, where it covers the cell (most cells);
* else the walk of its pmf (:func:`lppf.conditional.mean_log_z_noisy`,
  :func:`lppf.noise_conditional.mean_log_z`).

A row's cells are sorted into the first two ways before any is evaluated, and each way is
then a loop of its own: cells that took the ways in turn at random would cost the processor a
mispredicted branch each. ln Z follows the convention of the kernels it stands for: the
unnormalized a^|k| of :mod:`lppf.conditional` for the geometric noise, the normalized pmf
for the discrete Gaussian and Skellam noise. A cell's result is ``(E[y], L, S)`` with
ln Z = L + ln S: S the series' sum (1 for the other ways), whose logarithms a caller sums as
one running product (:func:`lppf.series.add_log`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from lppf import series
from lppf._numba import at
from lppf.conditional import TINY_RATE, mean_log_z_noiseless, mean_log_z_noisy
from lppf.noise_conditional import GEOMETRIC, Tables, mean_log_z


@njit(cache=True, inline="always")
def _closed(y, mu, p, a, par):
    """(E[y], ln Z, 1) of a noiseless cell (p < 0) or of one of geometric noise with y~ <= 0
    (``a[p]`` = alpha, ``par[p]`` = ln alpha)."""
    if p < 0:
        e, log_z = mean_log_z_noiseless(y, mu)
        return e, log_z, 1.0
    c_hi = mu * a[p]
    return c_hi, c_hi - y * par[p], 1.0


@njit(cache=True, inline="always")
def _walk(y, mu, p, kind, a, par, var, lnorm, lr, lc):
    """(E[y], ln Z) of a cell the series does not cover, by the walk of its pmf."""
    if kind == GEOMETRIC:
        return mean_log_z_noisy(y, a[p], mu, 1.0 / a[p], par[p])
    return mean_log_z(y, mu, kind, par[p], var[p], lnorm[p], lr, lc, p)


@njit(cache=True)
def row(r, Y, code, mask, mu_C, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p, e_C,
        lz_C, s_C, ints, flts):
    """(E[y], L, S) of every unmasked cell c of row ``r`` of ``Y`` (privatized counts), rate
    ``mu_C[c]`` > 0 and noise value ``at(code, r, c)``, into ``e_C``, ``lz_C``, ``s_C``. The
    noise: :class:`lppf.noise_conditional.Tables` fields and ``a`` = alpha (geometric noise;
    else unused); the series: :class:`lppf.series.Series` fields. Scratch: ``ints`` (6, C)
    int64, ``flts`` (5, C)."""
    C = Y.shape[1]
    n_closed, n_series = 0, 0
    for c in range(C):
        p = at(code, r, c)
        closed = p < 0 or (kind == GEOMETRIC and Y[r, c] <= 0)
        used = not mask[r, c]
        ints[4, n_closed] = c
        ints[5, n_series] = c
        n_closed += used and closed
        n_series += used and not closed
    for j in range(n_closed):
        c = ints[4, j]
        e_C[c], lz_C[c], s_C[c] = _closed(Y[r, c], mu_C[c], at(code, r, c), a, par)
    for j in range(n_series):
        c = ints[5, j]
        ints[0, j], ints[1, j], flts[0, j] = Y[r, c], at(code, r, c), mu_C[c]
    n_fail = series.evaluate(n_series, ints, flts, lo, coef, ratio, log_p)
    for j in range(n_series):
        c = ints[5, j]
        e_C[c], lz_C[c], s_C[c] = flts[1, j], flts[2, j], flts[3, j]
    for k in range(n_fail):
        c = ints[5, ints[2, k]]
        e_C[c], lz_C[c] = _walk(Y[r, c], mu_C[c], at(code, r, c), kind, a, par, var, lnorm, lr,
                                lc)
        s_C[c] = 1.0


def scratch(n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The scratch ``ints``, ``flts`` of :func:`row` for rows of ``n_cols`` cells."""
    return np.empty((6, n_cols), np.int64), np.empty((5, n_cols))


# ---------------------------------------------------------------------------------------------
# every cell: the optimal local factor of CAVI and the E step of the EM start


@njit(cache=True, parallel=True)
def _refresh(Y, kind, code, par, var, lnorm, lr, lc, lo, coef, ratio, log_p, S, mask, Ey, R,
             row_log):
    for i in prange(Y.shape[0]):  # (np.int64: a prange index may be unsigned)
        row_log[i] = _refresh_row(np.int64(i), Y, kind, code, par, var, lnorm, lr, lc, lo, coef,
                                  ratio, log_p, S, mask, Ey, R)


@njit(cache=True)
def _refresh_row(i, Y, kind, code, par, var, lnorm, lr, lc, lo, coef, ratio, log_p, S, mask, Ey,
                 R):
    """Row ``i`` of :func:`local`; returns its sum of ln Z."""
    C = Y.shape[1]
    mu_C, lz, s_C = np.empty(C), np.empty(C), np.ones(C)
    for j in range(C):
        mu_C[j] = max(S[i, j], TINY_RATE)
    if kind == GEOMETRIC:  # (the normalized pmf, as lppf.noise_conditional computes it)
        for j in range(C):
            if mask[i, j]:
                continue
            t, p = Y[i, j], at(code, i, j)
            if p < 0:
                Ey[i, j], lz[j] = mean_log_z_noiseless(t, mu_C[j])
            else:
                Ey[i, j], lz[j] = mean_log_z(t, mu_C[j], kind, par[p], var[p], lnorm[p], lr,
                                             lc, p)
    else:
        ints, flts = np.empty((6, C), np.int64), np.empty((5, C))
        row(i, Y, code, mask, mu_C, kind, np.zeros(0), par, var, lnorm, lr, lc, lo, coef, ratio,
            log_p, Ey[i], lz, s_C, ints, flts)
    acc, prod = 0.0, 1.0
    for j in range(C):
        if not mask[i, j]:
            R[i, j] = Ey[i, j] / mu_C[j]
            acc += lz[j]
            acc, prod = series.add_log(acc, prod, s_C[j])
    return acc + math.log(prod)


def local(Y: np.ndarray, noise: Tables, S: np.ndarray, mask: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, float]:
    """(E[y], E[y] / S, sum of ln Z) over the unmasked cells (zeros where masked) of q(y) ∝
    S^y / y! p(y~ - y) with p normalized (S floored at ``TINY_RATE``; noiseless cells:
    y = y~, ln Z = y~ ln S - ln y~!): the optimal local factor of CAVI and the E step of the
    EM start."""
    Ey, R = np.zeros(Y.shape), np.zeros(Y.shape)
    row_log = np.zeros(Y.shape[0])
    s = noise.series
    _refresh(Y, noise.kind, noise.code, noise.par, noise.var, noise.lnorm, noise.lr, noise.lc,
             s.lo, s.coef, s.ratio, s.log_p, np.ascontiguousarray(S, dtype=np.float64), mask, Ey,
             R, row_log)
    return Ey, R, float(row_log.sum())
