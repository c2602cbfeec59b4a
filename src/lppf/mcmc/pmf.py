"""Gibbs samplers for locally private Poisson matrix factorization.

``y_dv ~ Pois(mu_dv)``, ``mu_dv = sum_k theta_dk phi_kv`` (``Theta_DK``, ``Phi_KV``) with
``Gamma(a0, b0)`` priors (shape, rate). Held-out cells (``data.mask``) carry neither counts
nor rate terms. One iteration:

1. private methods only: ``mu = Theta @ Phi`` and the true counts ``y`` given ``y~``
   (``private``: Bessel augmentation, ``private-collapsed``: exact collapsed conditional,
   see :mod:`lppf.mcmc.counts`);
2. allocate every observed non-zero ``y_dv`` over the K components,
   ``(y_dvk) ~ Mult(y_dv, theta_dk phi_kv / mu_dv)``;
3. ``theta_dk ~ Gamma(a0 + sum_v y_dvk, b0 + sum_(v observed) phi_kv)``, then
   ``phi_kv ~ Gamma(a0 + sum_d y_dvk, b0 + sum_(d observed) theta_dk)``.

A chain (:class:`PMFChain`) of a ``private-collapsed`` fit under heavy noise adds, after the
factor draws, a Langevin move of every row of Theta and column of Phi with ``y`` summed
out (:mod:`lppf.mcmc.marginal`).

``naive`` fits the non-private model to ``max(y~, 0)``; ``nonprivate`` to the true counts.
The allocation runs in parallel over fixed chunks of rows, each reseeded from the caller's
generator, so results are identical for any thread count.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from lppf._numba import (
    CHUNK,
    at_most,
    blas_single,
    chunk_partials,
    chunk_seeds,
    rng_state,
    thread_partials,
    total,
    uniform,
)
from lppf._numba import threads as numba_threads
from lppf.draws import gamma_posterior, multinomial
from lppf.log_densities import count_loglik, gamma_logpdf_sum, log_factorial
from lppf.mcmc import marginal
from lppf.mcmc._driver import run_chains
from lppf.mcmc.counts import (
    sample_counts_collapsed,
    sample_counts_private,
    sample_counts_tables,
)
from lppf.noise_conditional import Tables, fit_tables
from lppf.noise_conditional import count_loglik as noise_count_loglik
from lppf.results import FitResult
from lppf.start import best_start
from lppf.validation import PRIVATE_METHODS, FitData

_FLOOR = np.finfo(np.float64).tiny  # gamma draws that underflow to 0 are lifted to this
_PROD_MIN, _PROD_MAX = 1e-150, 1e150  # range of a running product of powers of rates
_MAX_POWER = 8  # counts y up to this put mu^y into the product
_MU_MIN, _MU_MAX = 1e-18, 1e18  # rates whose powers up to mu^8 stay within 1e-150, 1e150


# ---------------------------------------------------------------------------- allocation


_BLOCK = 8  # components per block of the two-level search over K
# Counts up to this many units per component are split unit by unit (a uniform and a search,
# ~6 ns a unit), larger ones by K conditional binomials (~15-60 ns each, whatever the count):
# the two cost the same near 9 units per component (x86-64, K = 50, bench_alloc.py).
_UNITS_PER_K = 8
_LOCAL_MIN = 16  # counts from this many units are tallied in scratch, then added to the rows


@njit(cache=True, inline="always")
def _draw_component(u, bcum, icum, K):
    """Component k < K of the unit at ``u`` in [0, mu_dv) from the cumulative sums of
    :func:`_allocate_cell`: the block, then the component within it, each found by counting
    cumulative sums <= u (independent comparisons, no mispredicted exits)."""
    b = 0
    for j in range(1, len(bcum) - 1):
        b += bcum[j] <= u
    u -= bcum[b]
    k0 = b * _BLOCK
    k = 0
    for j in range(k0, k0 + _BLOCK - 1):
        k += icum[j] <= u
    return min(k0 + k, K - 1)


@njit(cache=True, inline="always")
def _allocate_cell(y, Theta_DK, d, Phi_VK, v, bcum, icum, Y_DK, Y_VK, w, n, suffix, rs):
    """Add Mult(y, theta_d * phi_v / mu_dv) to rows ``Y_DK[d]`` and ``Y_VK[v]``; return mu_dv.
    Small counts: one uniform of the xoshiro state ``rs`` per unit (:func:`lppf._numba.uniform`);
    above ``_UNITS_PER_K * K``: conditional binomials (:func:`lppf.draws.multinomial`).

    ``Theta_DK``, ``Phi_VK`` are zero-padded to a multiple of _BLOCK columns; ``bcum``
    (n_blocks + 1,) gets the cumulative block sums after a leading 0 and ``icum`` (padded K,)
    the cumulative sums within each block, once per cell, so that a unit costs a uniform and
    two rows of comparisons. The block sums are fixed-length independent dependency chains that the
    compiler unrolls and the CPU overlaps. Rows are indexed in place, not sliced: a slice
    per cell costs numba a reference count. ``w``, ``suffix`` (K,) float and ``n`` (K,) int
    (zero on entry and on exit) are scratch for larger counts.
    """
    K = Y_DK.shape[1]
    total = 0.0
    bcum[0] = 0.0
    for b in range(len(bcum) - 1):
        s = 0.0
        for k in range(b * _BLOCK, (b + 1) * _BLOCK):
            s += Theta_DK[d, k] * Phi_VK[v, k]
            icum[k] = s
        total += s
        bcum[b + 1] = total
    if y < _LOCAL_MIN and total > 0.0:
        for _ in range(y):
            k = _draw_component(uniform(rs) * total, bcum, icum, K)
            Y_DK[d, k] += 1
            Y_VK[v, k] += 1
        return total
    if total <= 0.0:  # every rate underflowed: spread uniformly
        _allocate_uniform(y, Y_DK[d], Y_VK[v])
        return total
    if y <= _UNITS_PER_K * K:  # into the scratch counts, added to the rows once
        for _ in range(y):
            n[_draw_component(uniform(rs) * total, bcum, icum, K)] += 1
    else:  # large counts: conditional binomials
        for k in range(K):
            w[k] = Theta_DK[d, k] * Phi_VK[v, k]
        multinomial(y, w, n, suffix, rs)
    for k in range(K):
        Y_DK[d, k] += n[k]
        Y_VK[v, k] += n[k]
        n[k] = 0
    return total


@njit(cache=True)
def _allocate_uniform(y, ydk, yvk):
    for _ in range(y):
        k = np.random.randint(len(ydk))  # noqa: NPY002 (numba)
        ydk[k] += 1
        yvk[k] += 1


@njit(cache=True, inline="always")
def _add_loglik(y, mu, ll):
    """``ll`` = (sum, running product) plus y log mu - log y!: mu^y of the cells with small
    counts (the most common) goes into the product, kept within (_PROD_MIN, _PROD_MAX) so
    that it never under- or overflows, and is logged once it leaves that range; the total
    is sum + log(product)."""
    total, prod = ll
    if 0 < y <= _MAX_POWER and _MU_MIN < mu < _MU_MAX:
        p = mu
        for _ in range(y - 1):
            p *= mu
        prod *= p
        total -= log_factorial(y)
        if _PROD_MIN < prod < _PROD_MAX:
            return total, prod
        return total + math.log(prod), 1.0
    if mu <= 0.0:
        return -math.inf, prod
    return total + y * math.log(mu) - log_factorial(y), prod


@njit(cache=True, parallel=True, nogil=True)
def allocate_dense(Y, mask, Theta_DK, Phi_VK, seeds, Y_DK, Y_TVK, loglik_X):
    """Allocate every unmasked non-zero cell of dense ``Y`` (D, V). Writes row totals
    ``Y_DK`` (D, K), adds column totals to ``Y_TVK`` (:func:`lppf._numba.thread_partials`,
    (n_threads, V, K)) and writes each chunk's ``sum y log mu - log y!`` in ``loglik_X``
    (:func:`lppf._numba.chunk_partials`)."""
    D, V = Y.shape
    for c in prange(len(seeds)):
        np.random.seed(seeds[c])  # noqa: NPY002 (numba)
        rs = rng_state(seeds[c])
        bcum, icum = np.empty(Theta_DK.shape[1] // _BLOCK + 1), np.empty(Theta_DK.shape[1])
        K = Y_DK.shape[1]
        w, suffix, n = np.empty(K), np.empty(K), np.zeros(K, np.int64)
        acc = Y_TVK[numba.get_thread_id()]
        ll = (0.0, 1.0)
        for d in range(c * CHUNK, min((c + 1) * CHUNK, D)):
            Y_DK[d] = 0
            for v in range(V):
                y = Y[d, v]
                if y == 0 or mask[d, v]:
                    continue
                mu = _allocate_cell(y, Theta_DK, d, Phi_VK, v, bcum, icum, Y_DK, acc, w, n,
                                    suffix, rs)
                ll = _add_loglik(y, mu, ll)
        loglik_X[c] = ll[0] + math.log(ll[1])


@njit(cache=True, parallel=True, nogil=True)
def allocate_sparse(indptr, indices, counts, Theta_DK, Phi_VK, seeds, Y_DK, Y_TVK, loglik_X):
    """As :func:`allocate_dense` for fixed counts in CSR form (observed non-zero cells only)."""
    D = len(indptr) - 1
    for c in prange(len(seeds)):
        np.random.seed(seeds[c])  # noqa: NPY002 (numba)
        rs = rng_state(seeds[c])
        bcum, icum = np.empty(Theta_DK.shape[1] // _BLOCK + 1), np.empty(Theta_DK.shape[1])
        K = Y_DK.shape[1]
        w, suffix, n = np.empty(K), np.empty(K), np.zeros(K, np.int64)
        acc = Y_TVK[numba.get_thread_id()]
        ll = (0.0, 1.0)
        for d in range(c * CHUNK, min((c + 1) * CHUNK, D)):
            Y_DK[d] = 0
            for i in range(indptr[d], indptr[d + 1]):
                v = indices[i]
                mu = _allocate_cell(counts[i], Theta_DK, d, Phi_VK, v, bcum, icum, Y_DK,
                                    acc, w, n, suffix, rs)
                ll = _add_loglik(counts[i], mu, ll)
        loglik_X[c] = ll[0] + math.log(ll[1])


# ---------------------------------------------------------------------------- state


@dataclass
class State:
    """The sampler's state. ``Y`` (D, V) int32 are the current true counts (private methods)
    or the fixed counts, ``Ytil`` (D, V) int64 the observed ones; ``lam_plus``/``lam_minus``
    (D, V) only for ``private``; ``csr`` holds the (indptr, indices, counts) of the observed
    non-zero cells of fixed counts."""

    method: str
    Theta: np.ndarray
    Phi: np.ndarray
    Y: np.ndarray
    Ytil: np.ndarray | None = None
    lam_plus: np.ndarray | None = None
    lam_minus: np.ndarray | None = None
    csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    noise: Tables | None = None  # the discrete Gaussian or Skellam noise (private-collapsed)


def observed_csr(Y: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, counts) of the unmasked non-zero cells of ``Y`` (D, V)."""
    keep = (Y > 0) & ~mask
    indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int64)
    _, cols = np.nonzero(keep)
    return indptr, cols.astype(np.int64), Y[keep].astype(np.int64)


