"""The collapsed conditional of a true count under any of the mechanisms' noises.

With additive integer noise of pmf p (:mod:`lppf.noise`), a true count y >= 0 behind the
privatized count y~ = t, with Poisson rate mu, has

    f(y) = mu^y / y! p(t - y),    P(y | t, mu) = f(y) / Z,   Z = sum_y f(y),

and ``f(y + 1) / f(y) = mu / (y + 1) * p(t - y - 1) / p(t - y)``. p is log-concave for the
geometric, discrete Gaussian and Skellam noise, so f is too: its ratios fall as y grows and
it has one mode. The mode is found by a galloping search on the sign of ln f(y + 1) - ln f(y)
from a Gaussian guess; walks out from it, with masses relative to f(mode) = 1, stop when a
mass drops below ``TINY_MASS`` of the total. The walk gives an exact inverse-CDF draw
(:func:`sample`), E[y] and ln Z (:func:`mean_log_z`; here with the normalized p, so that
ln Z - mu = ln p(y~ | mu)).

The noise reaches the kernels as a :class:`Tables`: ``kind`` (:data:`GEOMETRIC`,
:data:`GAUSSIAN`, :data:`SKELLAM`), per distinct parameter value P: ``par`` (ln alpha,
1 / (2 sigma^2) or x = 2 mu), ``var`` (the noise variance), ``lnorm`` (ln p(0)), and for
Skellam noise the tables ``lr`` (P, J) of ln r_j = ln I_(j+1)(x) / I_j(x) and ``lc`` (P, J + 1)
of their running sums (ln p(k) - ln p(0)); beyond them r_j comes from its continued fraction.
``code`` maps each cell (broadcast as alpha is: (1, 1), (n_rows, 1) or (n_rows, n_cols)) to
its value, -1 for a noiseless cell (y = y~). The geometric kind computes what
:mod:`lppf.conditional` does (its fast path) and serves to check this module against it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from lppf._numba import at, rng_state, uniform
from lppf.noise import bessel_ratio, dg_log_norm, skellam_log0, skellam_log_ratios, variance
from lppf.validation import InputError

GEOMETRIC, GAUSSIAN, SKELLAM = 0, 1, 2
KINDS = {"geometric": GEOMETRIC, "discrete-gaussian": GAUSSIAN, "skellam": SKELLAM}
TINY_MASS = 2.0**-53  # relative mass below which a walk stops
TINY_RATE = 1e-300  # floor of the rate in mean_log_z (as lppf.conditional)
WALK_CELLS = 4096  # masses a draw keeps; wider pmfs walk twice
TABLE_MAX = 2**20  # longest Skellam table per value; beyond it, continued fractions
TABLE_CELLS_MAX = 2**26  # all Skellam tables together
Y_MAX = 2.0**62  # guesses are capped here (rates this large are not counts)
_LOG1 = np.log(np.arange(1.0, 1025.0))  # ln(y + 1) for small y


class Tables(NamedTuple):
    """The noise of a fit as the kernels read it (see the module docstring)."""

    kind: int
    code: np.ndarray
    par: np.ndarray
    var: np.ndarray
    lnorm: np.ndarray
    lr: np.ndarray
    lc: np.ndarray


def tables(mechanism: str, param: np.ndarray, Ytil: np.ndarray) -> Tables:
    """:class:`Tables` of ``mechanism`` with parameter ``param`` (2-d, broadcastable to the
    privatized counts ``Ytil``, which size the Skellam tables)."""
    param = np.asarray(param, dtype=np.float64)
    values = np.unique(param[param > 0])
    code = np.where(param > 0, np.searchsorted(values, param), -1).astype(np.int64)
    kind = KINDS[mechanism]
    var = np.array([variance(mechanism, v) for v in values])
    width = 0
    if kind == SKELLAM and values.size:
        top = int(np.abs(Ytil).max()) if Ytil.size else 0
        width = int(min(2 * top + 40 * math.sqrt(var.max()) + 64, TABLE_MAX))
        if width * values.size > TABLE_CELLS_MAX:
            raise InputError(f"mu: {values.size} distinct values need Skellam tables of "
                             f"{width * values.size} entries, more than {TABLE_CELLS_MAX} "
                             "(use one value per row or fewer distinct values)", "alpha")
    lr = np.zeros((values.size, width))
    lc = np.zeros((values.size, width + 1))
    par, lnorm = np.empty(values.size), np.empty(values.size)
    for p, v in enumerate(values):
        if kind == GEOMETRIC:
            par[p], lnorm[p] = math.log(v), math.log1p(-v) - math.log1p(v)
        elif kind == GAUSSIAN:
            par[p], lnorm[p] = 1.0 / (2.0 * v * v), -dg_log_norm(v)
        else:
            par[p], lnorm[p] = 2.0 * v, skellam_log0(v)
            lr[p] = skellam_log_ratios(2.0 * v, width)
            lc[p, 1:] = np.cumsum(lr[p])
    return Tables(kind, code, par, var, lnorm, lr, lc)


# ---------------------------------------------------------------------------------------------
# the noise and the ratios of f


@njit(cache=True, inline="always")
def log_noise_ratio(kind, k, par, lr, p):
    """ln p(k - 1) / p(k) for the noise of value ``p`` (row of ``lr``)."""
    if kind == GAUSSIAN:
        return (2.0 * k - 1.0) * par
    if kind == GEOMETRIC:
        return -par if k >= 1 else par
    j = k - 1 if k >= 1 else -k
    v = lr[p, j] if j < lr.shape[1] else math.log(bessel_ratio(j, par))
    return -v if k >= 1 else v


@njit(cache=True)
def log_noise(kind, k, par, lnorm, lr, lc, p):
    """ln p(k), normalized."""
    a = abs(k)
    if kind == GAUSSIAN:
        return lnorm - float(a) * a * par
    if kind == GEOMETRIC:
        return lnorm + a * par
    n = lc.shape[1]
    if a < n:
        return lnorm + lc[p, a]
    v = lnorm + lc[p, n - 1]
    for j in range(n - 1, a):
        v += math.log(bessel_ratio(j, par))
    return v


@njit(cache=True, inline="always")
def log_step(y, t, log_mu, kind, par, lr, p):
    """d(y) = ln f(y + 1) - ln f(y), falling in y (log-concavity)."""
    log1 = _LOG1[y] if y < len(_LOG1) else math.log(y + 1.0)
    return log_mu - log1 + log_noise_ratio(kind, t - y, par, lr, p)


@njit(cache=True)
def mode(t, mu, log_mu, kind, par, var, lr, p):
    """argmax_y f(y): the smallest y >= 0 with d(y) < 0, by galloping from the Gaussian guess
    ``mu (var + t) / (var + mu)`` (the posterior mean of y ~ N(mu, mu), t ~ N(y, var)) and
    bisection."""
    guess = mu * (var + t) / (var + mu) if var + mu > 0 else 0.0
    y = int(min(max(guess, 0.0), Y_MAX))
    if log_step(y, t, log_mu, kind, par, lr, p) >= 0.0:  # the mode lies above y
        lo, step = y, 1
        hi = y + 1
        while log_step(hi, t, log_mu, kind, par, lr, p) >= 0.0:
            lo, step = hi, 2 * step
            hi = lo + step
    else:
        if y == 0 or log_step(y - 1, t, log_mu, kind, par, lr, p) >= 0.0:
            return y
        hi, step = y - 1, 1
        lo = max(hi - step, 0)
        while log_step(lo, t, log_mu, kind, par, lr, p) < 0.0:
            if lo == 0:
                return 0
            hi, step = lo, 2 * step
            lo = max(hi - step, 0)
    while hi - lo > 1:  # d(lo) >= 0 > d(hi)
        mid = (lo + hi) // 2
        if log_step(mid, t, log_mu, kind, par, lr, p) < 0.0:
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# sampler


@njit(cache=True)
def sample(t, mu, kind, par, var, lr, p, rs, up, down):
    """One exact draw of y ~ P(y | t, mu) (mu >= 0) from a uniform of the xoshiro state
    ``rs``: the walk stores the masses above and below the mode in ``up`` and ``down``
    (scratch of equal length) and inverts the CDF; a pmf wider than them is walked again."""
    if not mu > 0.0:
        return 0
    log_mu = math.log(mu)
    m = mode(t, mu, log_mu, kind, par, var, lr, p)
    size = len(up)
    z, f, y, n_up = 1.0, 1.0, m, 0
    while True:
        f *= math.exp(log_step(y, t, log_mu, kind, par, lr, p))
        y += 1
        if not f > TINY_MASS * z:
            break
        z += f
        if n_up < size:
            up[n_up] = f
        n_up += 1
    f, y, n_dn = 1.0, m, 0
    while y > 0:
        f *= math.exp(-log_step(y - 1, t, log_mu, kind, par, lr, p))
        y -= 1
        if not f > TINY_MASS * z:
            break
        z += f
        if n_dn < size:
            down[n_dn] = f
        n_dn += 1
    target = uniform(rs) * z
    if target < 1.0:
        return m
    if n_up > size or n_dn > size:
        return _walk_again(m, t, log_mu, kind, par, lr, p, z, target)
    cum = 1.0
    for i in range(n_up):
        cum += up[i]
        if target < cum:
            return m + 1 + i
    for i in range(n_dn):
        cum += down[i]
        if target < cum:
            return m - 1 - i
    return m  # target within rounding of the total


@njit(cache=True)
def _walk_again(m, t, log_mu, kind, par, lr, p, z, target):
    """The inverse CDF at ``target`` (> 1, the mode's mass) by walking again."""
    cum, f, y = 1.0, 1.0, m
    while True:
        f *= math.exp(log_step(y, t, log_mu, kind, par, lr, p))
        y += 1
        if not f > TINY_MASS * z:
            break
        cum += f
        if target < cum:
            return y
    f, y = 1.0, m
    while y > 0:
        f *= math.exp(-log_step(y - 1, t, log_mu, kind, par, lr, p))
        y -= 1
        if not f > TINY_MASS * z:
            break
        cum += f
        if target < cum:
            return y
    return m


# ---------------------------------------------------------------------------------------------
# mean and normalizer


@njit(cache=True)
def mean_log_z(t, mu, kind, par, var, lnorm, lr, lc, p):
    """(E[y], ln Z) of P(y | t, mu), Z = sum_y mu^y / y! p(t - y) with p normalized (mu
    floored at ``TINY_RATE``)."""
    mu = max(mu, TINY_RATE)
    log_mu = math.log(mu)
    m = mode(t, mu, log_mu, kind, par, var, lr, p)
    total, first = 1.0, 0.0
    f, y = 1.0, m
    while True:
        f *= math.exp(log_step(y, t, log_mu, kind, par, lr, p))
        y += 1
        if not f > TINY_MASS * total:
            break
        total += f
        first += (y - m) * f
    f, y = 1.0, m
    while y > 0:
        f *= math.exp(-log_step(y - 1, t, log_mu, kind, par, lr, p))
        y -= 1
        if not f > TINY_MASS * total:
            break
        total += f
        first += (y - m) * f
    log_fm = m * log_mu - math.lgamma(m + 1.0) + log_noise(kind, t - m, par, lnorm, lr, lc, p)
    return m + first / total, log_fm + math.log(total)


@njit(cache=True, parallel=True)
def refresh(Y, kind, code, par, var, lnorm, lr, lc, S, mask, Ey, R, row_log):
    """Per unmasked cell: Ey = E[y] and R = E[y] / S under q(y) ∝ S^y / y! p(y~ - y) (S
    floored at ``TINY_RATE``), and per row the sum of ln Z; noiseless cells: y = y~ and ln Z
    = y~ ln S - ln y~!."""
    for i in prange(Y.shape[0]):  # (np.int64: a prange index may be unsigned)
        row_log[i] = _refresh_row(np.int64(i), Y, kind, code, par, var, lnorm, lr, lc, S,
                                  mask, Ey, R)


@njit(cache=True)
def _refresh_row(i, Y, kind, code, par, var, lnorm, lr, lc, S, mask, Ey, R):
    acc = 0.0
    for j in range(Y.shape[1]):
        if mask[i, j]:
            continue
        t = Y[i, j]
        s = max(S[i, j], TINY_RATE)
        p = at(code, i, j)
        if p < 0:
            e = float(t)
            lz = t * math.log(s) - math.lgamma(t + 1.0)
        else:
            e, lz = mean_log_z(t, s, kind, par[p], var[p], lnorm[p], lr, lc, p)
        Ey[i, j] = e
        R[i, j] = e / s
        acc += lz
    return acc


def local(Y: np.ndarray, noise: Tables, S: np.ndarray, mask: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, float]:
    """(E[y], E[y] / S, sum of ln Z) over the unmasked cells (zeros where masked): the
    optimal local factor of CAVI and the E step of the EM start."""
    Ey, R = np.zeros(Y.shape), np.zeros(Y.shape)
    row_log = np.zeros(Y.shape[0])
    refresh(Y, noise.kind, noise.code, noise.par, noise.var, noise.lnorm, noise.lr,
            noise.lc, np.ascontiguousarray(S, dtype=np.float64), mask, Ey, R, row_log)
    return Ey, R, float(row_log.sum())


def log_noise_sum(Y: np.ndarray, Ytil: np.ndarray, noise: Tables, mask: np.ndarray) -> float:
    """sum over unmasked cells of ln p(y~ - y) (noiseless cells: 0 if y = y~, else -inf)."""
    return float(_log_noise_sum(Y, Ytil, noise.kind, noise.code, noise.par, noise.lnorm,
                                noise.lr, noise.lc, mask))


@njit(cache=True, parallel=True)
def _log_noise_sum(Y, Ytil, kind, code, par, lnorm, lr, lc, mask):
    out = np.zeros(Y.shape[0])
    for i in prange(Y.shape[0]):
        out[i] = _log_noise_row(np.int64(i), Y, Ytil, kind, code, par, lnorm, lr, lc, mask)
    return out.sum()


@njit(cache=True)
def _log_noise_row(i, Y, Ytil, kind, code, par, lnorm, lr, lc, mask):
    acc = 0.0
    for j in range(Y.shape[1]):
        if mask[i, j]:
            continue
        p = at(code, i, j)
        k = Ytil[i, j] - Y[i, j]
        if p < 0:
            acc += 0.0 if k == 0 else -math.inf
        else:
            acc += log_noise(kind, k, par[p], lnorm[p], lr, lc, p)
    return acc


@njit(cache=True)
def sample_cells(t_m, mu_m, kind, code_m, par, var, lr, seed):
    """Draws y_n ~ P(y | t_n, mu_n) for cells n (tests and checks): ``code_m`` the value of
    each cell (-1: noiseless)."""
    rs = rng_state(seed)
    up, down = np.empty(WALK_CELLS), np.empty(WALK_CELLS)
    out = np.empty(len(t_m), dtype=np.int64)
    for n in range(len(t_m)):
        p = code_m[n]
        out[n] = t_m[n] if p < 0 else sample(t_m[n], mu_m[n], kind, par[p], var[p], lr, p,
                                             rs, up, down)
    return out


def count_loglik(Y: np.ndarray, mu: np.ndarray | None, mask: np.ndarray, Ytil: np.ndarray,
                 noise: Tables) -> float:
    """sum over unmasked cells of ln Pois(y; mu) + ln p(y~ - y) (mu None: the noise term
    only); :func:`lppf.log_densities.count_loglik` for any mechanism."""
    from lppf.log_densities import count_loglik as poisson_loglik

    total = log_noise_sum(Y, Ytil, noise, mask)
    return total if mu is None else total + poisson_loglik(Y, mu, mask)


def fit_tables(data) -> Tables | None:
    """The :class:`Tables` of a fit's data (:class:`lppf.validation.FitData`), None for the
    geometric mechanism (its own fast path, :mod:`lppf.conditional`)."""
    if data.mechanism == "geometric":
        return None
    return tables(data.mechanism, data.alpha, data.Y)
