"""Gibbs sampler of the community model: Geweke joint-distribution tests, recovery of
planted communities from privatized networks, reproducibility and input checks."""

import dataclasses

import numpy as np
import pytest
from geweke import assert_geweke, geweke_z
from numba import njit

from lppf._numba import threads
from lppf.estimators import CommunityModel, PoissonMF
from lppf.mcmc import community as cm
from lppf.mcmc import marginal
from lppf.mcmc.marginal import CommunityMoves
from lppf.validation import FitData, InputError

# ------------------------------------------------------------------ Geweke tests

V, C, A0, B0 = 4, 2, 2.0, 2.0
HELD_OUT = [(0, 2), (3, 1)]  # held out besides the diagonal
GARBAGE = 7  # value in held-out cells: a sampler that reads them is pulled off the prior


def geweke_setup():
    mask = np.eye(V, dtype=bool)
    for i, j in HELD_OUT:
        mask[i, j] = True
    alpha = np.random.default_rng(0).uniform(0.2, 0.7, (V, V))
    alpha[1, 2] = 0.0  # a noiseless cell
    return mask, alpha


def draw_data(state, problem, rng):
    """(y, y~) | Theta, Pi (and lam+- for ``private``) on the observed cells, in place."""
    obs = problem.obs_VV
    mu = state.Theta_VC @ state.Pi_CC @ state.Theta_VC.T
    Y = np.where(obs, rng.poisson(mu), 0)
    if problem.method == "private":
        tau = rng.poisson(state.lam_plus_VV) - rng.poisson(state.lam_minus_VV)
    else:
        a = problem.alpha_VV
        tau = rng.geometric(1 - a) - rng.geometric(1 - a)
    state.Y_VV[:] = Y
    problem.Ytil_VV[:] = np.where(obs, Y + (tau if cm.is_private(problem) else 0), GARBAGE)


def forward(method):
    """Joint draws of (Theta, Pi, lam+-, y, y~) as (problem holding y~, state)."""
    mask, alpha = geweke_setup()
    template = cm.make_problem(FitData(np.zeros((V, V), int), alpha, mask), method, A0, B0)

    def draw(rng):
        problem = dataclasses.replace(template, Ytil_VV=np.zeros((V, V), np.int32))
        state = cm.State(Theta_VC=rng.gamma(A0, 1 / B0, (V, C)),
                         Pi_CC=rng.gamma(A0, 1 / B0, (C, C)), Y_VV=np.zeros((V, V), np.int32))
        if method == "private":
            scale = alpha / (1 - alpha)
            state.lam_plus_VV = rng.exponential(1.0, (V, V)) * scale
            state.lam_minus_VV = rng.exponential(1.0, (V, V)) * scale
        draw_data(state, problem, rng)
        return problem, state

    return draw


def successive_conditional(sample, rng):
    """One Gibbs iteration, then fresh data given the new parameters."""
    problem, state = sample
    cm.gibbs_sweep(problem, state, rng)
    draw_data(state, problem, rng)
    return sample


NAMES = ["theta_00", "theta_11", "theta_20*theta_31", "pi_01", "pi_11", "mu_01", "mu_23",
         "log theta_30", "sum y", "lam+_01 + lam-_21"]


def statistics(sample):
    problem, state = sample
    Th, Pi = state.Theta_VC, state.Pi_CC
    mu = Th @ Pi @ Th.T
    out = [Th[0, 0], Th[1, 1], Th[2, 0] * Th[3, 1], Pi[0, 1], Pi[1, 1], mu[0, 1], mu[2, 3],
           np.log(Th[3, 0]), state.Y_VV[problem.obs_VV].sum()]
    if problem.method == "private":
        out.append(state.lam_plus_VV[0, 1] + state.lam_minus_VV[2, 1])
    return np.array(out, dtype=float)


def geweke(method, seed=1):
    with threads(1):  # one row chunk: spare the thread hand-off
        return geweke_z(forward(method), successive_conditional, statistics, n_forward=10_000,
                        n_chains=300, n_steps=100, seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["nonprivate", "private", "private-collapsed"])
def test_geweke_joint_distribution(method):
    z = geweke(method)
    assert_geweke(z, NAMES[:len(z)])


def langevin_conditional(sample, rng):
    """The Langevin moves of the factors alone (y summed out), y given them, fresh data."""
    problem, state = sample
    CommunityMoves(problem)(state.Theta_VC, state.Pi_CC, A0, B0, rng)
    cm.sample_counts(problem, state, rng)
    draw_data(state, problem, rng)
    return sample