def make_state(data: FitData, method: str, Theta: np.ndarray, Phi: np.ndarray,
               Y: np.ndarray | None = None, lam: tuple[np.ndarray, np.ndarray] | None = None,
               ) -> State:
    """Assemble a state; the true counts default to ``max(y~, 0)`` and lam+- to their prior
    mean alpha / (1 - alpha) for ``private``. True counts are stored as int32."""
    if data.Y.size and np.abs(data.Y).max() >= 2**31:
        raise ValueError("counts must be below 2**31")
    if method in ("naive", "nonprivate"):
        counts = np.maximum(data.Y, 0) if method == "naive" else data.Y
        Yfix = counts.astype(np.int32)
        return State(method, Theta, Phi, Yfix, csr=observed_csr(Yfix, data.mask))
    if Y is None:
        Y = np.where(data.mask, 0, np.maximum(data.Y, 0)).astype(np.int32)
    state = State(method, Theta, Phi, Y, Ytil=data.Y.astype(np.int64), noise=fit_tables(data))
    if method == "private":
        if lam is None:
            mean = np.broadcast_to(data.alpha / (1.0 - data.alpha), data.Y.shape)
            lam = (mean.copy(), mean.copy())
        state.lam_plus, state.lam_minus = lam
    return state


def initial_state(data: FitData, method: str, n_components: int,
                  rng: np.random.Generator) -> State:
    """A random start (benchmarks; fits start from :func:`lppf.start.best_start`):
    factors ~ Gamma(1, 1) scaled so that the mean rate matches the mean observed count
    (``max(y~, 0)``); fixed factors from ``data.fix``."""
    D, V = data.Y.shape
    observed = ~data.mask
    level = max(np.maximum(data.Y, 0)[observed].mean() if observed.any() else 1.0, 1e-2)
    scale = math.sqrt(level / n_components)
    Theta = rng.gamma(1.0, scale, (D, n_components))
    Phi = rng.gamma(1.0, scale, (n_components, V))
    Theta = np.array(data.fix.get("theta", Theta), dtype=np.float64)
    Phi = np.array(data.fix.get("phi", Phi), dtype=np.float64)
    return make_state(data, method, Theta, Phi)


