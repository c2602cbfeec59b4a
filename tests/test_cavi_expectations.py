"""Closed-form expectations used by CAVI against brute-force sums and scipy."""

import itertools

import numpy as np
import pytest
from scipy import special

from lppf.expectations import (
    bessel_mode_sq,
    collapsed_cell,
    collapsed_local,
    collapsed_refresh,
    digamma_nb,
    exp_digamma,
    gamma_elbo,
    gamma_moments,
)


def brute_q_y(t, alpha, s):
    """E[y] and ln Z of q(y) ∝ s^y / y! alpha^|t - y| by summation over a wide support."""
    top = max(t, 0) + s * alpha + 40 * np.sqrt(s * alpha + 1) + 200
    y = np.arange(int(top) + 1)
    logw = y * np.log(s) - special.gammaln(y + 1) + np.abs(t - y) * np.log(alpha)
    log_z = special.logsumexp(logw)
    return float(np.exp(logw - log_z) @ y), float(log_z)




@pytest.mark.parametrize("alpha", [1e-4, 0.05, 0.37, 0.8, 0.999])
def test_truncated_poisson_expectations_match_brute_force(alpha):
    for t, s in itertools.product([-60, -3, 0, 1, 7, 60, 1500], [1e-3, 0.5, 5.0, 80.0, 2000.0]):
        mean, log_z = collapsed_cell(t, alpha, s)
        want_mean, want_log_z = brute_q_y(t, alpha, s)
        assert log_z == pytest.approx(want_log_z, rel=1e-10, abs=1e-9), (t, s)
        assert mean == pytest.approx(want_mean, rel=1e-8, abs=1e-9), (t, s)


def test_noiseless_cells_are_point_masses():
    mean, log_z = collapsed_cell(4, 0.0, 2.5)
    assert mean == 4.0
    assert log_z == pytest.approx(4 * np.log(2.5) - special.gammaln(5))


def test_dense_kernel_matches_cells_and_skips_masked():
    rng = np.random.default_rng(3)
    Y = rng.integers(-5, 20, size=(6, 7))
    alpha = np.broadcast_to(np.linspace(0.0, 0.9, 6)[:, None], Y.shape)
    Y = np.where(alpha == 0, np.abs(Y), Y)
    S = rng.gamma(2.0, 3.0, size=Y.shape)
    mask = rng.random(Y.shape) < 0.2
    Ey, total = collapsed_local(Y, alpha, S, mask)
    want_total = 0.0
    for d, v in zip(*np.nonzero(~mask), strict=True):
        mean, log_z = collapsed_cell(Y[d, v], alpha[d, v], S[d, v])
        assert Ey[d, v] == mean
        want_total += log_z + np.log((1 - alpha[d, v]) / (1 + alpha[d, v]))
    assert np.all(Ey[mask] == 0)
    assert total == pytest.approx(want_total, rel=1e-12)


def test_digamma_matches_scipy():
    x = np.concatenate([np.linspace(1e-3, 12, 400), np.logspace(1, 8, 50),
                        np.logspace(-300, -3, 30)])
    got = np.array([digamma_nb(v) for v in x])
    np.testing.assert_allclose(got, special.digamma(x), rtol=1e-12, atol=1e-12)


def test_exp_digamma_matches_scipy_at_integers_and_between():
    """Tabulated at the integers 1 .. 1024, computed elsewhere."""
    x = np.concatenate([np.arange(1.0, 1030.0), np.linspace(1e-3, 40, 333), [2.5e6]])
    got = np.array([exp_digamma(v) for v in x])
    np.testing.assert_allclose(got, np.exp(special.digamma(x)), rtol=1e-12)


def _bessel_logpmf(m, nu, a):
    return (2 * m + nu) * np.log(a / 2) - special.gammaln(m + 1) - special.gammaln(m + nu + 1)


@pytest.mark.parametrize("nu", [0, 1, 2, 5, 17, 60, 250])
def test_bessel_mode_is_argmax_and_within_one_of_mean(nu):
    for a in np.logspace(-3, 3.5, 60):
        mode = bessel_mode_sq(float(nu), (a / 2) ** 2)
        top = int(mode + 60 * np.sqrt(mode + 1) + 60)
        m = np.arange(top)
        logp = _bessel_logpmf(m, nu, a)
        assert logp[int(mode)] >= logp.max() - 1e-9 * abs(logp.max()), (nu, a)
        p = np.exp(logp - special.logsumexp(logp))
        assert abs(p @ m - mode) <= 1.0, (nu, a)


def _gamma_logpdf(x, shape, rate):
    return shape * np.log(rate) + (shape - 1) * np.log(x) - rate * x - special.gammaln(shape)


def test_gamma_elbo_matches_numerical_integration():
    from scipy import integrate, stats

    for shape, rate in [(0.3, 0.5), (2.0, 1.5), (40.0, 3.0)]:
        def expect(f, shape=shape, rate=rate):
            def integrand(x):
                return np.exp(_gamma_logpdf(x, shape, rate)) * f(x)
            mean = shape / rate
            return sum(integrate.quad(integrand, lo, hi, limit=200)[0]
                       for lo, hi in [(0, mean), (mean, np.inf)])

        prior = expect(lambda x: _gamma_logpdf(x, 0.7, 1.3))
        entropy = stats.gamma(shape, scale=1 / rate).entropy()
        m = gamma_moments(np.array([shape]), np.array([rate]))
        got = gamma_elbo(np.array([shape]), np.array([rate]), 0.7, 1.3, m)
        assert got == pytest.approx(prior + entropy, rel=1e-7)
        assert m.elog[0] == pytest.approx(expect(np.log), rel=1e-7)
        mean = shape / rate
        assert m.var[0] == pytest.approx(expect(lambda x, mean=mean: (x - mean) ** 2), rel=1e-7)


def test_collapsed_refresh_returns_the_allocation_ratio():
    rng = np.random.default_rng(4)
    Y = rng.integers(-5, 30, size=(9, 8))
    alpha = np.broadcast_to(np.array([0.0, 0.3, 0.7])[rng.integers(0, 3, (9, 1))], Y.shape)
    Y = np.where(alpha == 0, np.abs(Y), Y)
    S = rng.gamma(0.5, 6.0, size=Y.shape)
    S[0, :3] = 0.0  # floored at TINY
    mask = rng.random(Y.shape) < 0.2
    Ey, R, total = collapsed_refresh(Y, alpha, S, mask)
    want_Ey, want_total = collapsed_local(Y, alpha, S, mask)
    np.testing.assert_array_equal(Ey, want_Ey)
    assert total == want_total
    np.testing.assert_allclose(R, Ey / np.maximum(S, 1e-300), rtol=1e-15)
    assert np.all(R[mask] == 0)
