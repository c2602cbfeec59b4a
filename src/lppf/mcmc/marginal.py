"""Langevin moves of the factors with the true counts summed out (``private-collapsed``).

Under heavy noise the Gibbs sweep is slow for a reason of its own: it draws the true counts y
given the rates mu, then mu given y, and when the noise hides most of what y~ says about mu,
y given mu is little more than mu itself, so each sweep moves mu by a small step (the
fraction of missing information; Liu 1994). These moves skip the latent layer: each row
theta_d of Theta given Phi (then each column phi_v of Phi given Theta) takes one
Metropolis-adjusted Langevin step (MALA; Roberts and Tweedie 1996) on the exact conditional
with y summed out. In log space, u_k = ln theta_dk,

    ln p(u | Phi, y~) = sum_v [ln Z_dv(mu_dv) - mu_dv] + sum_k [a0 u_k - b0 theta_dk] + const,
    Z(mu) = sum_y mu^y / y! p_noise(y~ - y)          (:mod:`lppf.cells`),
    d/du_k = theta_dk sum_v phi_kv (E[y_dv | y~_dv, mu_dv] / mu_dv - 1) + a0 - b0 theta_dk,

summed over the observed cells (a noiseless cell is Poisson: Z = mu^y~ / y~!); each cell's
E[y] and ln Z come from a closed form, the power series of :mod:`lppf.series` or the walk of
its pmf (:func:`lppf.cells.row`), and the ln S of the series cells of a row are summed as
one running product (:func:`lppf.series.add_log`). The proposal
is ``u' = u + (h^2 / 2) s^2 g(u) + h s xi``, xi ~ N(0, I), h = :func:`step`, with the
per-entry scale s_k = min(I_k^(-1/2), ``SD_MAX``) from an approximate Fisher information at u,
``I_k = theta_dk^2 sum_v phi_kv^2 / (mu_dv + var_dv) + a0 + b0 theta_dk`` (var_dv the noise
variance: a Poisson count seen through noise of that variance), and the step is accepted with
the usual ratio, the reverse proposal's scale taken at u'. A proposal with some
|u'_k - u_k| > ``JUMP_MAX`` (7 sd of the random part h s xi: only the drift of cells the
noise hides goes that far) is rejected unevaluated; the condition is symmetric in u and u',
so the move stays exact, and it spares walks of pmfs at rates e^50 times their counts.
Rows are independent given Phi, so they run in parallel over fixed chunks (each reseeded), and
results do not depend on the thread count. The moves leave p(Theta, Phi | y~) invariant; the
sweep's count update then draws y afresh from its conditional given y~ and the new mu, so
together they are an exact move of (Theta, Phi, y). They pay where the noise hides most of the
information: :func:`use`. The community model's moves (:class:`CommunityMoves`) are the same
on its rows of Theta, in turn, and on Pi.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from lppf import cells, series
from lppf._numba import CHUNK, at, at_most, chunk_seeds, rng_state, uniform
from lppf.conditional import TINY_RATE
from lppf.draws import _normal
from lppf.noise import variance
from lppf.noise_conditional import GEOMETRIC, tables

STEP = 1.4  # h of a block of up to BLOCK entries: about half the proposals accepted
BLOCK = 5  # larger blocks step by STEP * sqrt(BLOCK / entries) (Pi of C = 5: 0.63)
SD_MAX = 2.0  # largest proposal scale in ln theta (entries the data barely inform)
JUMP_MAX = 20.0  # largest |u'_k - u_k| of a proposal; beyond it rejected unevaluated
NOISE_SHARE = 0.5  # the moves run when the noise's share of the information is at least this


def step(entries: int) -> float:
    """The step h of a block of ``entries`` log factors."""
    return STEP * min(1.0, math.sqrt(BLOCK / entries))


def noise_share(Ytil: np.ndarray, param: np.ndarray, mask: np.ndarray, mechanism: str) -> float:
    """``s2 / (s2 + n)`` over the observed cells: ``s2`` the summed noise variance, ``n`` the
    summed positive privatized counts; 0 when no cell is noisy."""
    param = np.broadcast_to(np.asarray(param, dtype=np.float64), Ytil.shape)[~mask]
    values, counts = np.unique(param[param > 0], return_counts=True)
    s2 = float(sum(k * variance(mechanism, v) for v, k in zip(values, counts, strict=True)))
    n = float(np.maximum(Ytil[~mask], 0).sum())
    return s2 / (s2 + n) if s2 > 0.0 else 0.0


def use(method: str, sampler: str, Ytil: np.ndarray, param: np.ndarray, mask: np.ndarray,
        mechanism: str) -> bool:
    """Whether a fit runs the moves: ``private-collapsed`` under sampler "auto" when
    :func:`noise_share` of its data is at least ``NOISE_SHARE``."""
    if method != "private-collapsed" or sampler != "auto":
        return False
    return noise_share(Ytil, param, mask, mechanism) >= NOISE_SHARE


class Moves:
    """The moves of the PMF model for the data of a fit (``lppf.validation.FitData``): noise
    tables (with their series, :mod:`lppf.series`) and transposed copies, built once and
    shared by its chains."""

    def __init__(self, data):
        Y = np.ascontiguousarray(data.Y, dtype=np.int64)
        param = np.ascontiguousarray(np.broadcast_to(data.alpha, Y.shape), dtype=np.float64)
        t = tables(data.mechanism, param, Y)
        self.t, self.fix = t, data.fix
        self.a = np.exp(t.par) if t.kind == GEOMETRIC else np.zeros(0)
        self.rows = (Y, np.ascontiguousarray(t.code), np.ascontiguousarray(data.mask))
        self.cols = tuple(np.ascontiguousarray(X.T) for X in self.rows)

    def __call__(self, Theta: np.ndarray, Phi: np.ndarray, a0: float, b0: float,
                 rng: np.random.Generator) -> tuple[float, float]:
        """One step on every row of Theta, then on every column of Phi, in place (a factor
        held fixed is left alone); returns their acceptance rates (NaN when not moved)."""
        rates = [math.nan, math.nan]
        # (E[y], ln Z less ln S, S) of every cell at the rates the row moves leave, for the
        # column moves
        cache = np.zeros((3, *Theta.shape[:1], Phi.shape[1]))
        if "theta" not in self.fix:
            rates[0] = self._move_rows(Theta, Phi, self.rows, cache, False, a0, b0, rng)
        if "phi" not in self.fix:
            Phi_T = np.ascontiguousarray(Phi.T)
            # a C-ordered copy: the kernel is compiled for one layout
            cache_T = np.ascontiguousarray(cache.transpose(0, 2, 1))
            rates[1] = self._move_rows(Phi_T, np.ascontiguousarray(Theta.T), self.cols,
                                       cache_T, "theta" not in self.fix, a0, b0, rng)
            Phi[...] = Phi_T.T
        return rates[0], rates[1]

    def _move_rows(self, X, F, arrays, cache, cached, a0, b0, rng) -> float:
        t, s = self.t, self.t.series
        seeds = chunk_seeds(rng, len(X))
        accepted = np.zeros(len(X))
        with at_most(len(seeds)):
            _moves(X, F, *arrays, t.kind, self.a, t.par, t.var, t.lnorm, t.lr, t.lc, s.lo,
                   s.coef, s.ratio, s.log_p, float(a0), float(b0), step(X.shape[1]), seeds,
                   accepted, cache[0], cache[1], cache[2], cached)
        return float(accepted.mean()) if len(X) else math.nan


@njit(cache=True, inline="always")
def _row_terms(r, code, mask, var, mu_C, e_C, lz_C, s_C, w_C, info_C):
    """sum over the unmasked cells of row ``r`` of ln Z - mu (the values of
    :func:`lppf.cells.row`), and each cell's gradient factor and information into ``w_C``,
    ``info_C`` (:func:`_weights`; 0 on masked cells)."""
    out, prod = 0.0, 1.0
    for c in range(len(mu_C)):
        if mask[r, c]:
            w_C[c] = info_C[c] = 0.0
            continue
        out += lz_C[c] - mu_C[c]
        out, prod = series.add_log(out, prod, s_C[c])
        w_C[c], info_C[c] = _weights(e_C[c], mu_C[c], at(code, r, c), var)
    return out + math.log(prod)


@njit(cache=True, inline="always")
def _weights(e, mu, p, var):
    """A cell's (E[y] / mu - 1, 1 / (mu + var)): the factor of its gradient and its
    approximate Fisher information per unit rate."""
    return e / mu - 1.0, 1.0 / (mu + (var[p] if p >= 0 else 0.0))


@njit(cache=True, inline="always")
def _prior_terms(out, x, g, s, a0, b0):
    """The Gamma(a0, b0) prior of the log factors ``x``: adds its log density to ``out``
    (returned) and its gradient to the sums ``g``, and turns the information sums ``s`` into
    proposal scales."""
    for k in range(len(x)):
        out += a0 * math.log(x[k]) - b0 * x[k]
        g[k] = x[k] * g[k] + a0 - b0 * x[k]
        s[k] = min(1.0 / math.sqrt(x[k] * x[k] * s[k] + a0 + b0 * x[k]), SD_MAX)
    return out


@njit(cache=True)
def _target(r, x, F, Y, code, mask, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p,
            a0, b0, g, s, e_C, lz_C, s_C, cached, mu_C, w_C, info_C, ints, flts):
    """ln p(u | F, y~) of row ``r`` at theta = ``x`` (up to a constant); its gradient in u
    into ``g`` and the proposal scales into ``s``. Each cell's (E[y], ln Z - ln S, S) is
    read from ``e_C``, ``lz_C``, ``s_C`` when ``cached``, else computed there
    (:func:`lppf.cells.row`, scratch ``ints``, ``flts``). Scratch (C,): ``mu_C`` gets the
    rates, ``w_C`` and ``info_C`` the cells' gradient factors and information."""
    K, C = F.shape
    mu_C[:] = 0.0
    for k in range(K):
        xk = x[k]
        for c in range(C):
            mu_C[c] += xk * F[k, c]
    for c in range(C):
        mu_C[c] = max(mu_C[c], TINY_RATE)
    if not cached:
        cells.row(r, Y, code, mask, mu_C, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio,
                  log_p, e_C, lz_C, s_C, ints, flts)
    out = _row_terms(r, code, mask, var, mu_C, e_C, lz_C, s_C, w_C, info_C)
    for k in range(K):
        gk, sk = 0.0, 0.0
        for c in range(C):
            f = F[k, c]
            gk += f * w_C[c]
            sk += f * f * info_C[c]
        g[k], s[k] = gk, sk
    return _prior_terms(out, x, g, s, a0, b0)