@pytest.mark.slow
def test_geweke_of_the_langevin_moves():
    """Geometric noise of several levels, a noiseless cell, held-out cells of garbage."""
    with threads(1):
        z = geweke_z(forward("private-collapsed"), langevin_conditional, statistics,
                     n_forward=10_000, n_chains=300, n_steps=30, seed=1)
    assert_geweke(z, NAMES[:len(z)])


@pytest.mark.parametrize("mechanism, level", [("geometric", 0.8), ("skellam", 30.0)])
def test_the_cells_kept_over_the_actors_steps_are_those_of_the_factors_left(mechanism, level):
    """The actors' steps read each actor's present cells from a cache and write back those of
    an accepted step: after them it holds every observed cell at the factors they leave,
    as a fresh evaluation gives it, and Pi's target read from it is the target computed."""
    n, k = 30, 3
    rng = np.random.default_rng(4)
    Theta, Pi = rng.gamma(1.0, 1.0, (n, k)), rng.gamma(1.0, 1.0, (k, k))
    Y = rng.poisson(Theta @ Pi @ Theta.T) + rng.integers(-6, 7, (n, n))
    held = np.eye(n, dtype=bool) | (rng.random((n, n)) < 0.1)
    problem = type("Problem", (), dict(
        Ytil_VV=Y, alpha_VV=np.full((n, n), level), mechanism=mechanism, obs_VV=~held,
        fix_theta=False, fix_pi=True))()
    moves = CommunityMoves(problem)
    t, series = moves.t, moves.t.series
    noise = (t.kind, moves.a, t.par, t.var, t.lnorm, t.lr, t.lc, series.lo, series.coef,
             series.ratio, series.log_p)
    accepted, cache = np.zeros(n), np.empty((4, n, n))
    marginal._actor_moves(Theta, Pi, *moves.rows, *moves.cols, *noise, 1.0, 1.0,
                          marginal.step(k), 7, accepted, cache)
    assert 0.2 < accepted.mean() < 1.0  # some rows moved, some did not
    fresh = np.empty((4, n, n))
    marginal._all_cells(Theta @ Pi @ Theta.T, *moves.rows, *noise, fresh)
    obs = ~held
    np.testing.assert_allclose(cache[:, obs], fresh[:, obs], rtol=1e-12, atol=1e-12)
    g, s, g1, s1 = (np.empty(k * k) for _ in range(4))
    pi = Pi.ravel().copy()
    read = marginal._pi_target(pi, Theta, *moves.rows, *noise, 1.0, 1.0, g, s, cache, True)
    computed = marginal._pi_target(pi, Theta, *moves.rows, *noise, 1.0, 1.0, g1, s1,
                                   np.empty((4, n, n)), False)
    assert read == pytest.approx(computed, rel=1e-12)
    np.testing.assert_allclose(g, g1, rtol=1e-10)
    np.testing.assert_allclose(s, s1, rtol=1e-10)


def test_a_langevin_proposal_past_the_jump_bound_is_rejected_unevaluated():
    """Skellam noise of 200 hides a row of counts 1000 from rates near 0.01: the drift
    proposes Pi e^52 or so, whose cells' pmfs (rates e^50 times the counts) took minutes to
    hours to walk; the bound rejects every such proposal unevaluated, by a condition
    symmetric in u and u'."""
    n = 12
    Y = np.rint(np.random.default_rng(0).normal(0, 20, (n, n))).astype(np.int64)
    Y[0, :] = Y[:, 0] = 1000
    problem = type("Problem", (), dict(
        Ytil_VV=Y, alpha_VV=np.full((n, n), 200.0), mechanism="skellam",
        obs_VV=np.ones((n, n), bool), fix_theta=True, fix_pi=False))()
    Theta, Pi = np.full((n, 1), 0.1), np.ones((1, 1))
    Theta[0] = 1.0
    moves = CommunityMoves(problem)
    t, series = moves.t, moves.t.series
    g, scale = np.empty(1), np.empty(1)
    marginal._pi_target(Pi.ravel().copy(), Theta, *moves.rows, t.kind, moves.a, t.par, t.var,
                        t.lnorm, t.lr, t.lc, series.lo, series.coef, series.ratio,
                        series.log_p, 0.1, 0.1, g, scale, np.empty((4, n, n)), False)
    h = marginal.step(1)
    drift = 0.5 * h * h * scale[0] ** 2 * g[0]
    assert drift - marginal.JUMP_MAX > 10 * h * scale[0]  # every proposal past the bound
    rates = moves(Theta, Pi, 0.1, 0.1, np.random.default_rng(0))
    assert rates[1] == 0.0 and Pi[0, 0] == 1.0
    x, x1 = np.array([1.0, 2.0]), np.array([1.0, 2.0 * np.exp(marginal.JUMP_MAX * 1.0001)])
    u, u1 = np.log(x), np.log(x1)
    assert marginal._usable(x, u, x.copy())
    assert not marginal._usable(x, u1, x1) and not marginal._usable(x1, u, x)
    x1[1] = 2.0 * np.exp(marginal.JUMP_MAX * 0.9999)
    assert marginal._usable(x, np.log(x1), x1) and marginal._usable(x1, u, x)


