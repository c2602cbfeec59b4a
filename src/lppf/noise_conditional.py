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
ln Z - mu = ln p(y~ | mu)). Cells with small rates and counts are drawn ``LANES`` at a time
from the masses f(y) / f(0), y < ``LANE_CELLS`` (:func:`sample_lanes`), as
:mod:`lppf.conditional` does for the geometric noise. E[y] and ln Z of many cells at once
take the power series of :mod:`lppf.series` where it covers them (:mod:`lppf.cells`).

The noise reaches the kernels as a :class:`Tables`: ``kind`` (:data:`GEOMETRIC`,
:data:`GAUSSIAN`, :data:`SKELLAM`), per distinct parameter value P: ``par`` (ln alpha,
1 / (2 sigma^2) or x = 2 mu), ``var`` (the noise variance), ``lnorm`` (ln p(0)), and for the
discrete Gaussian and Skellam noise the tables ``lr`` (P, 3, 2 J + 1): ln r_j (j = 0 .. J)
with ``r_j = p(j + 1) / p(j)`` (``exp(-(2 j + 1) / (2 sigma^2))``, or ``I_(j+1)(x) / I_j(x)``),
then p(k - 1) / p(k) and its inverse for k = -J .. J, and ``lc`` (P, J + 1) of the running
sums of ln r_j (ln p(k) - ln p(0)); beyond J (sized by the largest |y~|) they come from the
formula of r_j (for Skellam noise, its continued fraction; ln p(k) far past J, from the
uniform expansion of ln I_|k|(x)); ``series`` the
:class:`lppf.series.Series` of the noise for the privatized counts it was built for.
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
from lppf.distributions import log_bessel_i_nb
from lppf.noise import bessel_ratio, dg_log_norm, skellam_log0, skellam_log_ratios, variance
from lppf.validation import NOISE_PARAMS, InputError

GEOMETRIC, GAUSSIAN, SKELLAM = 0, 1, 2
KINDS = {"geometric": GEOMETRIC, "discrete-gaussian": GAUSSIAN, "skellam": SKELLAM}
TINY_MASS = 2.0**-53  # relative mass below which a walk stops
TINY_RATE = 1e-300  # floor of the rate in mean_log_z (as lppf.conditional)
WALK_CELLS = 256  # core masses a draw keeps on each side; wider cores: a full walk
CORE_MASS = 2.0**-10  # relative mass where the core walk of a draw stops
WALK_RATIOS = 64  # Skellam ln p(k) past the tables: steps summed before the expansion
TABLE_MAX = 2**20  # longest table per value; beyond it, the formulas
TABLE_CELLS_MAX = 2**24  # all tables together
Y_MAX = 2.0**62  # guesses are capped here (rates this large are not counts)
LANES = 8  # cells drawn side by side by sample_lanes
LANE_CELLS = 16  # masses y = 0 .. LANE_CELLS - 1 of each lane
LANE_MAX_MU = 6.0  # largest rate of a lane (keeps the bound on its tail tight)
LANE_MAX_LOG = 600.0  # largest ln p(0) / p(y~) of a lane (its masses relative to f(0) stay finite)
_INV = 1.0 / np.arange(1.0, 1025.0)  # 1 / (y + 1) for small y


class Tables(NamedTuple):
    """The noise of a fit as the kernels read it (see the module docstring)."""

    kind: int
    code: np.ndarray
    par: np.ndarray
    var: np.ndarray
    lnorm: np.ndarray
    lr: np.ndarray
    lc: np.ndarray
    series: object = None  # its lppf.series.Series