@njit(cache=True, inline="always")
def _propose(x, g, s, h, rs, spare, u1, x1):
    """The proposal from ``x`` (gradient ``g``, scales ``s``) into ``u1`` (logs) and ``x1``;
    returns ln q(u1 | u) up to the normal constants."""
    log_q = 0.0
    for k in range(len(x)):
        xi = _normal(rs, spare)
        u1[k] = math.log(x[k]) + 0.5 * h * h * s[k] * s[k] * g[k] + h * s[k] * xi
        x1[k] = math.exp(u1[k])
        log_q -= 0.5 * xi * xi + math.log(s[k])
    return log_q


@njit(cache=True, inline="always")
def _reverse(x, u1, g1, s1, h):
    """ln q(u | u1) of the way back to ``x`` from ``u1`` (gradient ``g1``, scales ``s1``)."""
    log_q = 0.0
    for k in range(len(x)):
        back = (math.log(x[k]) - u1[k] - 0.5 * h * h * s1[k] * s1[k] * g1[k]) / (h * s1[k])
        log_q -= 0.5 * back * back + math.log(s1[k])
    return log_q


@njit(cache=True, inline="always")
def _usable(x, u1, x1):
    """Whether the proposal ``u1`` (``x1`` = e^u1) from ``x`` is evaluated: every x1 finite
    and positive, every |u1 - ln x| <= ``JUMP_MAX``."""
    for k in range(len(x1)):
        if not (x1[k] > 0.0 and x1[k] < math.inf and abs(u1[k] - math.log(x[k])) <= JUMP_MAX):
            return False
    return True


