"""Gibbs sampler for the overlapping community model of a network of counts.

``Y_VV[i, j]`` counts messages from actor i to actor j, ``y_ij ~ Pois(mu_ij)`` with
``mu_ij = sum_cd theta_ic theta_jd pi_cd`` (``Theta_VC``, ``Pi_CC``), ``Gamma(a0, b0)`` priors
(shape, rate). Self-loops and held-out cells (``data.mask``) carry neither counts nor rate
terms. One iteration:

1. private methods: resample the true counts ``y`` given ``y~`` and ``mu``
   (:mod:`lppf.mcmc.counts`);
2. allocate every observed ``y_ij`` over the C x C pairs,
   ``(y_ijcd) ~ Mult(y_ij, theta_ic theta_jd pi_cd / mu_ij)``;
3. ``pi_cd ~ Gamma(a0 + sum_ij y_ijcd, b0 + sum_(ij observed) theta_ic theta_jd)``;
4. actors one after another (``theta_i`` and ``theta_j`` are coupled, so a joint update of
   all actors is not a Gibbs step): ``theta_ic ~ Gamma(a0 + n_ic, b0 + sum_(j: ij obs)
   (Pi theta_j)_c + sum_(j: ji obs) (Pi^T theta_j)_c)`` with ``n_ic`` the counts of i in role
   c as sender and receiver. Column sums of Theta are kept up to date, so a sweep costs
   O(V C^2 + held-out cells x C).

The model mixes poorly (local modes). Every chain starts at the best of ``INIT_CHAINS`` EM
fits of the observed data (:mod:`lppf.start`), ranked by the observed-data log
likelihood, run once from chain 0's generator and shared (as for PMF); their scores are
returned in ``extra["start_loglik"]`` to show the spread. R-hat then measures how far the
chains drift apart from one start: on S3's data the chains of a fit reach different modes
from the shared start as they did from their own (docs/findings.md).
A ``private-collapsed`` chain begins its burn-in with ``private``'s count update
(:class:`CommunityChain`).

Fits of fixed counts (``naive``, ``nonprivate``) with free factors under a prior shape of at
least 1 sample by HMC instead, unless the setting ``sampler`` says otherwise
(:func:`uses_hmc`, :class:`HMCChain`, :mod:`lppf.mcmc.hmc`):
with the counts fixed, the allocation can be summed out, and the Gibbs sweep's coupling of
the factors to an allocation they nearly determine left most such chains short of the
convergence criterion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numba import njit, prange

from lppf._numba import (
    CHUNK,
    at_most,
    blas_single,
    chunk_partials,
    chunk_seeds,
    n_chunks,
    rng_state,
    total,
    uniform,
)
from lppf._numba import threads as numba_threads
from lppf.draws import multinomial
from lppf.log_densities import count_loglik, gamma_logpdf_sum, log_factorial
from lppf.mcmc import counts, hmc, marginal
from lppf.mcmc._driver import run_chains
from lppf.noise_conditional import Tables, fit_tables
from lppf.noise_conditional import count_loglik as noise_count_loglik
from lppf.results import FitResult
from lppf.start import RESTARTS, best_start
from lppf.validation import PRIVATE_METHODS, FitData

INIT_CHAINS = RESTARTS["community"]  # EM restarts of the chains' shared start
FLOOR = 1e-100  # gamma draws are floored here so that products of three never underflow
AUGMENTED_BURNIN = 0.5  # share of a private-collapsed chain's burn-in with lambda kept
SHARED_START = True  # every chain from chain 0's EM start (False: one start per chain)
# Counts up to this many units per community are split unit by unit (2 uniforms and two
# linear searches, 20-30 ns a unit), larger ones by C + C^2 conditional binomials. Unit by
# unit would be cheaper up to 12 (C = 3) to 30 (C = 20) units per community
# (bench_alloc.py --model community). A Geweke test failed at 16; over 160 seeds that
# shift is the skew of the test's z, not the unit split (bench_geweke_seeds.py). Moving the
# switch changes every community fit and is not done yet, see
# docs/findings.md, "The community model's allocation".
_UNITS_PER_C = 1


@dataclass(frozen=True)
class Problem:
    """Constant inputs of a fit.

    Ytil_VV : observed (privatized or true) counts; alpha_VV : noise levels broadcast to
    (V, V); obs_VV : True where a cell is used (off-diagonal and not held out);
    out_ptr/out_idx, in_ptr/in_idx : held-out off-diagonal cells by row (CSR) and by column;
    out_rows : their row indices. mechanism : the noise of y~ (alpha_VV its parameter);
    noise : its kernel tables for the discrete Gaussian and Skellam noise (private-collapsed).
    """

    Ytil_VV: np.ndarray
    alpha_VV: np.ndarray
    obs_VV: np.ndarray
    out_ptr: np.ndarray
    out_idx: np.ndarray
    in_ptr: np.ndarray
    in_idx: np.ndarray
    out_rows: np.ndarray
    method: str
    a0: float
    b0: float
    fix_theta: bool
    fix_pi: bool
    mechanism: str = "geometric"
    noise: Tables | None = None  # the discrete Gaussian or Skellam noise (private-collapsed)


@dataclass
class State:
    """Sampler state: factors, current true counts and (``private``) the noise rates."""

    Theta_VC: np.ndarray
    Pi_CC: np.ndarray
    Y_VV: np.ndarray
    lam_plus_VV: np.ndarray | None = None
    lam_minus_VV: np.ndarray | None = None


def make_problem(data: FitData, method: str, a0: float, b0: float) -> Problem:
    """Precompute the held-out structure of validated ``data`` (:mod:`lppf.validation`)."""
    Y = np.asarray(data.Y)
    V = Y.shape[0]
    alpha = np.ascontiguousarray(np.broadcast_to(np.asarray(data.alpha, float), (V, V)))
    Y = Y.astype(np.int64)  # the dtypes lppf.mcmc.counts is compiled for in the PMF sampler too
    held = np.array(data.mask, dtype=bool, copy=True)
    np.fill_diagonal(held, True)
    if method == "naive":
        Y = np.maximum(Y, 0)
    rows, cols = np.nonzero(held & ~np.eye(V, dtype=bool))
    by_col = np.lexsort((rows, cols))
    return Problem(
        Ytil_VV=Y, alpha_VV=alpha, obs_VV=~held,
        out_ptr=np.searchsorted(rows, np.arange(V + 1)), out_idx=cols,
        in_ptr=np.searchsorted(cols[by_col], np.arange(V + 1)), in_idx=rows[by_col], out_rows=rows,
        method=method, a0=float(a0), b0=float(b0),
        fix_theta="theta" in data.fix, fix_pi="pi" in data.fix,
        mechanism=data.mechanism,
        noise=fit_tables(data) if method == "private-collapsed" else None,
    )


def is_private(problem: Problem) -> bool:
    return problem.method in PRIVATE_METHODS


# ---------------------------------------------------------------- numba kernels


@njit(cache=True, inline="always")
def _search(cum, u):
    """Smallest k with cum[k] > u (cum non-decreasing, u < cum[-1])."""
    k = 0
    while k < cum.shape[0] - 1 and cum[k] <= u:
        k += 1
    return k


@njit(cache=True, inline="always")
def _sender_weights(theta_i, Q_CC, w, cum):
    """``w[c] = theta_ic Q[c, -1]`` and their cumulative sums ``cum`` (C,); returns mu_ij."""
    C = theta_i.shape[0]
    mu = 0.0
    for c in range(C):
        w[c] = theta_i[c] * Q_CC[c, C - 1]
        mu += w[c]
        cum[c] = mu
    return mu


@njit(cache=True, inline="always")
def _split_units(y, Q_CC, cum, mu, send_C, recv_C, pair_CC, rs):
    """Split y unit by unit: ``c`` from the cumulative sender weights ``cum`` (total mu),
    then ``d | c`` from ``Q[c]``, one uniform and a linear search each."""
    C = cum.shape[0]
    for _ in range(y):
        c = _search(cum, uniform(rs) * mu)
        d = _search(Q_CC[c], uniform(rs) * Q_CC[c, C - 1])
        send_C[c] += 1
        recv_C[d] += 1
        pair_CC[c, d] += 1


@njit(cache=True, inline="always")
def _split_binomials(y, Q_CC, F, N, send_C, recv_C, pair_CC, rs):
    """Split y by conditional binomials: the senders' roles from the weights ``F[0]``, then
    the receivers' roles of each: O(C^2) draws whatever y. ``F[1]`` and ``N`` (2, C) are
    scratch."""
    C = F.shape[1]
    w, cum = F[0], F[1]
    multinomial(y, w, N[0], cum, rs)
    for c in range(C):
        if N[0, c] == 0:
            continue
        send_C[c] += N[0, c]
        w[0] = Q_CC[c, 0]
        for d in range(1, C):
            w[d] = Q_CC[c, d] - Q_CC[c, d - 1]
        multinomial(N[0, c], w, N[1], cum, rs)
        for d in range(C):
            recv_C[d] += N[1, d]
            pair_CC[c, d] += N[1, d]


@njit(cache=True, inline="always")
def _allocate_cell(y, theta_i, Q_CC, send_C, recv_C, pair_CC, F, N, rs):
    """Add ``Mult(y, theta_ic theta_jd pi_cd / mu_ij)`` to the sender, receiver and pair
    counts. ``Q_CC[c, d] = sum_(d' <= d) pi_cd' theta_jd'`` (receiver j's cumulative
    weights): ``c`` is drawn with weights ``theta_ic Q[c, -1]``, then ``d | c`` from
    ``Q[c]``. Up to ``_UNITS_PER_C`` C units: unit by unit; more: conditional binomials
    (O(C^2) whatever y). Uniforms from the xoshiro state ``rs``. Returns mu_ij. ``F`` (2, C)
    float and ``N`` (2, C) int are scratch."""
    C = theta_i.shape[0]
    mu = _sender_weights(theta_i, Q_CC, F[0], F[1])
    if y <= _UNITS_PER_C * C:
        _split_units(y, Q_CC, F[1], mu, send_C, recv_C, pair_CC, rs)
    else:
        _split_binomials(y, Q_CC, F, N, send_C, recv_C, pair_CC, rs)
    return mu


@njit(parallel=True, cache=True, nogil=True)
def _allocate_chunks(Y_VV, obs_VV, Theta_VC, Q_VCC, seeds, send_VC, recv_XVC, pair_XCC, ll_X):
    """Allocate observed counts over sender/receiver roles, row chunks in parallel, each
    reseeded from ``seeds``. ``Q_VCC[j] = cumsum_d(pi_cd theta_jd)``. Adds the sender counts
    to ``send_VC`` (V, C) (row i belongs to one chunk) and chunk x's receiver counts, pair
    counts and ``sum_(ij observed, y>0) [y log mu_ij - log y!]`` to ``recv_XVC[x]`` (V, C),
    ``pair_XCC[x]`` (C, C) and ``ll_X[x]`` (:func:`lppf._numba.chunk_partials`)."""
    V, C = Theta_VC.shape
    for x in prange(len(seeds)):
        rs = rng_state(seeds[x])
        F, N = np.empty((2, C)), np.empty((2, C), np.int64)
        for i in range(x * CHUNK, min((x + 1) * CHUNK, V)):
            for j in range(V):
                y = Y_VV[i, j]
                if y <= 0 or not obs_VV[i, j]:
                    continue
                mu = _allocate_cell(y, Theta_VC[i], Q_VCC[j], send_VC[i], recv_XVC[x, j],
                                    pair_XCC[x], F, N, rs)
                ll_X[x] += y * math.log(mu) - log_factorial(y)


@njit(cache=True, nogil=True)
def _receiver_cumsums(Theta_VC, Pi_CC):
    """``Q_VCC[j, c, d] = sum_(d' <= d) pi_cd' theta_jd'`` (V, C, C)."""
    V, C = Theta_VC.shape
    Q_VCC = np.empty((V, C, C))
    for j in range(V):
        for c in range(C):
            s = 0.0
            for d in range(C):
                s += Pi_CC[c, d] * Theta_VC[j, d]
                Q_VCC[j, c, d] = s
    return Q_VCC


def allocate(Y_VV: np.ndarray, obs_VV: np.ndarray, Theta_VC: np.ndarray, Pi_CC: np.ndarray,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Sender counts (V, C), receiver counts (V, C), pair counts (C, C) of the allocation
    ``(y_ijcd) ~ Mult(y_ij, theta_ic theta_jd pi_cd / mu_ij)`` of the observed counts, and
    ``sum_(ij observed, y>0) [y log mu_ij - log y!]``."""
    V, C = Theta_VC.shape
    seeds = chunk_seeds(rng, V)
    Q_VCC = _receiver_cumsums(Theta_VC, Pi_CC)
    send_VC = np.zeros((V, C), np.int64)
    recv_XVC = chunk_partials(len(seeds), (V, C), np.int64)
    pair_XCC = chunk_partials(len(seeds), (C, C), np.int64)
    ll_X = chunk_partials(len(seeds))
    _allocate_chunks(Y_VV, obs_VV, Theta_VC, Q_VCC, seeds, send_VC, recv_XVC, pair_XCC, ll_X)
    return send_VC, total(recv_XVC), total(pair_XCC), float(total(ll_X))


@njit(cache=True, nogil=True)
def _update_theta(Theta_VC, Pi_CC, shape_VC, b0, out_ptr, out_idx, in_ptr, in_idx, seed):
    """Sweep the actors in order, drawing each row of Theta in place from its conditional.

    ``u = sum_(j: ij obs) theta_j``, ``v = sum_(j: ji obs) theta_j`` from the running column
    sums minus the actor itself and its held-out partners; rate ``b0 + Pi u + Pi^T v``.
    """
    np.random.seed(seed)  # noqa: NPY002 (numba)
    V, C = Theta_VC.shape
    T = np.zeros(C)
    for i in range(V):
        for c in range(C):
            T[c] += Theta_VC[i, c]
    u = np.empty(C)
    v = np.empty(C)
    for i in range(V):
        for c in range(C):
            u[c] = T[c] - Theta_VC[i, c]
            v[c] = u[c]
        for k in range(out_ptr[i], out_ptr[i + 1]):
            for c in range(C):
                u[c] -= Theta_VC[out_idx[k], c]
        for k in range(in_ptr[i], in_ptr[i + 1]):
            for c in range(C):
                v[c] -= Theta_VC[in_idx[k], c]
        for c in range(C):
            u[c] = max(u[c], 0.0)  # rounding of the running sums
            v[c] = max(v[c], 0.0)
        for c in range(C):
            rate = b0
            for d in range(C):
                rate += Pi_CC[c, d] * u[d] + Pi_CC[d, c] * v[d]
            new = max(np.random.gamma(shape_VC[i, c], 1.0) / rate, FLOOR)  # noqa: NPY002
            T[c] += new - Theta_VC[i, c]
            Theta_VC[i, c] = new


@njit(cache=True, nogil=True)
def _update_pi(Theta_VC, Pi_CC, pair_CC, a0, b0, out_rows, out_idx, fixed, seed):
    """Return ``sum_cd pi_cd R_cd`` (the rate term of the log likelihood) at the ``Pi_CC`` on
    entry, ``R_cd = sum_(ij observed) theta_ic theta_jd`` (all pairs, less the diagonal and
    the held-out cells ``(out_rows[k], out_idx[k])``); unless ``fixed``, then draw
    ``pi_cd ~ Gamma(a0 + pair_cd, b0 + R_cd)`` in place."""
    V, C = Theta_VC.shape
    T = np.zeros(C)
    R = np.zeros((C, C))
    for i in range(V):
        for c in range(C):
            T[c] += Theta_VC[i, c]
            for d in range(C):
                R[c, d] -= Theta_VC[i, c] * Theta_VC[i, d]
    for k in range(len(out_rows)):
        for c in range(C):
            for d in range(C):
                R[c, d] -= Theta_VC[out_rows[k], c] * Theta_VC[out_idx[k], d]
    rate_sum = 0.0
    for c in range(C):
        for d in range(C):
            R[c, d] = max(R[c, d] + T[c] * T[d], 0.0)  # rounding of the differences
            rate_sum += Pi_CC[c, d] * R[c, d]
    if not fixed:
        np.random.seed(seed)  # noqa: NPY002 (numba)
        for c in range(C):
            for d in range(C):
                draw = np.random.gamma(a0 + pair_CC[c, d], 1.0)  # noqa: NPY002 (numba)
                Pi_CC[c, d] = max(draw / (b0 + R[c, d]), FLOOR)
    return rate_sum


# ---------------------------------------------------------------- one Gibbs iteration


def sample_counts(problem: Problem, state: State, rng: np.random.Generator) -> None:
    """Resample the true counts of the observed cells in place (private methods)."""
    mu_VV = state.Theta_VC @ state.Pi_CC @ state.Theta_VC.T
    seeds = chunk_seeds(rng, mu_VV.shape[0])
    held = ~problem.obs_VV
    if problem.method == "private":
        counts.sample_counts_private(problem.Ytil_VV, problem.alpha_VV, mu_VV, held,
                                     state.lam_plus_VV, state.lam_minus_VV, state.Y_VV, seeds)
    elif problem.noise is not None:
        counts.sample_counts_tables(problem.Ytil_VV, problem.noise, mu_VV, held, state.Y_VV,
                                    seeds)
    else:
        counts.sample_counts_collapsed(problem.Ytil_VV, problem.alpha_VV, mu_VV, held,
                                       state.Y_VV, seeds)


def gibbs_sweep(problem: Problem, state: State, rng: np.random.Generator) -> float:
    """One Gibbs iteration in place; returns the log likelihood of the counts before it."""
    if is_private(problem):
        sample_counts(problem, state, rng)
    Theta, Pi = state.Theta_VC, state.Pi_CC
    send, recv, pair, ll_nz = allocate(state.Y_VV, problem.obs_VV, Theta, Pi, rng)
    a0, b0 = problem.a0, problem.b0
    pi_seed, theta_seed = (int(s) for s in rng.integers(2**31, size=2))
    loglik = ll_nz - _update_pi(Theta, Pi, pair, a0, b0, problem.out_rows, problem.out_idx,
                                problem.fix_pi, pi_seed)
    if not problem.fix_theta:
        _update_theta(Theta, Pi, a0 + send + recv, b0, problem.out_ptr, problem.out_idx,
                      problem.in_ptr, problem.in_idx, theta_seed)
    return loglik


def log_joint(problem: Problem, state: State, mu: np.ndarray | None = None) -> float:
    """``log p(Y~, Y, Theta, Pi)`` (free factors only; ``private``'s noise rates marginalized;
    :func:`lppf.log_densities.count_loglik`); ``mu`` the current rate when already computed."""
    if mu is None:
        mu = state.Theta_VC @ state.Pi_CC @ state.Theta_VC.T
    private = is_private(problem)
    if private and problem.noise is not None:
        lj = noise_count_loglik(state.Y_VV, mu, ~problem.obs_VV, problem.Ytil_VV,
                                problem.noise)
    else:
        lj = count_loglik(state.Y_VV, mu, ~problem.obs_VV,
                          problem.Ytil_VV if private else None,
                          problem.alpha_VV if private else None)
    if not problem.fix_theta:
        lj += gamma_logpdf_sum(state.Theta_VC, problem.a0, problem.b0)
    if not problem.fix_pi:
        lj += gamma_logpdf_sum(state.Pi_CC, problem.a0, problem.b0)
    return lj


# ---------------------------------------------------------------- initialization


def make_state(problem: Problem, Theta_VC: np.ndarray, Pi_CC: np.ndarray,
               rng: np.random.Generator) -> State:
    """A state at the given factors; true counts start at ``max(y~, 0)``, ``private``'s
    noise rates at random around their prior mean alpha / (1 - alpha)."""
    V = problem.Ytil_VV.shape[0]
    Y = np.where(problem.obs_VV, np.maximum(problem.Ytil_VV, 0), 0).astype(np.int32)
    state = State(Theta_VC=np.ascontiguousarray(Theta_VC), Pi_CC=np.ascontiguousarray(Pi_CC),
                  Y_VV=Y)
    if problem.method == "private":
        mean = problem.alpha_VV / (1.0 - problem.alpha_VV)
        state.lam_plus_VV = rng.exponential(1.0, (V, V)) * mean
        state.lam_minus_VV = rng.exponential(1.0, (V, V)) * mean
    return state


# ---------------------------------------------------------------- the fit


def fit_community_mcmc(data: FitData, *, method: str, n_components: int, a0: float, b0: float,
                       n_iter: int, burnin: int, thin: int, rng: np.random.Generator,
                       threads: int | None = None, progress: bool = False,
                       n_chains: int = 1, extend: int = 0, sampler: str = "auto"
                       ) -> FitResult:
    """MCMC for the community model (Gibbs; HMC for fixed counts by ``sampler``,
    :func:`uses_hmc`),
    ``n_chains`` chains pooled, extended up to ``extend`` times while they miss the
    convergence criterion (:func:`lppf.mcmc._driver.run_chains`); ``n_iter`` counts the
    ``burnin`` iterations.

    Samples are saved after burn-in at every ``thin``-th iteration. ``mu_hat`` (V, V) and
    ``y_hat`` (private methods; held-out cells get ``mu_hat``) are posterior means over the
    saved samples; ``samples`` holds ``theta`` (S, V, C) and ``pi`` (S, C, C); ``log_joint``
    (S,) is :func:`log_joint`; ``trace["loglik"]`` (n_iter,) is log p(y | Theta, Pi) over the
    observed cells at the start of each iteration; ``elapsed`` has ``burnin`` (the starts
    included, though not counted in ``n_iter``) and ``sampling`` seconds; ``extra["hmc"]`` is
    1 when the chains ran HMC, 0 when they ran the Gibbs sweep; ``extra["langevin"]`` 1 when
    a ``private-collapsed`` fit under heavy noise ran the Langevin moves of
    :mod:`lppf.mcmc.marginal` before each sweep (after the augmented burn-in), and then
    ``extra["langevin_acceptance"]`` their mean acceptance (rows of Theta, Pi).
    """
    fix = dict(data.fix)
    problem = make_problem(data, method, a0, b0)
    chain_class = HMCChain if uses_hmc(problem, sampler) else CommunityChain
    moves = (marginal.CommunityMoves(problem)
             if marginal.use(method, sampler, problem.Ytil_VV, problem.alpha_VV,
                             ~problem.obs_VV, problem.mechanism) else None)
    chains: list[CommunityChain] = []
    start = []  # the EM start, from chain 0's generator, shared by every chain

    def make_chain(chain_rng):
        if not start or not SHARED_START:
            observed = FitData(problem.Ytil_VV, problem.alpha_VV, ~problem.obs_VV, fix,
                               problem.mechanism)
            start[:] = best_start(observed, method, n_components, burnin, chain_rng,
                                  model="community", n_iter=n_iter)
        chain = chain_class(problem, start, burnin, chain_rng)
        if moves is not None:
            chain.moves = moves
            chains.append(chain)
        return chain, chain.info

    with numba_threads(threads), at_most(n_chunks(problem.Ytil_VV.shape[0])), blas_single():
        result = run_chains(make_chain, n_chains=n_chains, n_iter=n_iter, burnin=burnin,
                            thin=thin, rng=rng, mask=~problem.obs_VV, progress=progress,
                            desc=f"community {method}", extend=extend)
    result.extra["hmc"] = int(chain_class is HMCChain)
    result.extra["langevin"] = int(moves is not None)
    if moves is not None:  # mean acceptance of the moves of Theta's rows, of Pi
        rates = (chain.accepted for chain in chains)
        summed = [math.fsum(c) for c in zip(*rates, strict=True)]  # the same in any order
        result.extra["langevin_acceptance"] = np.array(summed[:2]) / max(summed[2], 1.0)
    return result


class CommunityChain:
    """One chain (see :class:`lppf.mcmc._driver.Chain`) from ``start``, the result of
    :func:`lppf.start.best_start` (copied).

    A ``private-collapsed`` chain under geometric noise draws its true counts with
    ``private``'s augmented update (noise rates ``lambda`` kept) for the first
    ``AUGMENTED_BURNIN`` of its burn-in, then with the collapsed one (other noises: the
    collapsed one throughout). Both updates leave the same posterior of ``(y, Theta, Pi)``
    invariant, so only where the sampling starts changes. The EM start overfits the noise
    (total rate several times the truth's at alpha 0.9) and burn-in shrinks it; with the
    collapsed update the shrinking overshoots, on weak-signal networks into a region that
    explains almost every count as noise and that the chain does not leave, while the
    augmented update shrinks it gradually and the chain keeps the communities.
    """

    def __init__(self, problem: Problem, start: list, burnin: int, rng: np.random.Generator):
        Theta, Pi, scores = (np.array(x) for x in start)
        self.target, self.n_sweeps, self.handoff = problem, 0, 0
        if problem.method == "private-collapsed" and problem.noise is None:
            problem = replace(problem, method="private")
            self.handoff = int(AUGMENTED_BURNIN * burnin)
        self.state = make_state(problem, Theta, Pi, rng)
        self.info = {"loglik": scores}
        self.problem, self.rng = problem, rng
        self.moves: marginal.CommunityMoves | None = None  # set by fit_community_mcmc
        self.accepted = np.zeros(3)  # the moves' summed acceptance rates (Theta, Pi), count

    def sweep(self) -> float:
        if self.n_sweeps == self.handoff and self.problem is not self.target:
            self.problem = self.target
            self.state.lam_plus_VV = self.state.lam_minus_VV = None
        self.n_sweeps += 1
        if self.moves is not None and self.problem is self.target:  # collapsed counts next
            state, problem = self.state, self.problem
            self.accepted += (*self.moves(state.Theta_VC, state.Pi_CC, problem.a0, problem.b0,
                                          self.rng), 1)
        return gibbs_sweep(self.problem, self.state, self.rng)

    def factors(self) -> dict[str, np.ndarray]:
        return {"theta": self.state.Theta_VC, "pi": self.state.Pi_CC}

    def mu(self) -> np.ndarray:
        return self.state.Theta_VC @ self.state.Pi_CC @ self.state.Theta_VC.T

    def mu_at(self, cells: np.ndarray) -> np.ndarray:
        Theta = self.state.Theta_VC
        return np.einsum("mc,cd,md->m", Theta[cells[:, 0]], self.state.Pi_CC, Theta[cells[:, 1]])

    def counts(self) -> np.ndarray | None:
        return self.state.Y_VV if is_private(self.problem) else None

    def log_joint(self, mu: np.ndarray | None = None) -> float:
        return log_joint(self.problem, self.state, mu)


# the smallest prior shape of an HMC fit; below it, the Gibbs sweep mixed better on S3's data
# docs/findings.md, "The community model's fixed-count chains"
HMC_MIN_A0 = 1.0


def uses_hmc(problem: Problem, sampler: str = "auto") -> bool:
    """Whether a fit runs :class:`HMCChain` rather than the Gibbs sweep. HMC needs fixed
    counts and free factors; ``sampler`` "hmc" takes it there, "gibbs" never, and "auto"
    under a prior shape ``a0 >= HMC_MIN_A0`` only. Under a smaller shape an unused factor's
    log has a long tail towards 0 (an exponential of rate a0 on the log scale) that HMC's
    trajectories cross slowly, where the Gibbs sweep draws the factor from its conditional
    at once."""
    applies = not is_private(problem) and not (problem.fix_theta or problem.fix_pi)
    return applies and (sampler == "hmc" or (sampler == "auto" and problem.a0 >= HMC_MIN_A0))


def _fixed_counts(problem: Problem) -> np.ndarray:
    """The counts of the observed cells as floats, 0 elsewhere."""
    return np.where(problem.obs_VV, problem.Ytil_VV, 0).astype(np.float64)


def _log_factors(state: State) -> np.ndarray:
    """``x = (log Theta_VC, log Pi_CC)`` flattened, the coordinates of :mod:`lppf.mcmc.hmc`."""
    return np.log(np.concatenate([state.Theta_VC.ravel(), state.Pi_CC.ravel()]))


def hmc_sweep(problem: Problem, state: State, eps: float, inv_metric: np.ndarray,
              rng: np.random.Generator) -> tuple[float, float]:
    """One HMC transition of ``(log Theta, log Pi)`` given the fixed counts in place
    (:mod:`lppf.mcmc.hmc`; step size ``eps`` jittered, diagonal inverse metric
    ``inv_metric``); returns the log likelihood of the counts before it and the acceptance
    probability."""
    obs, Y, x = problem.obs_VV, _fixed_counts(problem), _log_factors(state)
    V, C = state.Theta_VC.shape
    grad = np.empty_like(x)
    lp, ll = hmc.community_logp(x, Y, obs, problem.a0, problem.b0, V, C, grad)
    step = eps * rng.uniform(1.0 - hmc.JITTER, 1.0 + hmc.JITTER)
    x, _, _, _, accept = hmc.transition(x, lp, grad, step, inv_metric, hmc.N_LEAPFROG, Y, obs,
                                        problem.a0, problem.b0, V, C,
                                        rng.standard_normal(x.size), rng.random())
    state.Theta_VC = np.exp(x[:V * C]).reshape(V, C)
    state.Pi_CC = np.exp(x[V * C:]).reshape(C, C)
    return ll - hmc.log_factorial_sum(Y, obs), accept


class HMCChain(CommunityChain):
    """A chain of fixed counts (``naive``, ``nonprivate``) whose sweep is :func:`hmc_sweep`,
    its step size and metric tuned over the first ``burnin`` sweeps
    (:class:`lppf.mcmc.hmc.Adaptation`) and fixed after."""

    def __init__(self, problem: Problem, start: list, burnin: int, rng: np.random.Generator):
        super().__init__(problem, start, burnin, rng)
        obs, Y, x = problem.obs_VV, _fixed_counts(problem), _log_factors(self.state)
        V, C = self.state.Theta_VC.shape
        grad = np.empty_like(x)
        lp, _ = hmc.community_logp(x, Y, obs, problem.a0, problem.b0, V, C, grad)
        self.inv_metric = np.ones_like(x)
        self.eps = hmc.initial_step(x, lp, grad, self.inv_metric, Y, obs, problem.a0,
                                    problem.b0, V, C)
        self.adaptation = hmc.Adaptation(burnin, self.eps)

    def sweep(self) -> float:
        loglik, accept = hmc_sweep(self.problem, self.state, self.eps, self.inv_metric,
                                   self.rng)
        self.n_sweeps += 1
        if self.n_sweeps <= self.adaptation.burnin:
            self.eps, self.inv_metric = self.adaptation.update(
                accept, _log_factors(self.state), self.eps, self.inv_metric)
        return loglik
