"""Starting points of the MCMC chains and CAVI runs: the best of several maximum-likelihood fits.

On heavy-tailed counts (a few rows and columns hold most of the mass) the Gibbs chain of
Poisson factorization keeps the topics it starts with: with counts in the thousands the
conditionals are so concentrated that a chain from a random start settles, within a few
iterations, into whichever local mode is nearest and does not leave it in thousands of
iterations. The naive warm-up made it worse for the private methods: it first fits
``max(y~, 0)``, whose optimum puts rate on the noise, and the private chain stays there.

So a chain starts at a local maximum of the likelihood of the OBSERVED data,
``p(y~ | Theta, Phi) = prod_dv sum_y Pois(y; mu_dv) 2Geo(y~_dv - y; alpha)`` (private methods)
or ``prod_dv Pois(y_dv; mu_dv)`` of the fixed counts (``naive``: ``max(y~, 0)``), the best of
``RESTARTS[model]`` runs of generalized EM, ranked by that log likelihood:

* E step (private methods): ``E[y | y~, mu]`` under ``P(y) ∝ mu^y / y! alpha^|y~ - y|``
  (:func:`lppf.expectations.collapsed_local`, which also gives ``ln p(y~ | mu)``);
* M step: ``INNER`` multiplicative updates of Lee and Seung for the Poisson (KL)
  likelihood of the expected counts, each of which increases it;
* over-relaxation (:func:`em`): the step is stretched in log space while the observed-data
  log likelihood keeps increasing, and replaced by the plain step when it would not, so that
  likelihood never decreases. At alpha 0.9 the noise hides most of the small counts,
  E[y | y~, mu] stays close to mu and plain EM crawls: after the pilot steps the restarts
  were still thousands of log-likelihood units from their optima, so the pilot ranking
  picked the wrong restart and the chain (which mixes as slowly, and stays near its start
  for the whole run) ended 1.7 times worse in KL than the chains of other seeds;
* starts: the first restart of a PMF chain is the NNDSVD of ``max(y~, 0)``
  (:func:`nndsvd_start`); the others ``theta_dk = r_d / sqrt(N) g_dk``,
  ``phi_kv = c_v / sqrt(N) h_kv`` with row sums ``r``, column sums ``c``, total ``N`` and
  ``g ~ Gamma(1, 1/K)``, ``h ~ Gamma(1, 1)``: the rank-one fit ``r c / N`` randomly split over
  the components. On a heavy-tailed E2 data set at alpha 0.9 (e0 = 50) the 16 random
  restarts ended in modes thousands of log-likelihood units below the best in 7 of 8 seeds
  (3 of 8 with four times the EM steps); the NNDSVD restart reached the best mode and won
  the ranking in all 8.

The restarts share ``RESTARTS[model] x pilot`` E steps by successive halving (:func:`best_start`):
all run a few steps, the better half runs more, and so on, so that the later steps go to the
restarts still in contention; the last one left runs ``refine`` more. A fit caps that
schedule so that the start costs at most ``START_SHARE`` of its chain's sweeps
(:func:`start_schedule`). The Gibbs sampler that follows is unchanged: the start only decides
which mode burn-in begins in.
"""

from __future__ import annotations

import math

import numpy as np

from lppf import cells, noise_conditional
from lppf.expectations import collapsed_local
from lppf.noise_conditional import fit_tables
from lppf.validation import PRIVATE_METHODS, FitData

# independent EM runs per chain (the best by the observed-data log likelihood is kept):
# community chains shrink their start during burn-in and gain more from one more chain
# than from more restarts (docs/usage.md)
RESTARTS = {"pmf": 16, "community": 4}
INNER = 10  # multiplicative M-step updates per E step
GROWTH, MAX_W = 1.2, 16.0  # over-relaxation of the EM steps (:func:`em`)
_LOG_CLIP = 700.0
START_FLOOR = 1e-8  # smallest free factor handed to a chain (mu >= K 1e-16 > 0)
_TINY = 1e-300


NNDSVD_LIFT = 1e-3  # floor of the NNDSVD start's entries, relative to the factor's mean
SVD_DENSE_MAX = 1000  # above this many rows and columns the start's SVD is ARPACK's

MAX_PILOT, MAX_REFINE = 50, 300  # caps: a long burn-in is the sampler's job, not EM's


