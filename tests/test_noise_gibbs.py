"""private-collapsed MCMC under discrete Gaussian and Skellam noise: Geweke joint-distribution
tests for both models (which fail when the sampler is given the wrong noise), and recovery."""

import dataclasses

import numpy as np
import pytest
from geweke import assert_geweke, geweke_parts, geweke_z, z_scores

from lppf import noise
from lppf._numba import threads
from lppf.mcmc import community as cm
from lppf.mcmc import fit_mcmc
from lppf.mcmc.marginal import CommunityMoves, Moves
from lppf.mcmc.pmf import gibbs_sweep, make_state, update_counts
from lppf.validation import FitData

A0, B0 = 1.0, 1.0
D, V, K = 3, 4, 2
MASK = np.zeros((D, V), bool)
MASK[0, 2] = MASK[2, 0] = True
PARAMS = {"discrete-gaussian": np.array([[0.0, 0.6, 1.5, 3.0], [1.0, 0.3, 2.0, 0.8],
                                         [2.5, 0.0, 1.2, 0.5]]),
          "skellam": np.array([[0.0, 0.2, 1.0, 4.0], [0.5, 2.0, 0.1, 1.5],
                               [3.0, 0.0, 0.7, 0.3]])}
NAMES = ["theta", "phi", "theta^2", "phi^2", "y", "y^2", "y~", "y~^2", "y*y~", "y[1,3]",
         "y~[1,3]", "(y~-y)^2", "|y~-y|"]  # y: the draws of the sweep given y~


def pmf_forward(mechanism):
    param = PARAMS[mechanism]

    def draw(rng):
        Theta = rng.gamma(A0, 1 / B0, (D, K))
        Phi = rng.gamma(A0, 1 / B0, (K, V))
        Y = rng.poisson(Theta @ Phi)
        return Theta, Phi, Y, Y + noise.sample(mechanism, param, rng)
    return draw


def pmf_step(mechanism, fitted, moves=False):
    """Fresh data y~ given y (the noise ``PARAMS[mechanism]``), then one sweep given y~ with
    the noise ``fitted`` assumes; held-out counts are redrawn from the model. The state
    keeps the y~ the sweep saw, so that the statistics see the draws of y next to it.
    ``moves``: the Langevin moves of the factors (y summed out), then y given them, instead
    of the sweep."""
    def step(joint, rng):
        Theta, Phi, Y, _ = joint
        Ytil = Y + noise.sample(mechanism, PARAMS[mechanism], rng)
        data = FitData(Ytil, fitted, MASK, mechanism=mechanism)
        state = make_state(data, "private-collapsed", Theta, Phi, Y=Y.astype(np.int32))
        if moves:
            Moves(data)(state.Theta, state.Phi, A0, B0, rng)
            update_counts(state, data, rng)
        else:
            gibbs_sweep(state, data, A0, B0, rng)
        Y = np.where(MASK, rng.poisson(state.Theta @ state.Phi), state.Y)
        return state.Theta, state.Phi, Y, Ytil
    return step


def pmf_statistics(joint):
    Theta, Phi, Y_all, Yt_all = joint
    Y, Yt = Y_all[~MASK], Yt_all[~MASK]
    return np.array([Theta.mean(), Phi.mean(), (Theta ** 2).mean(), (Phi ** 2).mean(),
                     Y.mean(), (Y ** 2).mean(), Yt.mean(), (Yt ** 2).mean(), (Y * Yt).mean(),
                     Y_all[1, 3], Yt_all[1, 3], ((Yt - Y) ** 2).mean(), np.abs(Yt - Y).mean()],
                    dtype=float)


def pmf_geweke(mechanism, fitted, seed=11, moves=False):
    with threads(1):
        return geweke_z(pmf_forward(mechanism), pmf_step(mechanism, fitted, moves),
                        pmf_statistics, n_forward=10_000, n_chains=400, n_steps=10, seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["discrete-gaussian", "skellam"])
def test_pmf_geweke(mechanism):
    assert_geweke(pmf_geweke(mechanism, PARAMS[mechanism]), NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["discrete-gaussian", "skellam"])
def test_pmf_geweke_fails_with_the_wrong_noise(mechanism):
    """A sampler that assumes the noise parameter 1.5 times too large is caught."""
    with pytest.raises(AssertionError):
        assert_geweke(pmf_geweke(mechanism, PARAMS[mechanism] * 1.5), NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["discrete-gaussian", "skellam"])
def test_pmf_geweke_of_the_langevin_moves(mechanism):
    """The factors moved by the Langevin moves alone (y summed out), then y given them."""
    assert_geweke(pmf_geweke(mechanism, PARAMS[mechanism], moves=True), NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["discrete-gaussian", "skellam"])
def test_pmf_geweke_of_the_langevin_moves_fails_with_the_wrong_noise(mechanism):
    with pytest.raises(AssertionError):
        assert_geweke(pmf_geweke(mechanism, PARAMS[mechanism] * 1.5, moves=True), NAMES)


# ------------------------------------------------------------------ community model

