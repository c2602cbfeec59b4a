"""The numba log joint of a saved sample against scipy.stats on random inputs."""

import numpy as np
import pytest
from scipy import stats

from lppf._numba import threads
from lppf.log_densities import count_loglik, gamma_logpdf_sum
from lppf.mcmc.pmf import log_joint, make_state
from lppf.mechanisms import noise_logpmf
from lppf.validation import FitData


def reference(Y, mu, mask, Ytil=None, alpha=None):
    obs = ~mask
    total = stats.poisson.logpmf(Y[obs], mu[obs]).sum()
    if Ytil is not None:
        a = np.broadcast_to(alpha, Y.shape)[obs]
        total += np.sum(noise_logpmf(Ytil[obs] - Y[obs], a))
    return float(total)


def random_case(rng, alpha_shape, D=70, V=90):
    Y = rng.poisson(rng.gamma(0.5, 4.0, (D, V))).astype(np.int32)
    Y[0, :3] = [0, 300, 1000]  # beyond the log-factorial table
    mu = rng.gamma(0.5, 4.0, (D, V))
    mu[1, :4] = 0.0  # zero rates: -inf unless y = 0
    Y[1, :4] = 0
    alpha = rng.uniform(0.05, 0.95, alpha_shape)
    alpha.flat[0] = 0.0  # noiseless cells
    Ytil = Y + rng.geometric(0.4, Y.shape) - rng.geometric(0.4, Y.shape)
    Ytil = np.where(np.broadcast_to(alpha, Y.shape) == 0, Y, Ytil)
    mask = rng.random((D, V)) < 0.2
    return Y, mu, mask, Ytil, alpha


@pytest.mark.parametrize("alpha_shape", [(1, 1), (70, 1), (1, 90), (70, 90)])
def test_count_loglik_matches_scipy(alpha_shape):
    rng = np.random.default_rng(3)
    Y, mu, mask, Ytil, alpha = random_case(rng, alpha_shape)
    expected = reference(Y, mu, mask, Ytil, alpha)
    assert count_loglik(Y, mu, mask, Ytil, alpha) == pytest.approx(expected, rel=1e-10)
    assert count_loglik(Y, mu, mask) == pytest.approx(reference(Y, mu, mask), rel=1e-10)


def test_count_loglik_infinite_cases_and_threads():
    rng = np.random.default_rng(4)
    Y, mu, mask, Ytil, alpha = random_case(rng, (1, 1))
    mask[:] = False
    mu[1, 0], Y[1, 0] = 0.0, 2  # y > 0 at mu = 0
    assert count_loglik(Y, mu, mask) == -np.inf
    alpha = np.zeros((1, 1))
    Ytil = Y.copy()
    Ytil[5, 5] += 1  # y~ != y without noise
    mu[1, 0], Y[1, 0] = 1.0, 2
    assert count_loglik(Y, mu, mask, Ytil, alpha) == -np.inf
    Y = rng.poisson(2.0, (300, 40))
    mu = rng.gamma(2.0, 1.0, Y.shape)
    mask = np.zeros(Y.shape, bool)
    with threads(1):
        one = count_loglik(Y, mu, mask)
    with threads(2):
        assert count_loglik(Y, mu, mask) == one


def test_gamma_logpdf_sum_matches_scipy():
    X = np.random.default_rng(5).gamma(0.3, 2.0, (40, 7)) + 1e-300
    for a0, b0 in [(0.1, 1.0), (2.5, 0.3)]:
        expected = stats.gamma(a0, scale=1.0 / b0).logpdf(X).sum()
        assert gamma_logpdf_sum(X, a0, b0) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("method", ["private", "private-collapsed", "naive"])
def test_pmf_log_joint_matches_scipy(method):
    rng = np.random.default_rng(6)
    Y, mu, mask, Ytil, alpha = random_case(rng, (70, 1))
    Theta, Phi = rng.gamma(0.5, 1.0, (70, 4)), rng.gamma(0.5, 1.0, (4, 90))
    data = FitData(Ytil, alpha, mask)
    state = make_state(data, method, Theta, Phi, Y=np.where(mask, 0, Y).astype(np.int32))
    mu = Theta @ Phi
    prior = stats.gamma(0.1, scale=1.0)
    expected = reference(state.Y, mu, mask, *((Ytil, alpha) if method != "naive" else ()))
    expected += prior.logpdf(Theta).sum() + prior.logpdf(Phi).sum()
    assert log_joint(state, data, 0.1, 1.0) == pytest.approx(expected, rel=1e-10)
    assert log_joint(state, data, 0.1, 1.0, mu) == log_joint(state, data, 0.1, 1.0)