def tables(mechanism: str, param: np.ndarray, Ytil: np.ndarray) -> Tables:
    """:class:`Tables` of ``mechanism`` with parameter ``param`` (2-d, broadcastable to the
    privatized counts ``Ytil``, which size the tables)."""
    param = np.asarray(param, dtype=np.float64)
    values = np.unique(param[param > 0])
    code = np.where(param > 0, np.searchsorted(values, param), -1).astype(np.int64)
    kind = KINDS[mechanism]
    var = np.array([variance(mechanism, v) for v in values])
    width = 0
    if kind != GEOMETRIC and values.size:
        top = int(np.abs(Ytil).max()) if Ytil.size else 0
        width = int(min(2 * top + 40 * math.sqrt(var.max()) + 64, TABLE_MAX))
        if width * values.size > TABLE_CELLS_MAX:
            raise InputError(f"{NOISE_PARAMS[mechanism]}: {values.size} distinct values need "
                             f"tables of {width * values.size} entries, more than "
                             f"{TABLE_CELLS_MAX} (use one value per row or fewer distinct "
                             "values)", "alpha")
    size = 2 * width + 1 if width else 0
    lr = np.zeros((values.size, 3, size))
    lc = np.zeros((values.size, width + 1))
    par, lnorm = np.empty(values.size), np.empty(values.size)
    j = np.arange(width + 1)
    for p, v in enumerate(values):
        if kind == GEOMETRIC:
            par[p], lnorm[p] = math.log(v), math.log1p(-v) - math.log1p(v)
            continue
        if kind == GAUSSIAN:
            par[p], lnorm[p] = 1.0 / (2.0 * v * v), -dg_log_norm(v)
            log_r = -(2.0 * j + 1.0) * par[p]
        else:
            par[p], lnorm[p] = 2.0 * v, skellam_log0(v)
            log_r = skellam_log_ratios(2.0 * v, width + 1)
        lr[p, 0, :width + 1] = log_r
        # ln p(k - 1) / p(k) for k = -width .. width: ln r_(-k) for k <= 0, -ln r_(k-1) above
        log_nr = np.concatenate((log_r[width:0:-1], [log_r[0]], -log_r[:width]))
        with np.errstate(over="ignore"):
            lr[p, 1], lr[p, 2] = np.exp(log_nr), np.exp(-log_nr)
        lc[p, 1:] = np.cumsum(log_r[:width])
    from lppf import series  # (which builds on this module)

    return Tables(kind, code, par, var, lnorm, lr, lc,
                  series.build(kind, par, lnorm, lr, lc, np.asarray(Ytil)))


# ---------------------------------------------------------------------------------------------
# the noise and the ratios of f: r_j = p(j + 1) / p(j) for j >= 0 (p symmetric), so that
# p(k - 1) / p(k) = 1 / r_(k-1) for k >= 1 and r_(-k) for k <= 0


@njit(cache=True, inline="always")
def _log_r(kind, j, par, lr, p):
    """ln r_j from the table ``lr[p, 0]`` (j <= J), or beyond it from its formula."""
    if j <= lr.shape[2] // 2 and lr.shape[2] > 0:
        return lr[p, 0, j]
    if kind == GAUSSIAN:
        return -(2.0 * j + 1.0) * par
    if kind == GEOMETRIC:
        return par
    return math.log(bessel_ratio(j, par))


@njit(cache=True, inline="always")
def noise_ratio(kind, k, par, lr, p, inverse):
    """p(k - 1) / p(k) (``inverse``: p(k) / p(k - 1)) from the tables ``lr[p, 1]``,
    ``lr[p, 2]`` over k = -J .. J (no branch on the sign of k), or beyond from the formula."""
    i = k + lr.shape[2] // 2
    if 0 <= i < lr.shape[2]:
        return lr[p, 2 if inverse else 1, i]
    v = log_noise_ratio(kind, k, par, lr, p)
    return math.exp(-v if inverse else v)


@njit(cache=True, inline="always")
def log_noise_ratio(kind, k, par, lr, p):
    """ln p(k - 1) / p(k) for the noise of value ``p``."""
    return -_log_r(kind, k - 1, par, lr, p) if k >= 1 else _log_r(kind, -k, par, lr, p)


@njit(cache=True)
def log_noise(kind, k, par, lnorm, lr, lc, p):
    """ln p(k), normalized. Skellam noise beyond the table (|k| > J): the ratios r_j for
    up to ``WALK_RATIOS`` steps, further ln I_|k|(x) - ln I_J(x) (uniform expansion, O(1))."""
    a = abs(k)
    if kind == GAUSSIAN:
        return lnorm - float(a) * a * par
    if kind == GEOMETRIC:
        return lnorm + a * par
    n = lc.shape[1]
    if a < n:
        return lnorm + lc[p, a]
    v = lnorm + lc[p, n - 1]
    if a - n < WALK_RATIOS:
        for j in range(n - 1, a):
            v += math.log(bessel_ratio(j, par))
        return v
    return v + log_bessel_i_nb(float(a), par) - log_bessel_i_nb(n - 1.0, par)


