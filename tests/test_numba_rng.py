"""The chunk-local xoshiro256+ stream of lppf._numba and the gamma and binomial draws on it."""

import numpy as np
import pytest
from gof import chisquare_pvalue
from numba import njit
from scipy import stats

from lppf._numba import rng_state, threads, uniform
from lppf.draws import GAMMA_CHUNK, binomial, gamma_draws, gamma_posterior

_M = 2**64 - 1


def reference(state, n):
    """xoshiro256+ (Blackman and Vigna) in Python integers."""
    s = [int(x) for x in state]
    out = []
    for _ in range(n):
        result = (s[0] + s[3]) & _M
        t = (s[1] << 17) & _M
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & _M
        out.append((result >> 11) * 2.0**-53)
    return out


@njit
def _draws(seed, n):
    rs = rng_state(seed)
    out = np.empty(n)
    for i in range(n):
        out[i] = uniform(rs)
    return out


def test_matches_reference_algorithm():
    state = rng_state(12345)
    assert len(set(state.tolist())) == 4
    np.testing.assert_array_equal(_draws(12345, 50), reference(state, 50))


def test_uniform_on_unit_interval():
    u = _draws(7, 200_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    counts = np.bincount((u * 100).astype(int), minlength=100)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert not np.array_equal(_draws(7, 10), _draws(8, 10))


# ---------------------------------------------------------------------------- gamma draws


@pytest.mark.parametrize("shape", [0.05, 0.5, 0.99, 1.0, 2.5, 30.1, 1000.1])
def test_gamma_draws_follow_the_gamma_cdf(shape):
    x = gamma_draws(np.full(100_000, shape), np.full(1, 3.0), np.random.default_rng(1))
    assert stats.kstest(x, "gamma", args=(shape, 0.0, 3.0)).pvalue > 1e-3


def test_gamma_draws_use_each_entrys_shape_and_scale():
    """Mixed shapes and scales in one call: each draw through its own gamma cdf is uniform."""
    rng = np.random.default_rng(2)
    shape = 0.1 + rng.poisson(3.0, (400, 250)) * (rng.random((400, 250)) < 0.5)
    scale = rng.uniform(0.01, 10.0, (1, 250))
    x = gamma_draws(shape, scale, np.random.default_rng(3))
    assert x.shape == shape.shape
    pit = stats.gamma.cdf(x / scale, shape).ravel()
    assert stats.kstest(pit, "uniform").pvalue > 1e-3


def test_gamma_draws_do_not_depend_on_the_thread_count():
    shape = np.linspace(0.05, 40.0, 3 * GAMMA_CHUNK + 5)
    draws = []
    for n in (1, 2):
        with threads(n):
            draws.append(gamma_draws(shape, np.ones(1), np.random.default_rng(4)))
    np.testing.assert_array_equal(draws[0], draws[1])


@pytest.mark.parametrize("rate_shape", [(1, 70), (130, 1), (130, 70)])
def test_gamma_posterior_is_gamma_draws_of_the_posterior_to_the_bit(rate_shape):
    """The sampler's factor draws: the same numbers as gamma_draws of shape a0 + counts and
    scale 1 / (b0 + rate), floored, with the rate broadcast over rows or columns; transposed
    counts (as the allocation's column totals) too; every thread count."""
    rng = np.random.default_rng(5)
    counts = rng.poisson(rng.gamma(0.2, 20.0, (70, 130))).T  # (130, 70), not C-contiguous
    rate = rng.gamma(1.0, 1.0, rate_shape)
    rate[0, 0] = 1e300  # a draw below the floor
    want = np.maximum(gamma_draws(0.3 + counts, 1.0 / (2.0 + rate), np.random.default_rng(6)),
                      1e-250)
    assert want.min() == 1e-250
    for n in (1, 2):
        with threads(n):
            got = gamma_posterior(counts, 0.3, rate, 2.0, 1e-250, np.random.default_rng(6))
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------- binomial draws


@njit
def _binomials(seed, n, p, size):
    rs = rng_state(seed)
    out = np.empty(size, np.int64)
    for i in range(size):
        out[i] = binomial(n, p, rs)
    return out


@pytest.mark.parametrize(("n", "p"), [
    (1, 0.3), (7, 0.999), (40, 0.5), (100, 0.29), (59, 0.51),  # inversion (n r <= 30)
    (200, 0.16), (1000, 0.7), (10**6, 1e-3), (10**9, 0.4), (5000, 0.5),  # BTPE
])
def test_binomial_draws_follow_the_binomial_pmf(n, p):
    """Chi-square against scipy's pmf on the central support, for both algorithms, both
    sides of p = 1/2 and counts far beyond int32."""
    x = _binomials(11, n, p, 200_000)
    dist = stats.binom(n, p)
    lo, hi = int(dist.ppf(1e-9)), min(n, int(dist.isf(1e-9)) + 1)
    assert x.min() >= 0 and x.max() <= n
    assert chisquare_pvalue(x, lo, dist.pmf(np.arange(lo, hi + 1))) > 0.01


def test_binomial_draws_at_the_ends_of_p_and_n():
    assert set(_binomials(1, 0, 0.4, 100)) == {0}
    assert set(_binomials(1, 30, 0.0, 100)) == {0}
    assert set(_binomials(1, 30, 1.0, 100)) == {30}
    assert _binomials(1, 10**12, 0.5, 1000).mean() == pytest.approx(5e11, rel=1e-5)