@njit(cache=True, parallel=True)
def _moves(X, F, Y, code, mask, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p, a0,
           b0, h, seeds, accepted, E_RC, LZ_RC, S_RC, cached):
    """One MALA step on each row of ``X`` (R, K) given ``F`` (K, C), rows in chunks of
    ``CHUNK``, each chunk on the xoshiro stream of its seed; ``accepted`` (R,) gets 0 or 1.
    ``cached``: the cells' (E[y], ln Z - ln S, S) at the present rates are read from
    ``E_RC``, ``LZ_RC``, ``S_RC``; else those at the rates each row ends with are written
    there."""
    R, K = X.shape
    C = F.shape[1]
    tab = (Y, code, mask, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p, a0, b0)
    for chunk in prange(len(seeds)):
        rs = rng_state(seeds[chunk])
        spare = np.full(1, np.nan)
        g, s, g1, s1 = np.empty(K), np.empty(K), np.empty(K), np.empty(K)
        u1, x1 = np.empty(K), np.empty(K)
        cells0, cells1 = np.empty((3, C)), np.empty((3, C))  # (E[y], ln Z - ln S, S)
        mu_C, w_C, info_C = np.empty(C), np.empty(C), np.empty(C)
        ints, flts = np.empty((6, C), np.int64), np.empty((5, C))  # of lppf.cells.row
        work = (mu_C, w_C, info_C, ints, flts)
        for r in range(chunk * CHUNK, min((chunk + 1) * CHUNK, R)):
            x = X[r]
            if cached:
                f = _target(r, x, F, *tab, g, s, E_RC[r], LZ_RC[r], S_RC[r], True, *work)
            else:
                f = _target(r, x, F, *tab, g, s, cells0[0], cells0[1], cells0[2], False, *work)
            forward = _propose(x, g, s, h, rs, spare, u1, x1)
            move = False
            if _usable(x, u1, x1):
                f1 = _target(r, x1, F, *tab, g1, s1, cells1[0], cells1[1], cells1[2], False,
                             *work)
                move = (math.log(1.0 - uniform(rs))
                        < f1 - f + _reverse(x, u1, g1, s1, h) - forward)
            accepted[r] = 1.0 if move else 0.0
            if move:
                X[r, :] = x1
            if not cached:
                kept = cells1 if move else cells0
                E_RC[r, :], LZ_RC[r, :], S_RC[r, :] = kept[0], kept[1], kept[2]