@njit(cache=True, inline="always")
def ratio(y, t, mu, kind, par, lr, p):
    """f(y + 1) / f(y) = mu / (y + 1) p(k - 1) / p(k), k = t - y (no logarithms)."""
    noise = noise_ratio(kind, t - y, par, lr, p, False)
    return mu * noise * (_INV[y] if y < len(_INV) else 1.0 / (y + 1.0))


@njit(cache=True, inline="always")
def inv_ratio(y, t, inv_mu, kind, par, lr, p):
    """f(y - 1) / f(y) = y / mu p(k) / p(k - 1), k = t - y + 1, for y >= 1."""
    return y * inv_mu * noise_ratio(kind, t - y + 1, par, lr, p, True)


@njit(cache=True, inline="always")
def mode(t, mu, kind, par, var, lr, p):
    """argmax_y f(y): the smallest y >= 0 with f(y + 1) / f(y) < 1 (:func:`ratio`; far from
    the mode it may overflow to inf, which keeps its comparison with 1 right), by galloping
    from the Gaussian guess ``mu (var + t) / (var + mu)`` (the posterior mean of
    y ~ N(mu, mu), t ~ N(y, var)) and bisection."""
    if ratio(0, t, mu, kind, par, lr, p) < 1.0:  # the commonest case: small counts
        return 0
    guess = mu * (var + t) / (var + mu) if var + mu > 0 else 0.0
    y = int(min(max(guess, 0.0), Y_MAX))
    if ratio(y, t, mu, kind, par, lr, p) >= 1.0:  # the mode lies above y
        lo, step = y, 1
        hi = y + 1
        while ratio(hi, t, mu, kind, par, lr, p) >= 1.0:
            lo, step = hi, 2 * step
            hi = lo + step
    else:
        if y == 0 or ratio(y - 1, t, mu, kind, par, lr, p) >= 1.0:
            return y
        hi, step = y - 1, 1
        lo = max(hi - step, 0)
        while ratio(lo, t, mu, kind, par, lr, p) < 1.0:
            if lo == 0:
                return 0
            hi, step = lo, 2 * step
            lo = max(hi - step, 0)
    while hi - lo > 1:  # ratio(lo) >= 1 > ratio(hi)
        mid = (lo + hi) // 2
        if ratio(mid, t, mu, kind, par, lr, p) < 1.0:
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# sampler


@njit(cache=True)
def sample(t, mu, kind, par, var, lr, p, rs, up, down):
    """One exact draw of y ~ P(y | t, mu) (mu >= 0; floored at ``TINY_RATE`` when > 0) from
    the uniforms of the xoshiro state ``rs``.

    Walking out from the mode until a mass drops to ``CORE_MASS`` of the running total gives
    the core masses (``up`` and ``down`` are scratch of equal length) and, as the ratios fall
    away from the mode (log-concavity), a geometric bound on each tail beyond: Z <= Z_hi. A
    target u Z_hi is inverted over the core, then over the tails walked exactly (to
    ``TINY_MASS``); a target beyond them draws again. Each try returns y with probability
    f(y) / Z_hi, so the accepted draw is exact. Cores wider than the scratch: a full walk."""
    if not mu > 0.0:
        return 0
    mu = max(mu, TINY_RATE)
    m = mode(t, mu, kind, par, var, lr, p)
    inv_mu = 1.0 / mu if m > 0 else 0.0
    size = len(up)
    z, f, y, n_up = 1.0, 1.0, m, 0
    while True:  # up: masses of m + 1, m + 2, ... until one is small
        f *= ratio(y, t, mu, kind, par, lr, p)
        y += 1
        if f <= CORE_MASS * z or n_up == size:
            break
        up[n_up] = f
        z += f
        n_up += 1
    f_up, y_up = f, y
    r_up = ratio(y, t, mu, kind, par, lr, p)
    f, y, n_dn = 1.0, m, 0
    f_dn, y_dn, r_dn = 0.0, 0, 0.0
    while y > 0:  # down: masses of m - 1, ..., 0 until one is small
        f *= inv_ratio(y, t, inv_mu, kind, par, lr, p)
        y -= 1
        if (f <= CORE_MASS * z and y > 0) or n_dn == size:
            f_dn, y_dn, r_dn = f, y, inv_ratio(y, t, inv_mu, kind, par, lr, p)
            break
        down[n_dn] = f
        z += f
        n_dn += 1
    if n_up == size or n_dn == size or not (r_up < 1.0 and r_dn < 1.0):
        return _walk_sample(m, t, mu, kind, par, lr, p, uniform(rs))
    z_hi = z + f_up / (1.0 - r_up) + f_dn / (1.0 - r_dn)
    while True:
        target = uniform(rs) * z_hi
        cum = 1.0
        if target < cum:
            return m
        for i in range(n_up):
            cum += up[i]
            if target < cum:
                return m + 1 + i
        for i in range(n_dn):
            cum += down[i]
            if target < cum:
                return m - 1 - i
        f, y = f_up, y_up
        while f > TINY_MASS * z:
            cum += f
            if target < cum:
                return y
            f *= ratio(y, t, mu, kind, par, lr, p)
            y += 1
        f, y = f_dn, y_dn
        while f > TINY_MASS * z:
            cum += f
            if target < cum:
                return y
            if y == 0:
                break
            f *= inv_ratio(y, t, inv_mu, kind, par, lr, p)
            y -= 1