# ---------------------------------------------------------------------------- one sweep


def _observed_weights(mask: np.ndarray) -> np.ndarray | None:
    """(D, V) float 1 - mask for the rate products, or None when nothing is held out."""
    return None if not mask.any() else (~mask).astype(np.float64)


def update_counts(state: State, data: FitData, rng: np.random.Generator,
                  mu: np.ndarray | None = None) -> None:
    """Resample the true counts (private methods) given y~ and mu = Theta @ Phi, computed
    into the buffer ``mu`` when one is given."""
    if state.method not in PRIVATE_METHODS:
        return
    mu = np.matmul(state.Theta, state.Phi, out=mu)
    seeds = chunk_seeds(rng, len(state.Y))
    with at_most(len(seeds)):
        if state.method == "private":
            sample_counts_private(state.Ytil, data.alpha, mu, data.mask, state.lam_plus,
                                  state.lam_minus, state.Y, seeds)
        elif state.noise is not None:
            sample_counts_tables(state.Ytil, state.noise, mu, data.mask, state.Y, seeds)
        else:
            sample_counts_collapsed(state.Ytil, data.alpha, mu, data.mask, state.Y, seeds)


def _padded(X: np.ndarray) -> np.ndarray:
    """Copy of (N, K) ``X`` with zero columns appended up to a multiple of _BLOCK."""
    K = X.shape[1]
    out = np.zeros((X.shape[0], -(-K // _BLOCK) * _BLOCK))
    out[:, :K] = X
    return out


def allocate(state: State, data: FitData, rng: np.random.Generator
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """(Y_DK, Y_KV, sum over observed non-zero cells of y log mu - log y!)."""
    D, V = state.Y.shape
    K = state.Theta.shape[1]
    seeds = chunk_seeds(rng, D)
    Y_DK = np.empty((D, K), dtype=np.int64)
    loglik_X = chunk_partials(len(seeds))
    Theta_DK, Phi_VK = _padded(state.Theta), _padded(state.Phi.T)
    with at_most(len(seeds)):
        Y_TVK = thread_partials((V, K))
        if state.csr is None:
            allocate_dense(state.Y, data.mask, Theta_DK, Phi_VK, seeds, Y_DK, Y_TVK, loglik_X)
        else:
            allocate_sparse(*state.csr, Theta_DK, Phi_VK, seeds, Y_DK, Y_TVK, loglik_X)
    return Y_DK, total(Y_TVK).T, float(total(loglik_X))


def _theta_rate(Phi: np.ndarray, W_DV: np.ndarray | None) -> np.ndarray:
    """``sum over observed v of phi_kv``: (D, K), or (1, K) when every cell is observed."""
    return W_DV @ Phi.T if W_DV is not None else Phi.sum(axis=1)[None, :]


def observed_mu_sum(Theta: np.ndarray, Phi: np.ndarray, W_DV: np.ndarray | None) -> float:
    """``sum over observed cells of mu``, the rate term of the log likelihood."""
    return float(np.sum(Theta * _theta_rate(Phi, W_DV)))


def update_factors(state: State, Y_DK: np.ndarray, Y_KV: np.ndarray,
                   W_DV: np.ndarray | None, a0: float, b0: float, fix: dict,
                   rng: np.random.Generator) -> tuple[float, float]:
    """Draw Theta then Phi from their gamma conditionals; return the sum over observed cells
    of mu at the factors on entry and at those on exit (from the rates of the draws)."""
    Theta = state.Theta
    rate_DK = _theta_rate(state.Phi, W_DV)
    before = float(np.sum(Theta * rate_DK))
    if "theta" not in fix:
        state.Theta = gamma_posterior(Y_DK, a0, rate_DK, b0, _FLOOR, rng)
    Theta = state.Theta
    rate_KV = Theta.T @ W_DV if W_DV is not None else Theta.sum(axis=0)[:, None]
    if "phi" not in fix:
        state.Phi = gamma_posterior(Y_KV, a0, rate_KV, b0, _FLOOR, rng)
    return before, float(np.sum(rate_KV * state.Phi))


def gibbs_sweep(state: State, data: FitData, a0: float, b0: float,
                rng: np.random.Generator, W_DV: np.ndarray | None = None,
                mu: np.ndarray | None = None) -> float:
    """One full iteration in place; returns the log likelihood log p(y | Theta, Phi) of the
    observed cells, at the counts of this sweep and the factors it started from.
    ``W_DV`` = :func:`_observed_weights` (pass it to avoid recomputing); ``mu`` a (D, V)
    float64 work buffer."""
    if W_DV is None:
        W_DV = _observed_weights(data.mask)
    update_counts(state, data, rng, mu)
    Y_DK, Y_KV, ll = allocate(state, data, rng)
    return ll - update_factors(state, Y_DK, Y_KV, W_DV, a0, b0, data.fix, rng)[0]


def log_joint(state: State, data: FitData, a0: float, b0: float,
              mu: np.ndarray | None = None) -> float:
    """log p(y~, y, Theta, Phi) (private methods, y~ | y ~ y + 2Geo(alpha), or the noise of
    ``data.mechanism``) or
    log p(y, Theta, Phi) (naive, nonprivate), observed cells only
    (:func:`lppf.log_densities.count_loglik`); ``mu`` = Theta @ Phi when already computed."""
    if mu is None:
        mu = state.Theta @ state.Phi
    private = state.method in PRIVATE_METHODS
    if private and state.noise is not None:
        total = noise_count_loglik(state.Y, mu, data.mask, state.Ytil, state.noise)
    else:
        total = count_loglik(state.Y, mu, data.mask, state.Ytil if private else None,
                             data.alpha if private else None)
    return total + _log_prior(state, a0, b0)


def _log_prior(state: State, a0: float, b0: float) -> float:
    return gamma_logpdf_sum(state.Theta, a0, b0) + gamma_logpdf_sum(state.Phi, a0, b0)


# ---------------------------------------------------------------------------- driver


class PMFChain:
    """One chain (see :class:`lppf.mcmc._driver.Chain`) from ``state``.

    A sweep runs the updates of :func:`gibbs_sweep` in the same order but cut elsewhere:
    the factors (from the previous sweep's allocation; the first sweep keeps the start),
    then the counts, then the allocation. The updates and their random draws are those of
    repeated :func:`gibbs_sweep` calls; what changes is the state between sweeps, which
    the driver saves: its mu = Theta @ Phi was formed by the count update (private methods)
    and its log p(y | Theta, Phi) summed by the allocation, so that saving it takes no pass
    over the cells but the one for the noise term of its log joint."""

    def __init__(self, data: FitData, state: State, a0: float, b0: float,
                 rng: np.random.Generator, moves: marginal.Moves | None = None):
        self.state, self.data, self.a0, self.b0, self.rng = state, data, a0, b0, rng
        self.moves = moves  # Langevin moves with y summed out after the factor draws
        self.accepted = np.zeros(3)  # the moves' summed acceptance rates (Theta, Phi), count
        self.W_DV = _observed_weights(data.mask)
        self.buf = np.empty(data.Y.shape) if state.method in PRIVATE_METHODS else None
        self.mu_sum = observed_mu_sum(state.Theta, state.Phi, self.W_DV)
        self.allocation = None  # (Y_DK, Y_KV) of the last sweep, for the next factor draws
        self.loglik = None  # log p(y | Theta, Phi) of the present state, once swept

    def sweep(self) -> float:
        state, data = self.state, self.data
        if self.allocation is not None:
            _, self.mu_sum = update_factors(state, *self.allocation, self.W_DV, self.a0,
                                            self.b0, data.fix, self.rng)
        if self.moves is not None:
            self.accepted += (*self.moves(state.Theta, state.Phi, self.a0, self.b0, self.rng), 1)
            self.mu_sum = observed_mu_sum(state.Theta, state.Phi, self.W_DV)
        update_counts(state, data, self.rng, self.buf)
        Y_DK, Y_KV, ll = allocate(state, data, self.rng)
        self.allocation = (Y_DK, Y_KV)
        self.loglik = ll - self.mu_sum
        return self.loglik

    def factors(self) -> dict[str, np.ndarray]:
        return {"theta": self.state.Theta, "phi": self.state.Phi}

    def mu(self) -> np.ndarray | None:
        """The count update's buffer (private methods); None for ``naive`` and
        ``nonprivate``, whose sweeps never form Theta @ Phi: :func:`mean_product` forms
        their posterior mean from the saved factors at the end."""
        if self.buf is None:
            return None
        return self.state.Theta @ self.state.Phi if self.loglik is None else self.buf

    def mu_at(self, cells: np.ndarray) -> np.ndarray:
        rows, cols = cells[:, 0], cells[:, 1]
        return np.einsum("mk,km->m", self.state.Theta[rows], self.state.Phi[:, cols])

    def counts(self) -> np.ndarray | None:
        return self.state.Y if self.state.method in PRIVATE_METHODS else None

    def log_joint(self, mu: np.ndarray | None = None) -> float:
        state, data = self.state, self.data
        if self.loglik is None:
            return log_joint(state, data, self.a0, self.b0, mu)
        lj = self.loglik + _log_prior(state, self.a0, self.b0)
        if state.method in PRIVATE_METHODS and state.noise is not None:
            lj += noise_count_loglik(state.Y, None, data.mask, state.Ytil, state.noise)
        elif state.method in PRIVATE_METHODS:
            lj += count_loglik(state.Y, None, data.mask, state.Ytil, data.alpha)
        return lj

    def mean_mu(self, samples: dict[str, np.ndarray]) -> np.ndarray:
        return mean_product(samples["theta"], samples["phi"])


_ROWS, _SAMPLES = 256, 8  # rows per task and samples per product of mean_product


def mean_product(Theta_S: np.ndarray, Phi_S: np.ndarray) -> np.ndarray:
    """(1/S) sum_s Theta_s @ Phi_s for (S, D, K) and (S, K, V) samples, (D, V).

    Each block of ``_SAMPLES`` samples is one product of the stacked factors, inner
    dimension ``_SAMPLES`` * K, in tasks of ``_ROWS`` rows spread over as many threads as
    numba has, each with BLAS on one thread: the tasks and their order of sums do not
    depend on the thread count, so neither does the result (a multi-threaded BLAS may
    split a product differently for another thread count)."""
    S, D, K = Theta_S.shape
    out = np.empty((D, Phi_S.shape[2]))

    def rows(start: int) -> None:
        block, tmp = slice(start, start + _ROWS), None
        for s in range(0, S, _SAMPLES):
            n = min(_SAMPLES, S - s)
            A = Theta_S[s:s + n, block].transpose(1, 0, 2).reshape(-1, n * K)
            B = Phi_S[s:s + n].reshape(n * K, -1)
            if s == 0:
                np.matmul(A, B, out=out[block])
            else:
                tmp = np.matmul(A, B, out=tmp)
                out[block] += tmp
        out[block] /= S

    with blas_single(), ThreadPoolExecutor(numba.get_num_threads()) as pool:
        list(pool.map(rows, range(0, D, _ROWS)))
    return out


def fit_pmf_mcmc(data: FitData, *, method: str, n_components: int, a0: float, b0: float,
                 n_iter: int, burnin: int, thin: int, rng: np.random.Generator,
                 threads: int | None = None, progress: bool = False,
                 n_chains: int = 1, extend: int = 0, sampler: str = "auto") -> FitResult:
    """Run ``n_chains`` chains of ``n_iter`` iterations (including ``burnin``), saving every
    ``thin``-th state after the burn-in, extended up to ``extend`` times while they miss the
    convergence criterion (:func:`lppf.mcmc._driver.run_chains`). The sweeps are Gibbs;
    ``sampler`` "auto" adds to a ``private-collapsed`` fit under heavy noise the Langevin
    moves of :mod:`lppf.mcmc.marginal` (:func:`lppf.mcmc.marginal.use`), "gibbs" never
    (:func:`lppf.validation.check_sampler`).

    The chains start at the best of several EM fits of the observed data
    (:mod:`lppf.start`), run once, from the first chain's generator, and shared by
    every chain (``extra["start_loglik"]`` (n_chains, restarts): their scores, the same for
    each chain; their seconds count in ``elapsed["burnin"]``). Chain 0 is the chain a
    one-chain fit runs, and chain c depends neither on the number of chains nor on the
    others' draws. Returns mu_hat
    (posterior mean of mu over saved samples, every cell), posterior-mean factors, y_hat
    (posterior mean of the true counts, private methods; for held-out cells the posterior
    mean of mu), factor samples (S, D, K) / (S, K, V), log joint of each saved state
    (:func:`log_joint`), the trace ``loglik`` (:func:`gibbs_sweep`) and seconds per phase;
    ``extra["langevin"]`` is 1 when the chains ran the moves, and then
    ``extra["langevin_acceptance"]`` their mean acceptance (rows of Theta, columns of Phi).
    """
    moves = (marginal.Moves(data) if marginal.use(method, sampler, data.Y, data.alpha, data.mask,
                                                  data.mechanism) else None)
    start = []  # the EM start, from chain 0's generator (its restarts cost more than
    # the chains' sweeps at the default sizes; their best restart is the deterministic
    # NNDSVD one on most data sets, so per-chain starts were the same point anyway)

    def make_chain(chain_rng):
        if not start:
            start.extend(best_start(data, method, n_components, burnin, chain_rng,
                                    n_iter=n_iter))
        Theta, Phi, scores = start
        state = make_state(data, method, Theta.copy(), Phi.copy())
        chains.append(PMFChain(data, state, a0, b0, chain_rng, moves))
        return chains[-1], {"loglik": scores}

    chains: list[PMFChain] = []
    with numba_threads(threads), blas_single():
        result = run_chains(make_chain, n_chains=n_chains, n_iter=n_iter, burnin=burnin,
                            thin=thin, rng=rng, mask=data.mask, progress=progress,
                            desc=f"pmf {method}", extend=extend)
    result.extra["langevin"] = int(moves is not None)
    if moves is not None:  # mean acceptance of the moves of Theta's rows, Phi's columns
        rates = (chain.accepted for chain in chains)
        summed = [math.fsum(c) for c in zip(*rates, strict=True)]  # the same in any order
        result.extra["langevin_acceptance"] = np.array(summed[:2]) / max(summed[2], 1.0)
    return result
