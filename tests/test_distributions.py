"""Bessel and Skellam distributions: exact pmfs, log I_nu, moments and the exact sampler."""

import math

import gof
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from scipy import special, stats

from lppf import distributions as D
from lppf._numba import rng_state, threads

P_MIN = 0.01


def chisquare_pvalue(draws, logpmf, lo, hi):
    """Chi-square goodness of fit of integer ``draws`` to the pmf ``exp(logpmf(k))`` on
    ``lo..hi``, which must hold all but a negligible mass."""
    pmf = np.exp(logpmf(np.arange(lo, hi + 1)))
    assert abs(pmf.sum() - 1) < 1e-6, "support misses mass"
    return gof.chisquare_pvalue(draws, lo, pmf)


def support(nu, a, width=12.0):
    """A range of m holding all but a negligible mass of Bes(nu, a)."""
    mode, sd = D.bessel_mode(nu, a), math.sqrt(D.bessel_var(nu, a))
    return max(0, int(mode - width * sd) - 10), int(mode + width * sd) + 10


# --- log I_nu(a) -------------------------------------------------------------------------------

NU_GRID = np.array([0.0, 0.3, 1.0, 2.5, 7.0, 19.9, 20.0, 33.3, 150.0, 1e3, 1e4])
A_GRID = np.array([1e-8, 1e-3, 0.2, 1.0, 6.0, 29.9, 30.0, 120.0, 400.0, 3e3, 1e5])


def test_log_bessel_i_kernel_matches_scipy_where_scipy_is_finite():
    nu, a = (x.ravel() for x in np.meshgrid(NU_GRID, A_GRID))
    scaled = special.ive(nu, a)
    ok = scaled > 1e-290
    ref = np.log(scaled[ok]) + a[ok]
    got = D._log_bessel_i_flat(nu[ok], a[ok])
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)
    assert ok.sum() > 80