@njit(cache=True, inline="always")
def fits_lanes(t, mu, lc, p, half, n_cells):
    """Whether :func:`sample_lanes` with ``n_cells`` masses can draw P(y | t, mu) under the
    noise of value ``p`` whose ratio tables span k = -``half`` .. ``half``: 0 < mu <=
    ``LANE_MAX_MU`` (so mu < n_cells), y~ < n_cells (every ratio from y = n_cells - 1 on is
    at most mu / (y + 1), as p(k - 1) <= p(k) for k <= 0), the ratios at k = y~ - y for y <
    n_cells within the table, and ln p(0) / p(y~) <= ``LANE_MAX_LOG``."""
    a = t if t >= 0 else -t
    return (0.0 < mu <= LANE_MAX_MU and mu < n_cells and t < n_cells and a <= half
            and t - n_cells + 1 >= -half and lc[p, a] >= -LANE_MAX_LOG)


@njit(cache=True, inline="always")
def lane_base(t, p, lr):
    """Index of p(y~ - 1) / p(y~) for value ``p`` in ``lr.reshape(-1)`` (the flat ratio table
    of :func:`sample_lanes`); p(y~ - y - 1) / p(y~ - y) is at that index minus y."""
    size = lr.shape[2]
    return (3 * p + 1) * size + size // 2 + t


@njit(cache=True, inline="always")
def sample_lanes(n, t_L, mu_L, base_L, p_L, kind, par, var, lr, nr, rs, up, down, cum,
                 work, y_L):
    """Exact draws y_l ~ P(y | t_l, mu_l) for the first ``n`` of ``LANES`` lanes, each a cell
    that :func:`fits_lanes`, side by side; ``y_L`` (LANES,) int gets them.

    ``t_L``, ``mu_L``, ``base_L`` (:func:`lane_base`) and ``p_L`` (LANES,) hold y~, mu, the
    ratio index and the noise value of each lane (lanes n and beyond: any values that fit,
    ignored); ``nr`` is ``lr.reshape(-1)``. With N = len(cum), ``cum`` (N, LANES) gets the
    running sums of the masses f(y) / f(0), y < N, by f(y + 1) / f(y) = mu / (y + 1)
    p(y~ - y - 1) / p(y~ - y), and

        Z_hi = cum[N - 1] + f(N) / (1 - mu / (N + 1)) >= Z,

    every ratio from y = N on being at most mu / (N + 1). The target u Z_hi (a uniform per
    lane) is found by counting the sums below it: loops of fixed length over lanes, with no
    exit to mispredict. A target past the sums walks the tail exactly; one past the tail
    (probability (Z_hi - Z) / Z_hi) draws the cell again by :func:`sample` (scratch ``up``,
    ``down``), so each y comes with probability f(y) / Z. ``work`` (2, LANES) is scratch:
    the last mass and the target."""
    N = cum.shape[0]
    for l in range(LANES):
        work[0, l] = 1.0
        cum[0, l] = 1.0
    for y in range(1, N):
        inv = _INV[y - 1]
        for l in range(LANES):
            work[0, l] *= mu_L[l] * inv * nr[base_L[l] - (y - 1)]
            cum[y, l] = cum[y - 1, l] + work[0, l]
    for l in range(n):
        f_next = work[0, l] * mu_L[l] * _INV[N - 1] * nr[base_L[l] - (N - 1)]
        work[1, l] = uniform(rs) * (cum[N - 1, l] + f_next / (1.0 - mu_L[l] * _INV[N]))
    for l in range(LANES):
        y_L[l] = 0
    for y in range(N):
        for l in range(LANES):
            y_L[l] += cum[y, l] <= work[1, l]
    for l in range(n):
        if y_L[l] == N:
            y_L[l] = _lane_tail(N - 1, work[0, l], cum[N - 1, l], work[1, l], t_L[l], mu_L[l],
                                kind, par, var, lr, p_L[l], rs, up, down)