# ---------------------------------------------------------------- community model


class CommunityMoves:
    """The moves of the community model (``lppf.mcmc.community.Problem`` of a
    ``private-collapsed`` fit): actors one after another, as the Gibbs sweep (theta_i and
    theta_j share the cells ij and ji), each row theta_i given the others and Pi, then Pi
    given Theta as one block of C x C entries.

    Each cell's (mu, E[y], ln Z - ln S, S) at the present factors is kept in a cache (4, V, V)
    over a call: filled once before the actors' steps, it gives each actor's target at its
    present row (the cells ij and ji of an accepted step are written back), and then Pi's at
    the present Pi, so a call evaluates 4 V^2 cells where recomputing both ends of every step
    took 6 V^2. (The diagonal is always held out: a cell ii would be quadratic in theta_i.)"""

    def __init__(self, problem):
        Y = np.ascontiguousarray(problem.Ytil_VV, dtype=np.int64)
        t = tables(problem.mechanism, problem.alpha_VV, Y)
        self.t = t
        self.a = np.exp(t.par) if t.kind == GEOMETRIC else np.zeros(0)
        self.rows = (Y, np.ascontiguousarray(t.code), ~problem.obs_VV)  # actor i's cells ij
        self.cols = tuple(np.ascontiguousarray(X.T) for X in self.rows)  # and ji
        self.fix_theta, self.fix_pi = problem.fix_theta, problem.fix_pi

    def __call__(self, Theta: np.ndarray, Pi: np.ndarray, a0: float, b0: float,
                 rng: np.random.Generator) -> tuple[float, float]:
        """One step on every actor's row of Theta in turn, then on Pi, in place (a factor
        held fixed is left alone); returns their acceptance rates (NaN when not moved)."""
        t, s, rates = self.t, self.t.series, [math.nan, math.nan]
        seed_theta, seed_pi = (int(x) for x in rng.integers(2**31, size=2))
        noise = (t.kind, self.a, t.par, t.var, t.lnorm, t.lr, t.lc, s.lo, s.coef, s.ratio,
                 s.log_p)
        cache = np.empty((4, len(Theta), len(Theta)))  # see the class docstring
        if not self.fix_theta:
            accepted = np.zeros(len(Theta))
            _actor_moves(Theta, Pi, *self.rows, *self.cols, *noise, float(a0), float(b0),
                         step(Theta.shape[1]), seed_theta, accepted, cache)
            rates[0] = float(accepted.mean())
        if not self.fix_pi:
            rates[1] = float(_pi_move(Theta, Pi, *self.rows, *noise, float(a0), float(b0),
                                      step(Pi.size), seed_pi, cache, not self.fix_theta))
        return rates[0], rates[1]


