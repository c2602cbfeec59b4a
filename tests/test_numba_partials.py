"""Partial sums of parallel kernels (lppf._numba.chunk_partials / thread_partials / total):
the allocations conserve every count and give the same sums for any thread count, with
more chunks than numpy sums sequentially (>= 8)."""

import numpy as np
import pytest
from scipy import special

from lppf._numba import CHUNK, chunk_partials, thread_partials, threads, total
from lppf.mcmc import community
from lppf.mcmc.pmf import allocate, make_state
from lppf.validation import FitData

N = 10 * CHUNK  # rows: 10 chunks


def test_thread_partials_are_integers_only():
    assert thread_partials((3, 2)).dtype == np.int64
    with pytest.raises(TypeError, match="integers"):
        thread_partials((3,), np.float64)


def test_total_adds_the_chunk_axis():
    X = chunk_partials(4, (2, 3), np.int64)
    X[:] = np.arange(24).reshape(4, 2, 3)
    np.testing.assert_array_equal(total(X), X.sum(axis=0))
    assert chunk_partials(5).shape == (5,)


def _loglik(Y, mu):
    return float(np.sum(Y * np.log(mu) - special.gammaln(Y + 1.0)))


def test_pmf_allocation_conserves_counts_for_any_thread_count():
    rng = np.random.default_rng(0)
    Y = rng.poisson(2.0, (N, 30))
    mask = rng.random(Y.shape) < 0.1
    state = make_state(FitData(Y, np.zeros((1, 1)), mask), "nonprivate",
                       rng.gamma(1.0, 1.0, (N, 5)), rng.gamma(1.0, 1.0, (5, 30)))
    out = []
    for n in (1, 2):
        with threads(n):
            out.append(allocate(state, FitData(Y, np.zeros((1, 1)), mask),
                                np.random.default_rng(1)))
    Yo = np.where(mask, 0, Y)
    for Y_DK, Y_KV, loglik in out:
        np.testing.assert_array_equal(Y_DK.sum(axis=1), Yo.sum(axis=1))
        np.testing.assert_array_equal(Y_KV.sum(axis=0), Yo.sum(axis=0))
        keep = Yo > 0
        np.testing.assert_allclose(loglik, _loglik(Yo[keep], (state.Theta @ state.Phi)[keep]),
                                   rtol=1e-12)
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)


def test_community_allocation_conserves_counts_for_any_thread_count():
    rng = np.random.default_rng(2)
    Y = rng.poisson(1.0, (N, N))
    obs = rng.random(Y.shape) > 0.1
    np.fill_diagonal(obs, False)
    Theta, Pi = rng.gamma(1.0, 1.0, (N, 3)), rng.gamma(1.0, 1.0, (3, 3))
    out = []
    for n in (1, 2):
        with threads(n):
            out.append(community.allocate(Y, obs, Theta, Pi, np.random.default_rng(3)))
    Yo = np.where(obs, Y, 0)
    for send, recv, pair, loglik in out:
        np.testing.assert_array_equal(send.sum(axis=1), Yo.sum(axis=1))
        np.testing.assert_array_equal(recv.sum(axis=1), Yo.sum(axis=0))
        np.testing.assert_array_equal(pair.sum(axis=0), recv.sum(axis=0))
        np.testing.assert_array_equal(pair.sum(axis=1), send.sum(axis=0))
        keep = Yo > 0
        np.testing.assert_allclose(loglik, _loglik(Yo[keep], (Theta @ Pi @ Theta.T)[keep]),
                                   rtol=1e-12)
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)


def test_pmf_allocation_loglik_over_rates_of_every_magnitude():
    """Counts up to 8 take y log mu through a running product of mu^y: rates from 1e-240 to
    1e240 (inside and outside its range, products crossing it both ways) and counts on both
    sides of 8 give the summed logs."""
    rng = np.random.default_rng(3)
    Y = np.ones((N, 40), np.int64)
    Y[:, ::7] = 2
    Y[:, 3::7] = 8
    Y[:, 5::7] = 9
    theta = 10.0 ** rng.uniform(-120, 120, (N, 1)) * rng.gamma(1.0, 1.0, (N, 3))
    phi = 10.0 ** rng.uniform(-120, 120, (1, 40)) * rng.gamma(1.0, 1.0, (3, 40))
    mask = np.zeros(Y.shape, bool)
    state = make_state(FitData(Y, np.zeros((1, 1)), mask), "nonprivate", theta, phi)
    loglik = allocate(state, FitData(Y, np.zeros((1, 1)), mask), np.random.default_rng(1))[2]
    mu = theta @ phi
    assert mu.min() < 1e-150 and mu.max() > 1e150
    np.testing.assert_allclose(loglik, _loglik(Y, mu), rtol=1e-12)