@pytest.mark.parametrize(("method", "a0", "fix", "sampler", "expected"), [
    ("nonprivate", 1.0, False, "auto", True), ("naive", 2.0, False, "auto", True),
    ("naive", 0.5, False, "auto", False), ("naive", 0.5, False, "hmc", True),
    ("nonprivate", 2.0, False, "gibbs", False), ("private-collapsed", 1.0, False, "hmc", False),
    ("private", 1.0, False, "auto", False), ("nonprivate", 1.0, True, "hmc", False)])
def test_hmc_runs_the_fixed_count_fits_of_free_factors_by_the_sampler_setting(
        method, a0, fix, sampler, expected):
    mask, alpha = geweke_setup()
    fixed = {"pi": np.ones((C, C))} if fix else {}
    problem = cm.make_problem(FitData(np.ones((V, V), int), alpha, mask, fixed), method, a0, 1.0)
    assert cm.uses_hmc(problem, sampler) is expected


@pytest.mark.parametrize("sampler", ["gibbs", "hmc"])
def test_the_sampler_setting_reaches_the_chains(monkeypatch, sampler):
    seen, shipped = [], cm.uses_hmc
    monkeypatch.setattr(cm, "uses_hmc", lambda problem, s: seen.append(s) or shipped(problem, s))
    Y = np.random.default_rng(0).poisson(2.0, (V, V))
    model = CommunityModel(2, method="nonprivate", a0=1.0, max_iter=6, burnin=2, thin=1,
                           n_chains=2, sampler=sampler, random_state=0).fit(Y)
    assert seen == [sampler]
    assert model.result_.extra["hmc"] == (sampler == "hmc")
    assert model.transform(Y[:3]).shape == (3, 2)  # new actors: a pmf fold-in, always Gibbs


def test_the_estimators_refuse_hmc_for_the_pmf_model():
    with pytest.raises(InputError, match=r"^sampler 'hmc' applies to the community model only"):
        PoissonMF(2, method="nonprivate", sampler="hmc").fit(np.ones((4, 3), int))


def hmc_successive(a0):
    """One HMC transition (fixed step size and unit metric, the prior's shape ``a0``), then
    fresh data given the new parameters."""
    def step(sample, rng):
        problem, state = sample
        cm.hmc_sweep(dataclasses.replace(problem, a0=a0), state, 0.15, np.ones(V * C + C * C),
                     rng)
        draw_data(state, problem, rng)
        return sample
    return step


def hmc_geweke(a0, seed=1):
    return geweke_z(forward("nonprivate"), hmc_successive(a0), statistics, n_forward=10_000,
                    n_chains=300, n_steps=100, seed=seed)


@pytest.mark.slow
def test_hmc_geweke_joint_distribution():
    assert_geweke(hmc_geweke(A0), NAMES[:9])


@pytest.mark.slow
def test_hmc_geweke_detects_a_wrong_prior():
    with pytest.raises(AssertionError):
        assert_geweke(hmc_geweke(A0 + 0.5), NAMES[:9])


@njit
def _update_all_actors_at_once(Theta_VC, Pi_CC, shape_VC, b0, out_ptr, out_idx, in_ptr,
                               in_idx, seed):
    """The invalid update: every actor drawn given the others' previous values."""
    np.random.seed(seed)  # noqa: NPY002
    old = Theta_VC.copy()
    T = old.sum(axis=0)
    for i in range(old.shape[0]):
        u, v = T - old[i], T - old[i]
        for k in range(out_ptr[i], out_ptr[i + 1]):
            u -= old[out_idx[k]]
        for k in range(in_ptr[i], in_ptr[i + 1]):
            v -= old[in_idx[k]]
        rate = b0 + Pi_CC @ u + Pi_CC.T @ v
        for c in range(old.shape[1]):
            Theta_VC[i, c] = np.random.gamma(shape_VC[i, c], 1.0) / rate[c]  # noqa: NPY002


@pytest.mark.slow
def test_geweke_detects_updating_all_actors_at_once(monkeypatch):
    monkeypatch.setattr(cm, "_update_theta", _update_all_actors_at_once)
    with pytest.raises(AssertionError):
        assert_geweke(geweke("nonprivate"), NAMES[:9])


# ------------------------------------------------------------------ recovery