@njit(cache=True)
def _lane_tail(y, f, cum, target, t, mu, kind, par, var, lr, p, rs, up, down):
    """The tail of :func:`sample_lanes` past mass f = f(y) and running sum ``cum``: the first
    y' > y whose running sum passes ``target``, or, once the masses are negligible, a new
    draw by :func:`sample`."""
    while True:
        f *= ratio(y, t, mu, kind, par[p], lr, p)
        y += 1
        cum += f
        if target < cum:
            return y
        if f <= TINY_MASS * cum:
            return sample(t, mu, kind, par[p], var[p], lr, p, rs, up, down)


@njit(cache=True)
def _walk_sample(m, t, mu, kind, par, lr, p, u):
    """Inverse-CDF draw at the uniform ``u`` by two full walks from the mode ``m`` (the
    first sums the masses to ``TINY_MASS``, the second inverts)."""
    z = 0.0
    for sweep in range(2):
        target = u * z
        cum, f, y = 1.0, 1.0, m
        if sweep == 1 and target < cum:
            return m
        while True:
            f *= ratio(y, t, mu, kind, par, lr, p)
            y += 1
            if not f > TINY_MASS * max(cum, z):
                break
            cum += f
            if sweep == 1 and target < cum:
                return y
        f, y = 1.0, m
        while y > 0:
            f *= inv_ratio(y, t, 1.0 / mu, kind, par, lr, p)
            y -= 1
            if not f > TINY_MASS * max(cum, z):
                break
            cum += f
            if sweep == 1 and target < cum:
                return y
        z = cum
    return m  # target within rounding of the total


# ---------------------------------------------------------------------------------------------
# mean and normalizer


@njit(cache=True)
def mean_log_z(t, mu, kind, par, var, lnorm, lr, lc, p):
    """(E[y], ln Z) of P(y | t, mu), Z = sum_y mu^y / y! p(t - y) with p normalized (mu
    floored at ``TINY_RATE``)."""
    mu = max(mu, TINY_RATE)
    m = mode(t, mu, kind, par, var, lr, p)
    total, first = 1.0, 0.0
    f, y = 1.0, m
    while True:
        f *= ratio(y, t, mu, kind, par, lr, p)
        y += 1
        if not f > TINY_MASS * total:
            break
        total += f
        first += (y - m) * f
    log_fm = log_noise(kind, t - m, par, lnorm, lr, lc, p)
    if m == 0:  # the commonest case (small counts): f(0) = p(t), no walk down
        return first / total, log_fm + math.log(total)
    f, y = 1.0, m
    inv_mu = 1.0 / mu
    while y > 0:
        f *= inv_ratio(y, t, inv_mu, kind, par, lr, p)
        y -= 1
        if not f > TINY_MASS * total:
            break
        total += f
        first += (y - m) * f
    log_fm += m * math.log(mu) - math.lgamma(m + 1.0)
    return m + first / total, log_fm + math.log(total)


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