@njit(cache=True)
def _all_cells(M, Y, code, held, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p,
               cache):
    """Every cell's (mu, E[y], ln Z - ln S, S) at the rates ``M`` (V, V) into ``cache``
    (4, V, V; held cells: garbage)."""
    V = M.shape[0]
    ints, flts = np.empty((6, V), np.int64), np.empty((5, V))
    for i in range(V):
        for j in range(V):
            cache[0, i, j] = max(M[i, j], TINY_RATE)
        cells.row(i, Y, code, held, cache[0, i], kind, a, par, var, lnorm, lr, lc, lo, coef,
                  ratio, log_p, cache[1, i], cache[2, i], cache[3, i], ints, flts)


@njit(cache=True)
def _actor_target(i, x, Q, R, Y, code, held, Y_T, code_T, held_T, kind, a, par, var, lnorm, lr,
                  lc, lo, coef, ratio, log_p, a0, b0, g, s, W, ints, flts, cache, cached):
    """ln p(u | the others, y~) of actor ``i`` at theta_i = ``x``: its cells ij (rates
    x . Q[j], Q = Theta Pi^T: row i of ``Y``) and ji (x . R[j], R = Theta Pi: row i of
    ``Y_T``, Y transposed); ``held`` marks the cells without a count term. Gradient into
    ``g``, proposal scales into ``s``. ``W`` (2, 6, V) gets per side the cells' rates, the
    three values of :func:`lppf.cells.row` (read from row and column i of ``cache`` when
    ``cached``, for x the present row), the gradient factors and information; ``ints``,
    ``flts`` are the scratch of :func:`lppf.cells.row`."""
    V, C = Q.shape
    out = 0.0
    for side in range(2):
        where = (Y, code, held) if side == 0 else (Y_T, code_T, held_T)
        if cached:
            for q in range(4):
                for j in range(V):
                    W[side, q, j] = cache[q, i, j] if side == 0 else cache[q, j, i]
        else:
            F = Q if side == 0 else R
            mu_C = W[side, 0]
            for j in range(V):
                mu = 0.0
                for k in range(C):
                    mu += x[k] * F[j, k]
                mu_C[j] = max(mu, TINY_RATE)
            cells.row(i, *where, mu_C, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p,
                      W[side, 1], W[side, 2], W[side, 3], ints, flts)
        out += _row_terms(i, where[1], where[2], var, W[side, 0], W[side, 1], W[side, 2],
                          W[side, 3], W[side, 4], W[side, 5])
    for k in range(C):
        gk, sk = 0.0, 0.0
        for side in range(2):
            F = Q if side == 0 else R
            for j in range(V):
                f = F[j, k]
                gk += f * W[side, 4, j]
                sk += f * f * W[side, 5, j]
        g[k], s[k] = gk, sk
    return _prior_terms(out, x, g, s, a0, b0)