@pytest.mark.parametrize("a", [1e-8, 1e-3, 0.5, 25.0, 31.0, 900.0, 1e5])
def test_log_bessel_i_half_integer_closed_forms(a):
    """I_(1/2)(a) = sqrt(2/(pi a)) sinh a and I_(3/2)(a) = sqrt(2/(pi a)) (cosh a - sinh a / a)."""
    log_pre = 0.5 * math.log(2 / (math.pi * a))
    log_sinh = a + math.log(-math.expm1(-2 * a) / 2)
    if a < 1:  # power series, avoiding the cancellation in cosh a - sinh a / a
        q = a * a / 4
        series = sum(q**k / (math.factorial(k) * special.poch(2.5, k)) for k in range(12))
        log_i32 = 1.5 * math.log(a / 2) - math.lgamma(2.5) + math.log(series)
    else:
        log_i32 = log_pre + a + math.log((1 + math.exp(-2 * a)) / 2 + math.expm1(-2 * a) / (2 * a))
    for f in (D.log_bessel_i_nb, D.log_bessel_i):
        assert f(0.5, a) == pytest.approx(log_pre + log_sinh, rel=1e-13, abs=1e-13)
        assert f(1.5, a) == pytest.approx(log_i32, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("nu", [0.0, 3.0, 19.0, 20.0, 57.5, 1e3, 1e4])
def test_log_bessel_i_small_argument_limit(nu):
    """For tiny a, I_nu(a) = (a/2)^nu / Gamma(nu+1) (1 + (a/2)^2/(nu+1) + ...): where scipy's
    ive underflows (nu = 1e4) both the kernel and the entry point still agree with it."""
    a = 1e-8
    ref = nu * math.log(a / 2) - math.lgamma(nu + 1) + math.log1p(a * a / (4 * (nu + 1)))
    assert D.log_bessel_i_nb(nu, a) == pytest.approx(ref, rel=1e-13)
    assert D.log_bessel_i(nu, a) == pytest.approx(ref, rel=1e-13)


def test_log_bessel_i_at_zero():
    assert D.log_bessel_i_nb(0.0, 0.0) == 0.0
    assert D.log_bessel_i_nb(2.0, 0.0) == -math.inf


# --- Bessel pmf and moments ---------------------------------------------------------------------

STABILITY_GRID = [(nu, a) for nu in (0.0, 0.5, 3.7, 19.9, 20.0, 150.0, 1e4)
                  for a in (1e-8, 1e-3, 0.7, 29.9, 30.0, 500.0, 1e5)]


@pytest.mark.parametrize(("nu", "a"), STABILITY_GRID)
def test_bessel_logpmf_normalizes(nu, a):
    lo, hi = support(nu, a, width=40.0)
    m = np.arange(lo, hi + 1)
    logp = D.bessel_logpmf(m, nu, a)
    assert np.all(np.isfinite(logp))
    assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-9)
    logp_nb = np.array([D.bessel_logpmf_nb(int(k), nu, a) for k in m[:: max(1, m.size // 50)]])
    np.testing.assert_allclose(logp_nb, logp[:: max(1, m.size // 50)], rtol=1e-9, atol=1e-9)


MOMENT_GRID = [(0.0, 0.3), (2.5, 4.0), (30.0, 200.0), (1e4, 1e5), (1.0, 1e4)]


@pytest.mark.parametrize(("nu", "a"), MOMENT_GRID)
def test_bessel_moments_and_mode_match_the_pmf(nu, a):
    lo, hi = support(nu, a, width=40.0)
    m = np.arange(lo, hi + 1)
    p = np.exp(D.bessel_logpmf(m, nu, a))
    mean = (m * p).sum()
    assert D.bessel_mean(nu, a) == pytest.approx(mean, rel=1e-9)
    assert D.bessel_mean_nb(nu, a) == pytest.approx(mean, rel=1e-9)
    assert D.bessel_var(nu, a) == pytest.approx(((m - mean) ** 2 * p).sum(), rel=1e-6)
    assert D.bessel_mode(nu, a) == m[np.argmax(p)] == D.bessel_mode_nb(nu, a)


def test_bessel_logpmf_edge_cases():
    assert D.bessel_logpmf(-1, 2.0, 1.0) == -np.inf
    assert D.bessel_logpmf(0, 2.0, 0.0) == 0.0
    assert D.bessel_logpmf(1, 2.0, 0.0) == -np.inf
    assert D.bessel_logpmf_nb(-1, 2.0, 1.0) == -math.inf


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1e4), st.floats(1e-8, 1e5))
def test_bessel_mean_within_one_of_mode(nu, a):
    assert abs(D.bessel_mean(nu, a) - D.bessel_mode(nu, a)) <= 1.0


def test_theorem3_min_given_difference_is_bessel():
    """y1 ~ Pois(l1), y2 ~ Pois(l2): min(y1, y2) | y1 - y2 = d ~ Bes(|d|, 2 sqrt(l1 l2))."""
    l1, l2 = 3.0, 1.5
    rng = np.random.default_rng(20190609)
    y1, y2 = rng.poisson(l1, 400_000), rng.poisson(l2, 400_000)
    delta, low = y1 - y2, np.minimum(y1, y2)
    a = 2 * math.sqrt(l1 * l2)
    for d in (-2, 0, 1, 4):
        draws = low[delta == d]
        pval = chisquare_pvalue(draws, lambda m, d=d: D.bessel_logpmf(m, abs(d), a), 0, 60)
        assert pval > P_MIN, (d, pval)


# --- exact sampler ------------------------------------------------------------------------------

SAMPLER_GRID = [
    (0.0, 0.1), (0.0, 0.9), (1.0, 0.5), (0.5, 1.7), (3.0, 2.0), (2.5, 10.0), (10.0, 10.0),
    (0.0, 100.0), (7.3, 60.0), (1.5, 1e4), (1e3, 10.0), (50.0, 3.0), (30.0, 200.0), (25.0, 30.0),
    (40.0, 400.0), (0.0, 1.99), (20.0, 9.1),  # the last two: mode 0 with much mass above it
]


@pytest.mark.parametrize(("nu", "a"), SAMPLER_GRID)
def test_bessel_sample_matches_pmf(nu, a):
    seed = 100 + SAMPLER_GRID.index((nu, a))
    draws = D.bessel_sample(nu, a, size=20_000, seed=seed)
    assert draws.dtype == np.int64
    lo, hi = support(nu, a)
    pval = chisquare_pvalue(draws, lambda m: D.bessel_logpmf(m, nu, a), lo, hi)
    assert pval > P_MIN, pval


def test_bessel_sample_tiny_and_zero_argument():
    """P(m > 0) = 2.5e-13 for a = 1e-6, so 10^5 draws are all zero; a = 0 is exactly zero."""
    assert not D.bessel_sample(0.0, 1e-6, size=100_000, seed=1).any()
    assert not D.bessel_sample(3.0, 0.0, size=100, seed=1).any()


def test_bessel_sample_broadcasts_and_ignores_thread_count():
    nu = np.array([[0.0], [2.0], [40.0]])
    a = np.array([0.3, 5.0, 80.0, 1e3])
    with threads(1):
        one = D.bessel_sample(nu, a, size=(5000, 3, 4), seed=7)
    with threads(numba.config.NUMBA_NUM_THREADS):
        many = D.bessel_sample(nu, a, size=(5000, 3, 4), seed=7)
    assert one.shape == (5000, 3, 4)
    np.testing.assert_array_equal(one, many)
    mean = one.mean(axis=0)
    sd = np.sqrt(D.bessel_var(nu, a) / 5000)
    assert np.all(np.abs(mean - D.bessel_mean(nu, a)) < 5 * sd + 1e-12)


def test_bessel_sample_rejects_bad_parameters():
    with pytest.raises(ValueError, match="non-negative"):
        D.bessel_sample(-1.0, 1.0, seed=0)
    with pytest.raises(ValueError, match="finite"):
        D.bessel_sample(1.0, np.nan, seed=0)
    with pytest.raises(ValueError, match="non-negative"):
        D.bessel_logpmf(1, 1.0, -2.0)


@njit
def _draw_in_kernel(nu, a, n, seed):
    rs = rng_state(seed)
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = D.bessel_sample_nb(nu, a, rs)
    return out


def test_scalar_kernel_inside_user_kernel_matches_pmf():
    draws = _draw_in_kernel(4.2, 7.5, 20_000, 11)
    lo, hi = support(4.2, 7.5)
    assert chisquare_pvalue(draws, lambda m: D.bessel_logpmf(m, 4.2, 7.5), lo, hi) > P_MIN


# --- Skellam ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mu1", "mu2"), [(0.1, 0.1), (1.0, 4.0), (5.0, 0.5), (30.0, 25.0)])
def test_skellam_logpmf_matches_scipy(mu1, mu2):
    k = np.arange(-40, 41)
    ref = stats.skellam.logpmf(k, mu1, mu2)
    ok = ref > -600
    np.testing.assert_allclose(D.skellam_logpmf(k, mu1, mu2)[ok], ref[ok], rtol=1e-9)
    got_nb = [D.skellam_logpmf_nb(int(j), mu1, mu2) for j in k[ok]]
    np.testing.assert_allclose(got_nb, ref[ok], rtol=1e-9)


@pytest.mark.parametrize(("mu1", "mu2"), [(1e4, 1e4), (1e-6, 3.0), (2e3, 1e-3)])
def test_skellam_logpmf_normalizes_at_extremes(mu1, mu2):
    sd = math.sqrt(mu1 + mu2)
    k = np.arange(int(mu1 - mu2 - 40 * sd) - 40, int(mu1 - mu2 + 40 * sd) + 40)
    assert np.exp(D.skellam_logpmf(k, mu1, mu2)).sum() == pytest.approx(1.0, abs=1e-9)


def test_skellam_logpmf_with_a_zero_rate_is_poisson():
    k = np.arange(-5, 6)
    expect = np.where(k >= 0, stats.poisson.logpmf(np.abs(k), 2.0), -np.inf)
    np.testing.assert_allclose(D.skellam_logpmf(k, 2.0, 0.0), expect)
    np.testing.assert_allclose(D.skellam_logpmf(-k, 0.0, 2.0), expect)
    assert D.skellam_logpmf_nb(-3, 0.0, 2.0) == pytest.approx(stats.poisson.logpmf(3, 2.0))
