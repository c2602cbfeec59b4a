"""The collapsed conditional's normalizer as a power series, for cells of small counts.

A true count y >= 0 behind the privatized count t, with Poisson rate mu and integer noise of
symmetric log-concave pmf p (:mod:`lppf.noise`), has f(y) = mu^y / y! p(t - y) and

    Z = sum_y f(y) = p(t) S(z),   S(z) = sum_y c_y z^y,   z = mu r,   r = p(t - 1) / p(t),
    c_y = p(t - y) / (p(t) r^y y!),   E[y] = sum_y y c_y z^y / S(z),

so ln Z = ln p(t) + ln S(z). The coefficients depend on t and the noise only: a table per
noise value and t, built once per fit (:func:`build`), turns a cell's walk of its pmf (a loop
of unpredictable length, :mod:`lppf.conditional`, :mod:`lppf.noise_conditional`) into two
polynomials of fixed length. As p(k - 1) / p(k) falls when k falls (log-concavity),
c_y <= c_(y-1) / y, so 0 <= c_y <= 1 / y!:

* z < 1 is exactly a mode of f at 0, and every term of S is then below 1 / y!: ``SHORT``
  terms leave out less than 1 / SHORT! < 2^-61 of S, whatever mu and t;
* z >= 1 (t < ``LONG`` - 1): ``LONG`` terms, where each ratio f(y + 1) / f(y) from y = t on is
  at most mu / (y + 1) (p(k - 1) <= p(k) for k <= 0), so the terms left out sum to at most
  the last one times m / (1 - m), m = mu / LONG; a cell where that exceeds ``TAIL`` of S is
  not evaluated here (:func:`evaluate` says so and the caller walks).

Each polynomial is evaluated as four interleaved Horner chains in z^4 (independent
multiply-adds the processor overlaps). ``ln p(t)`` follows the convention of the kernels the
series stands in for: the unnormalized a^|k| for the geometric noise (:mod:`lppf.conditional`),
the normalized pmf for the discrete Gaussian and Skellam noise.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from lppf.noise_conditional import GEOMETRIC, log_noise, noise_ratio

SHORT = 20  # terms of S for a mode of 0 (1 / 20! < 2^-61)
LONG = 32  # terms of S for a mode above 0
TAIL = 2.0**-56  # largest bound on the part of S left out by LONG terms
T_MAX = 1024  # largest |t| of a table (cells beyond it walk)
ROWS_MAX = 2**15  # noise values x t rows of all tables together (beyond: fewer t)
R_MIN = 1e-250  # smaller ratios p(t - 1) / p(t): the row is not used (NaN)


class Series(NamedTuple):
    """Tables of the series for noise values p and t = lo .. lo + T - 1: ``coef`` (P, T, 2,
    LONG) holds c_y and y c_y, ``ratio`` (P, T) r = p(t - 1) / p(t) (NaN: not usable) and
    ``log_p`` (P, T) ln p(t)."""

    lo: int
    coef: np.ndarray
    ratio: np.ndarray
    log_p: np.ndarray


def build(kind: int, par: np.ndarray, lnorm: np.ndarray, lr: np.ndarray, lc: np.ndarray,
          Ytil: np.ndarray) -> Series:
    """The :class:`Series` of the noise of :class:`lppf.noise_conditional.Tables` fields
    ``kind``, ``par``, ``lnorm``, ``lr``, ``lc`` for the t that the privatized counts ``Ytil``
    take, within |t| <= ``T_MAX`` and, for ``ROWS_MAX`` rows in all, nearest 0."""
    n_values = len(par)
    if Ytil.size == 0 or n_values == 0:
        return Series(0, np.zeros((n_values, 0, 2, LONG)), np.zeros((n_values, 0)),
                      np.zeros((n_values, 0)))
    lo, hi = (min(max(int(t), -T_MAX), T_MAX) for t in (Ytil.min(), Ytil.max()))
    n_rows = ROWS_MAX // n_values
    lo = max(lo, min(-(n_rows // 2), hi - n_rows + 1))
    hi = min(hi, lo + n_rows - 1)
    coef = np.zeros((n_values, hi - lo + 1, 2, LONG))
    ratio = np.empty((n_values, hi - lo + 1))
    log_p = np.empty((n_values, hi - lo + 1))
    _fill(kind, par, lnorm, lr, lc, lo, coef, ratio, log_p)
    return Series(lo, coef, ratio, log_p)


@njit(cache=True)
def _fill(kind, par, lnorm, lr, lc, lo, coef, ratio, log_p):
    for p in range(coef.shape[0]):
        for i in range(coef.shape[1]):
            t = lo + i
            log_p[p, i] = (abs(t) * par[p] if kind == GEOMETRIC
                           else log_noise(kind, t, par[p], lnorm[p], lr, lc, p))
            r = noise_ratio(kind, t, par[p], lr, p, False)
            if not (R_MIN < r < math.inf):
                ratio[p, i] = math.nan
                continue
            ratio[p, i] = r
            c = 1.0
            for y in range(LONG):
                coef[p, i, 0, y] = c
                coef[p, i, 1, y] = y * c
                c *= noise_ratio(kind, t - y, par[p], lr, p, False) / (r * (y + 1.0))


@njit(cache=True, inline="always")
def _horner(coef, p, i, k, z, z4, n):
    """sum_(y < n) coef[p, i, k, y] z^y (n a multiple of 4) as four chains in z^4 (indexed in
    place: a slice would cost numba a reference count per cell)."""
    a0, a1 = coef[p, i, k, n - 4], coef[p, i, k, n - 3]
    a2, a3 = coef[p, i, k, n - 2], coef[p, i, k, n - 1]
    for j in range(n - 8, -1, -4):
        a0 = a0 * z4 + coef[p, i, k, j]
        a1 = a1 * z4 + coef[p, i, k, j + 1]
        a2 = a2 * z4 + coef[p, i, k, j + 2]
        a3 = a3 * z4 + coef[p, i, k, j + 3]
    return (a0 + z * a1) + (z * z) * (a2 + z * a3)


@njit(cache=True, inline="always")
def _sums(coef, p, i, z, n):
    """(S, E[y]) of the first ``n`` terms at ``z``."""
    z2 = z * z
    z4 = z2 * z2
    s0 = _horner(coef, p, i, 0, z, z4, n)
    return s0, _horner(coef, p, i, 1, z, z4, n) / s0


@njit(cache=True)
def evaluate(n, ints, flts, lo, coef, ratio, log_p):
    """(E[y], ln p(t), S) of ``n`` cells from the tables of a :class:`Series` (``lo``,
    ``coef``, ``ratio``, ``log_p``): ln Z = ln p(t) + ln S. Each cell's privatized count,
    noise value and rate (> 0) are read from ``ints[0]``, ``ints[1]`` and ``flts[0]``, its
    E[y], ln p(t) and S written to ``flts[1]``, ``flts[2]``, ``flts[3]`` (``ints[2:4]``,
    ``flts[4]`` scratch). Returns the number m of cells the series does not cover (t off
    the tables, an unusable row, or a tail beyond ``TAIL``), whose positions are then
    ``ints[2, :m]``. The cells whose mode is 0 (z < 1) take ``SHORT`` terms, the others
    ``LONG``; each kind is gathered first, as a branch that the cells take at random costs
    more than the terms it saves."""
    t_N, p_N = ints[0], ints[1]
    mu_N, e_N, lp_N, s_N, z_N = flts[0], flts[1], flts[2], flts[3], flts[4]
    n_short, n_long = 0, 0
    for j in range(n):
        i = t_N[j] - lo
        z = mu_N[j] * ratio[p_N[j], i] if 0 <= i < ratio.shape[1] else math.inf
        z_N[j] = z
        short = z < 1.0
        ints[2, n_short] = j
        ints[3, n_long] = j
        n_short += short
        n_long += not short
    for k in range(n_short):
        j = ints[2, k]
        p, i = p_N[j], t_N[j] - lo
        s_N[j], e_N[j] = _sums(coef, p, i, z_N[j], SHORT)
        lp_N[j] = log_p[p, i]
    n_fail = 0
    for k in range(n_long):
        j = ints[3, k]
        z, t, mu = z_N[j], t_N[j], mu_N[j]
        m = mu / LONG
        if t < LONG - 1 and m < 0.5 and z < 1e8:  # (not NaN rows nor t off the tables)
            p, i = p_N[j], t - lo
            s0, e_N[j] = _sums(coef, p, i, z, LONG)
            s_N[j], lp_N[j] = s0, log_p[p, i]
            z2 = z * z
            z4 = z2 * z2
            z8 = z4 * z4
            last = coef[p, i, 0, LONG - 1] * (z8 * z8 * z8 * z4 * z2 * z)  # c_31 z^31
            if last * m <= TAIL * (1.0 - m) * s0:
                continue
        ints[2, n_fail] = j
        n_fail += 1
    return n_fail


_PROD_MIN, _PROD_MAX = 1e-150, 1e150  # range of a running product of S


@njit(cache=True, inline="always")
def add_log(total, prod, s):
    """(total, prod) with S = ``s`` taken into the running product ``prod``, logged into
    ``total`` once it leaves (_PROD_MIN, _PROD_MAX): the sum of ln S is total + ln prod.
    An S of _PROD_MAX or more (32 terms reach 1e214 under nearly noiseless geometric or
    Skellam noise) is logged alone, so the product stays below _PROD_MAX^2."""
    if s >= _PROD_MAX:
        return total + math.log(s), prod
    prod *= s
    if _PROD_MIN < prod < _PROD_MAX:
        return total, prod
    return total + math.log(prod), 1.0


def of(tables, Ytil: np.ndarray) -> Series:
    """:func:`build` for a :class:`lppf.noise_conditional.Tables` and its privatized counts."""
    return build(tables.kind, tables.par, tables.lnorm, tables.lr, tables.lc,
                 np.asarray(Ytil))