@njit(cache=True)
def _actor_moves(Theta, Pi, Y, code, held, Y_T, code_T, held_T, kind, a, par, var, lnorm, lr,
                 lc, lo, coef, ratio, log_p, a0, b0, h, seed, accepted, cache):
    """One MALA step on each actor's row of ``Theta`` (V, C) in turn, on the xoshiro stream
    of ``seed``; ``accepted`` (V,) gets 0 or 1, ``cache`` (4, V, V) the cells at the
    factors left (:func:`_all_cells`)."""
    V, C = Theta.shape
    Q, R = Theta @ Pi.T, Theta @ Pi
    noise = (kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p)
    _all_cells(Theta @ Q.T, Y, code, held, *noise, cache)
    rs = rng_state(seed)
    spare = np.full(1, np.nan)
    g, s, g1, s1 = np.empty(C), np.empty(C), np.empty(C), np.empty(C)
    u1, x1 = np.empty(C), np.empty(C)
    W, ints, flts = np.empty((2, 6, V)), np.empty((6, V), np.int64), np.empty((5, V))
    tab = (Y, code, held, Y_T, code_T, held_T, *noise, a0, b0)
    for i in range(V):
        x = Theta[i].copy()
        f = _actor_target(i, x, Q, R, *tab, g, s, W, ints, flts, cache, True)
        forward = _propose(x, g, s, h, rs, spare, u1, x1)
        accepted[i] = 0.0
        if not _usable(x, u1, x1):
            continue
        f1 = _actor_target(i, x1, Q, R, *tab, g1, s1, W, ints, flts, cache, False)
        if math.log(1.0 - uniform(rs)) < f1 - f + _reverse(x, u1, g1, s1, h) - forward:
            Theta[i, :] = x1
            Q[i, :] = Pi @ x1
            R[i, :] = Pi.T @ x1
            accepted[i] = 1.0
            for q in range(4):
                for j in range(V):
                    cache[q, i, j] = W[0, q, j]
                    cache[q, j, i] = W[1, q, j]


@njit(cache=True)
def _pi_target(x, Theta, Y, code, held, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio,
               log_p, a0, b0, g, s, cache, cached):
    """ln p(ln Pi | Theta, y~) at Pi = ``x`` (C * C, row-major); gradient into ``g``, proposal
    scales into ``s``: with the cells' gradient factors W and information I (V, V; 0 where
    held), g = Theta^T W Theta and s = (Theta o Theta)^T I (Theta o Theta), flattened. The
    cells (:func:`_all_cells`) are read from ``cache`` when ``cached`` (x the present Pi),
    else computed there."""
    V, C = Theta.shape
    if not cached:
        _all_cells(Theta @ (x.reshape(C, C) @ Theta.T), Y, code, held, kind, a, par, var, lnorm,
                   lr, lc, lo, coef, ratio, log_p, cache)
    W, info = np.empty((V, V)), np.empty((V, V))
    out = 0.0
    for i in range(V):
        out += _row_terms(i, code, held, var, cache[0, i], cache[1, i], cache[2, i],
                          cache[3, i], W[i], info[i])
    T2 = Theta * Theta
    g[:] = (Theta.T @ (W @ Theta)).ravel()
    s[:] = (T2.T @ (info @ T2)).ravel()
    return _prior_terms(out, x, g, s, a0, b0)


@njit(cache=True)
def _pi_move(Theta, Pi, Y, code, held, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p,
             a0, b0, h, seed, cache, cached):
    """One MALA step on ``Pi`` (C, C) in place, on the xoshiro stream of ``seed``; returns 1.0
    when accepted, else 0.0. ``cache``: the cells at the present factors when ``cached``
    (:func:`_actor_moves`), else scratch."""
    n = Pi.size
    x = Pi.ravel().copy()
    rs = rng_state(seed)
    spare = np.full(1, np.nan)
    g, s, g1, s1 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    u1, x1 = np.empty(n), np.empty(n)
    tab = (Y, code, held, kind, a, par, var, lnorm, lr, lc, lo, coef, ratio, log_p, a0, b0)
    f = _pi_target(x, Theta, *tab, g, s, cache, cached)
    forward = _propose(x, g, s, h, rs, spare, u1, x1)
    if not _usable(x, u1, x1):
        return 0.0
    f1 = _pi_target(x1, Theta, *tab, g1, s1, cache, False)
    if math.log(1.0 - uniform(rs)) < f1 - f + _reverse(x, u1, g1, s1, h) - forward:
        Pi[:, :] = x1.reshape(Pi.shape)
        return 1.0
    return 0.0