def planted_network(seed, V=20, C=5):
    """S3-like network: 5 blocks of 4 actors, strong within-block rates."""
    rng = np.random.default_rng(seed)
    z = np.repeat(np.arange(C), V // C)
    Theta = rng.gamma(1.0, 0.1, (V, C))
    Theta[np.arange(V), z] += rng.gamma(4.0, 0.5, V)
    Pi = np.full((C, C), 0.05) + 2 * np.eye(C)
    mu = Theta @ Pi @ Theta.T
    Y = rng.poisson(mu)
    np.fill_diagonal(Y, 0)
    return mu, Y


def fit_mae(method, Ytil, alpha, mu, seeds=(1, 2, 3)):
    """Median over chains of the MAE of mu_hat (chains differ by local mode)."""
    V = len(mu)
    mask = np.eye(V, dtype=bool)
    data = FitData(Ytil, np.full((1, 1), alpha), mask)
    maes = []
    for seed in seeds:
        fit = cm.fit_community_mcmc(data, method=method, n_components=5, a0=0.1, b0=0.1,
                                    n_iter=500, burnin=250, thin=5,
                                    rng=np.random.default_rng(seed))
        maes.append(np.abs(fit.mu_hat - mu)[~mask].mean())
    return np.median(maes)


@pytest.mark.parametrize("method", ["private", "private-collapsed"])
def test_private_beats_naive_and_nears_nonprivate(method):
    mu, Y = planted_network(0)
    rng = np.random.default_rng(5)
    exact = fit_mae("nonprivate", Y, 0.0, mu)
    for alpha in (0.8, 0.1):
        Ytil = Y + rng.geometric(1 - alpha, Y.shape) - rng.geometric(1 - alpha, Y.shape)
        private, naive = fit_mae(method, Ytil, alpha, mu), fit_mae("naive", Ytil, alpha, mu)
        if alpha == 0.8:  # 3 data sets: 0.57-0.73 (single chains: 0.49-0.93)
            assert private < 0.8 * naive, (private, naive)
        else:
            assert private < 1.2 * exact, (private, exact)  # 3 data sets: 0.99-1.10


# ------------------------------------------------------------------ reproducibility, outputs


def small_fit(threads, seed=3, V=150, garbage=None, **kw):
    rng = np.random.default_rng(0)
    Y = rng.poisson(rng.gamma(0.5, 2.0, (V, V)))
    Ytil = Y + rng.geometric(0.5, Y.shape) - rng.geometric(0.5, Y.shape)
    mask = rng.random((V, V)) < 0.05
    np.fill_diagonal(mask, True)
    if garbage is not None:
        Ytil = np.where(mask, garbage, Ytil)
    alpha = np.full((V, 1), 0.5)
    kw = {"method": "private", "n_components": 3, "a0": 0.5, "b0": 0.5, "n_iter": 8,
          "burnin": 4, "thin": 2, **kw}
    return cm.fit_community_mcmc(FitData(Ytil, alpha, mask), rng=np.random.default_rng(seed),
                                 threads=threads, **kw)


def same_fit(a, b):
    return (np.array_equal(a.mu_hat, b.mu_hat) and np.array_equal(a.y_hat, b.y_hat)
            and np.array_equal(a.samples["theta"], b.samples["theta"])
            and np.array_equal(a.trace["loglik"], b.trace["loglik"]))


@pytest.mark.parametrize("method", ["private", "private-collapsed"])
def test_bit_identical_for_seed_and_thread_count(method):
    one, two = small_fit(1, method=method), small_fit(2, method=method)
    assert same_fit(one, two)
    assert same_fit(two, small_fit(2, method=method))
    assert not same_fit(one, small_fit(1, seed=4, method=method))


def test_held_out_values_are_never_read():
    assert same_fit(small_fit(1, garbage=-5), small_fit(1, garbage=40))


def test_outputs_shapes_and_fixed_factors():
    V, C = 150, 3
    Pi = np.eye(C) + 0.1
    fit = cm.fit_community_mcmc(
        FitData(np.random.default_rng(0).poisson(1.0, (V, V)), np.zeros((1, 1)),
                np.eye(V, dtype=bool), {"pi": Pi}),
        method="nonprivate", n_components=C, a0=0.5, b0=0.5, n_iter=12, burnin=2, thin=5,
        rng=np.random.default_rng(0))
    assert fit.samples["theta"].shape == (2, V, C) and fit.log_joint.shape == (2,)
    assert fit.trace["loglik"].shape == (12,) and fit.y_hat is None
    assert np.all(fit.samples["pi"] == Pi) and len(fit.extra["start_loglik"]) == cm.INIT_CHAINS
    assert set(fit.elapsed) == {"burnin", "sampling"}
    assert np.allclose(fit.mu_hat, np.mean([t @ Pi @ t.T for t in fit.samples["theta"]], 0))