VC, C = 4, 2
CM_MASK = np.eye(VC, dtype=bool)
CM_MASK[0, 2] = CM_MASK[3, 1] = True
CM_PARAMS = {"discrete-gaussian": np.array([[0.0, 0.8, 1.5, 2.0], [1.0, 0.0, 0.0, 0.5],
                                            [2.5, 0.7, 0.0, 1.2], [0.9, 1.1, 1.8, 0.0]]),
             "skellam": np.array([[0.0, 0.3, 1.0, 2.0], [0.5, 0.0, 0.0, 0.2],
                                  [1.5, 0.7, 0.0, 0.4], [0.9, 1.1, 0.6, 0.0]])}
CM_NAMES = ["theta_00", "theta_11", "pi_01", "pi_11", "mu_01", "mu_23", "sum y", "sum y~",
            "sum y y~", "sum (y~-y)^2", "sum |y~-y|"]


def cm_draw_data(mechanism, state, problem, rng):
    obs = problem.obs_VV
    mu = state.Theta_VC @ state.Pi_CC @ state.Theta_VC.T
    Y = np.where(obs, rng.poisson(mu), 0)
    state.Y_VV[:] = Y
    tau = noise.sample(mechanism, CM_PARAMS[mechanism], rng)
    problem.Ytil_VV[:] = np.where(obs, Y + tau, 7)


def cm_forward(mechanism, fitted):
    template = cm.make_problem(FitData(np.zeros((VC, VC), int), fitted, CM_MASK,
                                       mechanism=mechanism), "private-collapsed", A0, B0)

    def draw(rng):
        problem = dataclasses.replace(template, Ytil_VV=np.zeros((VC, VC), np.int32))
        state = cm.State(Theta_VC=rng.gamma(A0, 1 / B0, (VC, C)),
                         Pi_CC=rng.gamma(A0, 1 / B0, (C, C)),
                         Y_VV=np.zeros((VC, VC), np.int32))
        cm_draw_data(mechanism, state, problem, rng)
        return problem, state
    return draw


def cm_statistics(sample):
    problem, state = sample
    Th, Pi = state.Theta_VC, state.Pi_CC
    mu = Th @ Pi @ Th.T
    obs = problem.obs_VV
    Y, Yt = state.Y_VV[obs], problem.Ytil_VV[obs].astype(float)
    return np.array([Th[0, 0], Th[1, 1], Pi[0, 1], Pi[1, 1], mu[0, 1], mu[2, 3], Y.sum(),
                     Yt.sum(), (Y * Yt).sum(), ((Yt - Y) ** 2).sum(), np.abs(Yt - Y).sum()],
                    dtype=float)


def cm_geweke_parts(mechanism, fitted, seed=1, moves=False):
    """``moves``: the Langevin moves of the factors (y summed out), then y given them, instead
    of the sweep."""
    def step(sample, rng):  # fresh data, then a sweep: the statistics see both
        problem, state = sample
        cm_draw_data(mechanism, state, problem, rng)
        if moves:
            CommunityMoves(problem)(state.Theta_VC, state.Pi_CC, A0, B0, rng)
            cm.sample_counts(problem, state, rng)
        else:
            cm.gibbs_sweep(problem, state, rng)
        return sample
    with threads(1):
        return geweke_parts(cm_forward(mechanism, fitted), step, cm_statistics,
                            n_forward=10_000, n_chains=300, n_steps=30, seed=seed)


def cm_geweke(mechanism, fitted, seed=1, moves=False):
    return z_scores(cm_geweke_parts(mechanism, fitted, seed, moves))


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["discrete-gaussian", "skellam"])
def test_community_geweke(mechanism):
    assert_geweke(cm_geweke(mechanism, CM_PARAMS[mechanism]), CM_NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["discrete-gaussian", "skellam"])
def test_community_geweke_of_the_langevin_moves(mechanism):
    assert_geweke(cm_geweke(mechanism, CM_PARAMS[mechanism], moves=True), CM_NAMES)


@pytest.mark.slow
def test_community_geweke_of_the_langevin_moves_fails_with_the_wrong_noise():
    with pytest.raises(AssertionError):
        assert_geweke(cm_geweke("skellam", CM_PARAMS["skellam"] * 1.5, moves=True), CM_NAMES)


@pytest.mark.slow
def test_community_geweke_fails_with_the_wrong_noise():
    with pytest.raises(AssertionError):
        assert_geweke(cm_geweke("discrete-gaussian", CM_PARAMS["discrete-gaussian"] * 1.5),
                      CM_NAMES)


# ------------------------------------------------------------------ recovery


@pytest.mark.parametrize(("mechanism", "param"), [("discrete-gaussian", 4.0), ("skellam", 8.0)])
def test_private_collapsed_beats_naive(mechanism, param):
    rng = np.random.default_rng(0)
    Theta, Phi = rng.gamma(0.3, 3.0, (40, 3)), rng.gamma(0.3, 3.0, (3, 30))
    mu = Theta @ Phi
    Y = rng.poisson(mu)
    Ytil = Y + noise.sample(mechanism, np.full(Y.shape, param), rng)
    mae = {}
    for method in ("private-collapsed", "naive"):
        data = FitData(Ytil, np.full((1, 1), param), np.zeros(Y.shape, bool),
                       mechanism=mechanism)
        fit = fit_mcmc("pmf", data, method=method, n_components=3, a0=0.1, b0=1.0,
                       n_iter=200, burnin=100, thin=5, rng=np.random.default_rng(1))
        mae[method] = np.abs(fit.mu_hat - mu).mean()
    assert mae["private-collapsed"] < 0.8 * mae["naive"], mae