def em_budget(burnin: int) -> tuple[int, int]:
    """(pilot, refine) E steps for a burn-in of ``burnin`` iterations: (burnin // 2, 2 burnin),
    at most (MAX_PILOT, MAX_REFINE). Shorter pilots rank the restarts poorly (a run that ends
    best after 20 steps is often not the one that ends best after 200); at alpha 0.9 the
    chosen restart is still climbing after 100 refine steps, and a chain keeps the KL of the
    point it starts from (on a 200 x 100 E2-like case, 100 refine steps left the worst of 8
    seeds 1.6 times the best; 200 steps, 1.4 times)."""
    return min(max(burnin // 2, 1), MAX_PILOT), min(2 * burnin, MAX_REFINE)


START_SHARE = 0.08  # most of the chain's n_iter sweeps that a capped start may cost
START_FREE = 3e8  # cells x components x EM steps a start may always take (seconds)


def em_sweeps(model: str, n_components: int) -> float:
    """Estimated CPU cost of one EM step in sweeps of a private chain: the M step's ``INNER``
    updates are dense products of about ``8 K`` (pmf) or ``16 K`` (community) flops a cell,
    a sweep costs some hundred ns a cell (1000 x 1000, K = 50, one core: an EM step 0.27 s,
    a private sweep 0.13-0.15 s; 300 x 150, K = 5: 5.4 ms and 8.7 ms)."""
    return max(0.5, (1 if model == "pmf" else 2) * n_components / 25)


def halving_steps(n_runs: int, steps: int) -> int:
    """EM steps that :func:`best_start` spends ranking ``n_runs`` restarts from a first
    round of ``steps`` steps each (successive halving)."""
    total, runs = n_runs * steps, n_runs
    while runs > 1:
        runs //= 2
        if runs == 1:
            break
        if runs < n_runs // 2:
            steps *= 2
        total += runs * steps
    return total


def start_schedule(data: FitData, n_components: int, burnin: int, n_iter: int | None,
                   model: str = "pmf") -> tuple[int, int, int]:
    """(restarts, first-round EM steps of each, refine steps) of :func:`best_start`.

    Uncapped (``n_iter`` None): ``RESTARTS[model]`` restarts (1 when both factors are
    fixed), ``max(2 pilot // 5, 1)`` and ``refine`` from :func:`em_budget`. Capped, the
    start's EM steps cost at most ``START_SHARE`` of ``n_iter`` sweeps (at the rate of
    :func:`em_sweeps`) or ``START_FREE`` cells x components x steps, whichever is more (small
    problems keep the whole schedule): the random restarts are halved until the steps fit
    (the first, NNDSVD, restart of a PMF chain stays), then the refine steps are cut."""
    pilot, refine = em_budget(burnin)
    restarts, steps = (RESTARTS[model] if len(data.fix) < 2 else 1), max(2 * pilot // 5, 1)
    if n_iter is None:
        return restarts, steps, refine
    work = data.Y.shape[0] * data.Y.shape[1] * n_components
    cap = int(max(START_SHARE * n_iter / em_sweeps(model, n_components), START_FREE / work))
    while restarts > 1 and halving_steps(restarts, steps) + refine > cap:
        restarts //= 2
    if restarts == 1:
        steps = max(min(steps, cap), 1)
        refine = max(min(refine, cap - steps), 0)
    return restarts, steps, refine


def _counts(data: FitData) -> np.ndarray:
    """The counts the M step fits when nothing is latent (naive: max(y~, 0)), 0 if held out."""
    return np.where(data.mask, 0, np.maximum(data.Y, 0)).astype(np.float64)


def observed_loglik(data: FitData, method: str, mu_DV: np.ndarray,
                    noise: noise_conditional.Tables | None = None) -> tuple[float, np.ndarray]:
    """(ln p(observed data | mu) over unmasked cells, the counts the M step fits).

    Private methods: ``ln p(y~ | mu)`` and ``E[y | y~, mu]``; else the Poisson log
    likelihood of the fixed counts and those counts. ``noise``: the data's
    :func:`lppf.noise_conditional.fit_tables`, built here when not given."""
    if method in PRIVATE_METHODS and data.mechanism != "geometric":
        noise = fit_tables(data) if noise is None else noise
        Ey, _, log_z = cells.local(data.Y, noise, mu_DV, data.mask)
        return log_z - float(mu_DV[~data.mask].sum()), Ey
    if method in PRIVATE_METHODS:
        alpha = np.ascontiguousarray(np.broadcast_to(data.alpha, data.Y.shape), dtype=np.float64)
        Ey, log_z = collapsed_local(data.Y, alpha, mu_DV, data.mask)
        return log_z - float(mu_DV[~data.mask].sum()), Ey
    from scipy import special  # here: only the starts of naive and nonprivate fits need it

    Y = _counts(data)
    obs = ~data.mask
    return float(np.sum(special.xlogy(Y[obs], mu_DV[obs]) - mu_DV[obs])), Y


def _m_step(Y_DV: np.ndarray, W_DV: np.ndarray, Theta_DK: np.ndarray, Phi_KV: np.ndarray,
            fix: dict, n: int) -> None:
    """``n`` multiplicative updates (in place) of the Poisson likelihood of ``Y_DV`` with
    observation weights ``W_DV`` (0 = held out): ``theta *= (R Phi^T) / (W Phi^T)``,
    ``phi *= (Theta^T R) / (Theta^T W)`` with ``R = W Y / mu``."""
    WY_DV = W_DV * Y_DV
    full = bool(W_DV.all())  # no held-out cells: the denominators are factor sums
    R_DV, mu_DV = np.empty_like(Y_DV), np.empty_like(Y_DV)  # reused: no page faults per update

    def ratio():
        np.matmul(Theta_DK, Phi_KV, out=mu_DV)
        np.divide(WY_DV, np.maximum(mu_DV, _TINY, out=mu_DV), out=R_DV)

    for _ in range(n):
        if "theta" not in fix:
            ratio()
            down = Phi_KV.sum(axis=1) if full else W_DV @ Phi_KV.T
            Theta_DK *= (R_DV @ Phi_KV.T) / np.maximum(down, _TINY)
        if "phi" not in fix:
            ratio()
            down = Theta_DK.sum(axis=0)[:, None] if full else Theta_DK.T @ W_DV
            Phi_KV *= (Theta_DK.T @ R_DV) / np.maximum(down, _TINY)
        np.maximum(Theta_DK, _TINY, out=Theta_DK)
        np.maximum(Phi_KV, _TINY, out=Phi_KV)


def _m_step_community(Y_VV: np.ndarray, W_VV: np.ndarray, Theta_VC: np.ndarray,
                      Pi_CC: np.ndarray, fix: dict, n: int) -> None:
    """``n`` multiplicative updates (in place) of the Poisson likelihood of ``Y_VV`` under
    ``mu = Theta Pi Theta^T`` with weights ``W_VV``: ``pi *= (Theta^T R Theta) /
    (Theta^T W Theta)``, ``theta *= (R Theta Pi^T + R^T Theta Pi) / (W Theta Pi^T +
    W^T Theta Pi)`` with ``R = W Y / mu``."""
    for _ in range(n):
        if "pi" not in fix:
            R = W_VV * Y_VV / np.maximum(Theta_VC @ Pi_CC @ Theta_VC.T, _TINY)
            Pi_CC *= (Theta_VC.T @ R @ Theta_VC) / np.maximum(Theta_VC.T @ W_VV @ Theta_VC,
                                                              _TINY)
        if "theta" not in fix:
            R = W_VV * Y_VV / np.maximum(Theta_VC @ Pi_CC @ Theta_VC.T, _TINY)
            up = R @ Theta_VC @ Pi_CC.T + R.T @ Theta_VC @ Pi_CC
            down = W_VV @ Theta_VC @ Pi_CC.T + W_VV.T @ Theta_VC @ Pi_CC
            Theta_VC *= up / np.maximum(down, _TINY)
        np.maximum(Theta_VC, _TINY, out=Theta_VC)
        np.maximum(Pi_CC, _TINY, out=Pi_CC)


EM_STEPS = {"pmf": (lambda A, B: A @ B, _m_step),
          "community": (lambda A, B: A @ B @ A.T, _m_step_community)}


def _extrapolate(X: np.ndarray, X0: np.ndarray, w: float) -> None:
    """``X <- X0 (X / X0)^w`` in place for the EM step ``X0 -> X`` (``w = 1``: no change)."""
    X *= np.exp(np.clip((w - 1.0) * np.log(X / X0), -_LOG_CLIP, _LOG_CLIP))
    np.maximum(X, _TINY, out=X)


def em(data: FitData, method: str, A: np.ndarray, B: np.ndarray, n_steps: int,
       model: str = "pmf", noise: noise_conditional.Tables | None = None) -> float:
    """``n_steps`` adaptive over-relaxed EM steps in place on the factors ``A``, ``B`` (pmf:
    Theta_DK, Phi_KV; community: Theta_VC, Pi_CC); returns the final observed log likelihood.
    ``noise`` (:func:`lppf.noise_conditional.fit_tables` of ``data``) is built once here
    when not given, not at every step: for the discrete Gaussian and Skellam noise building
    it cost more than the step.

    Each step takes the EM step ``X0 -> X1`` to ``X0 (X1 / X0)^w`` (in log space, ``w`` times
    the EM step), ``w`` growing by ``GROWTH`` up to ``MAX_W`` while the observed log
    likelihood increases; a step that lowers it is replaced by the plain EM step and ``w``
    restarts at 1 (Salakhutdinov and Roweis, 2003). So the log likelihood never decreases,
    and at alpha 0.9, where E[y | y~, mu] barely moves from mu and plain EM crawls, it
    climbs as far in 100 steps as plain EM in 250."""
    rate, m_step = EM_STEPS[model]
    W = (~data.mask).astype(np.float64)
    if noise is None and method in PRIVATE_METHODS:
        noise = fit_tables(data)
    w, last, plain = 1.0, -np.inf, None
    while True:
        ll, Y = observed_loglik(data, method, rate(A, B), noise)
        if plain is not None and not ll >= last:  # over-shot (or not finite): plain EM step
            A[...], B[...] = plain
            w = 1.0
            ll, Y = observed_loglik(data, method, rate(A, B), noise)
        if n_steps == 0:
            return ll
        n_steps -= 1
        last = ll
        A0, B0 = A.copy(), B.copy()
        m_step(Y, W, A, B, data.fix, INNER)
        plain = A.copy(), B.copy()
        if w > 1.0:
            _extrapolate(A, A0, w)
            _extrapolate(B, B0, w)
        w = min(w * GROWTH, MAX_W)


def random_start(data: FitData, n_components: int, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The rank-one fit r c / N split at random over the components (fixed factors kept)."""
    Y = _counts(data)
    r_D, c_V = Y.sum(axis=1) + 1.0, Y.sum(axis=0) + 1.0
    root = math.sqrt(max(Y.sum(), 1.0))
    K = n_components
    Theta = (r_D / root)[:, None] * rng.gamma(1.0, 1.0 / K, (len(r_D), K))
    Phi = (c_V / root)[None, :] * rng.gamma(1.0, 1.0, (K, len(c_V)))
    Theta = np.array(data.fix.get("theta", Theta), dtype=np.float64)
    Phi = np.array(data.fix.get("phi", Phi), dtype=np.float64)
    return Theta, Phi


def _top_svd(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` leading singular triplets (U (D, k), s (k,), Vt (k, V)), largest first.

    LAPACK's full SVD up to ``SVD_DENSE_MAX`` rows or columns, ARPACK beyond (from a fixed
    starting vector, so that the result is reproducible)."""
    if min(X.shape) <= SVD_DENSE_MAX:
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        return U[:, :k], s[:k], Vt[:k]
    from scipy.sparse.linalg import svds

    U, s, Vt = svds(X, k=k, v0=np.ones(min(X.shape)), solver="arpack")
    order = np.argsort(-s, kind="stable")
    return U[:, order], s[order], Vt[order]


def nndsvd_start(data: FitData, n_components: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Nonnegative double SVD (Boutsidis and Gallopoulos, 2008) of the counts the M step fits
    when nothing is latent (``max(y~, 0)``): ``Theta_DK, Phi_KV`` from the positive or
    negative part (whichever carries more) of each leading singular pair; entries below
    ``NNDSVD_LIFT`` times the factor's mean (zeros among them) are lifted to it, so that the
    multiplicative updates can move them.
    None when ``n_components >= min(D, V)`` or a factor is fixed.

    Deterministic, and on heavy-tailed counts it lands in the basin of the best mode where
    random restarts often do not: the leading singular vectors follow the heavy rows and
    columns that decide the modes."""
    Y = _counts(data)
    K = n_components
    if data.fix or K >= min(Y.shape) or not Y.any():
        return None
    U, s, Vt = _top_svd(Y, K)
    Theta, Phi = np.zeros((Y.shape[0], K)), np.zeros((K, Y.shape[1]))
    for k in range(K):
        x, y = U[:, k], Vt[k]
        parts = ([(np.abs(x), np.abs(y))] if k == 0 else  # the leading pair has one sign
                 [(np.maximum(x, 0), np.maximum(y, 0)), (np.maximum(-x, 0), np.maximum(-y, 0))])
        a, b = max(parts, key=lambda p: np.linalg.norm(p[0]) * np.linalg.norm(p[1]))
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        if na * nb > 0:
            scale = math.sqrt(s[k] * na * nb)
            Theta[:, k], Phi[k] = scale * a / na, scale * b / nb
    for X in (Theta, Phi):
        np.maximum(X, NNDSVD_LIFT * max(X.mean(), _TINY), out=X)
    return Theta, Phi


def random_start_community(data: FitData, n_components: int, rng: np.random.Generator
                           ) -> tuple[np.ndarray, np.ndarray]:
    """theta_ic = (r_i + c_i) / sqrt(2 N) g_ic (g ~ Gamma(1, 1)), Pi ~ Gamma(1, 1) / C:
    actor i's expected total about its observed total; fixed factors kept."""
    Y = _counts(data)
    t_V = Y.sum(axis=1) + Y.sum(axis=0) + 1.0
    C = n_components
    Theta = (t_V / math.sqrt(2.0 * max(Y.sum(), 1.0)))[:, None] * rng.gamma(1.0, 1.0, (len(t_V), C))
    Pi = rng.gamma(1.0, 1.0 / C, (C, C))
    Theta = np.array(data.fix.get("theta", Theta), dtype=np.float64)
    Pi = np.array(data.fix.get("pi", Pi), dtype=np.float64)
    return Theta, Pi


def best_start(data: FitData, method: str, n_components: int, burnin: int,
               rng: np.random.Generator, model: str = "pmf", n_iter: int | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, observed log likelihood of every restart after its first round): pmf
    (Theta_DK, Phi_KV), community (Theta_VC, Pi_CC).

    The restarts are ranked by successive halving: each takes ``s = 2 pilot // 5`` EM steps,
    the better half ``s`` more, the better half of those ``2 s``, then ``4 s``, ...,
    until one is left (as many steps in all as ``pilot`` steps for each restart); that one
    takes ``refine`` more. A restart that ranks first after a few steps is often not the one
    that ends best; halving spends the later steps on the few still in contention. With
    ``n_iter`` (the chain's iterations) the schedule is capped (:func:`start_schedule`)."""
    n_runs, steps, refine = start_schedule(data, n_components, burnin, n_iter, model)
    draw = random_start if model == "pmf" else random_start_community
    first = nndsvd_start(data, n_components) if model == "pmf" else None
    runs = [first if restart == 0 and first is not None else draw(data, n_components, rng)
            for restart in range(n_runs)]
    noise = fit_tables(data) if method in PRIVATE_METHODS else None  # one for every restart
    scores = first_round = np.array([em(data, method, A, B, steps, model, noise)
                                     for A, B in runs])
    while len(runs) > 1:
        runs = [runs[i] for i in np.argsort(-scores, kind="stable")[:len(runs) // 2]]
        if len(runs) == 1:
            break
        if len(runs) < n_runs // 2:
            steps *= 2
        scores = np.array([em(data, method, A, B, steps, model, noise) for A, B in runs])
    A, B = runs[0]
    em(data, method, A, B, refine, model, noise)
    names = ("theta", "phi") if model == "pmf" else ("theta", "pi")
    for name, X in zip(names, (A, B), strict=True):
        if name not in data.fix:  # EM drives unused rates to 0; the count sampler needs mu > 0
            np.maximum(X, START_FLOOR, out=X)
    return A, B, first_round