@njit(cache=True)
def _mixture_pmf(t_m, code_m, mu_Sm, y_mW, kind, par, var, lnorm, lr, lc):
    n_samples, n_cells = mu_Sm.shape
    out_mW = np.zeros(y_mW.shape)
    for n in range(n_cells):
        p, t = code_m[n], t_m[n]
        for s in range(n_samples):
            if p < 0:  # noiseless: y = y~
                for w in range(y_mW.shape[1]):
                    out_mW[n, w] += (y_mW[n, w] == t) / n_samples
                continue
            mu = max(mu_Sm[s, n], TINY_RATE)
            log_z = mean_log_z(t, mu, kind, par[p], var[p], lnorm[p], lr, lc, p)[1]
            _add_pmf(t, mu, log_z, kind, par[p], var[p], lnorm[p], lr, lc, p, y_mW[n],
                     1.0 / n_samples, out_mW[n])
    return out_mW


@njit(cache=True)
def _add_pmf(t, mu, log_z, kind, par, var, lnorm, lr, lc, p, y_W, weight, out_W):
    """out_W += weight * P(y_W | t, mu) (ln Z given). On a grid of consecutive counts the
    pmf is taken at the grid's value nearest the mode and carried to the others by
    :func:`ratio` and :func:`inv_ratio` (a mass that underflows to 0 ends its walk);
    elsewhere from its logarithm at each value."""
    n = len(y_W)
    if n == 0:
        return
    log_mu = math.log(mu)
    y0 = y_W[0]
    consecutive = y0 >= 0
    for w in range(n):
        consecutive &= y_W[w] == y0 + w
    if not consecutive:
        for w in range(n):
            y = y_W[w]
            if y >= 0:
                log_f = (y * log_mu - math.lgamma(y + 1.0)
                         + log_noise(kind, t - y, par, lnorm, lr, lc, p))
                out_W[w] += weight * math.exp(log_f - log_z)
        return
    m = min(max(mode(t, mu, kind, par, var, lr, p), y0), y0 + n - 1)
    log_fm = m * log_mu - math.lgamma(m + 1.0) + log_noise(kind, t - m, par, lnorm, lr, lc, p)
    f_m = weight * math.exp(log_fm - log_z)
    f = f_m
    for y in range(m, y0 + n):  # up: f(y) to f(y + 1)
        out_W[y - y0] += f
        f *= ratio(y, t, mu, kind, par, lr, p)
        if f == 0.0:
            break
    f, inv_mu = f_m, 1.0 / mu
    for y in range(m, y0, -1):  # down: f(y) to f(y - 1)
        f *= inv_ratio(y, t, inv_mu, kind, par, lr, p)
        if f == 0.0:
            break
        out_W[y - 1 - y0] += f


def mixture_pmf(t_m: np.ndarray, code_m: np.ndarray, mu_Sm: np.ndarray, y_mW: np.ndarray,
                noise: Tables) -> np.ndarray:
    """Mean over samples s of P(y_mW[n] | t_m[n], mu_Sm[s, n]) under ``noise`` (cells of
    value ``code_m``), shape (m, W)."""
    return _mixture_pmf(np.asarray(t_m, dtype=np.int64), np.asarray(code_m, dtype=np.int64),
                        np.asarray(mu_Sm, dtype=float), np.asarray(y_mW, dtype=np.int64),
                        noise.kind, noise.par, noise.var, noise.lnorm, noise.lr, noise.lc)


def support(t: np.ndarray, var: np.ndarray, mu_lo: np.ndarray,
            mu_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell range [lo, hi] of y holding all but a negligible part of P(y | t, mu) for
    every mu in [mu_lo, mu_hi] with noise variance ``var``: the conditional lies between its
    two pulls, the rate and y~, widened by 12 standard deviations of the wider of them
    (+12)."""
    spread = 12.0 * np.sqrt(var + mu_hi + np.abs(t)) + 12.0
    lo = np.maximum(np.minimum(t, mu_lo) - spread, 0)
    hi = np.maximum(np.maximum(t, mu_hi) + spread, lo)
    return np.floor(lo).astype(np.int64), np.ceil(hi).astype(np.int64)
