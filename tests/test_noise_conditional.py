"""The collapsed conditional under every mechanism's noise, against brute-force sums."""

import math

import numpy as np
import pytest
from gof import chisquare_pvalue
from scipy import special

from lppf import conditional, noise
from lppf import noise_conditional as nc

NOISES = [("discrete-gaussian", 0.4), ("discrete-gaussian", 2.5), ("skellam", 0.1),
          ("skellam", 3.0), ("geometric", 0.7)]
CELLS = [(0, 0.5), (4, 0.5), (-3, 2.0), (25, 1.0), (2, 30.0), (40, 1e-4), (1, 300.0)]


def brute(mechanism, param, t, mu, hi=1500):
    """P(y | t, mu) on y = 0 .. hi - 1, E[y] and ln Z by direct sums."""
    y = np.arange(hi)
    lf = special.xlogy(y, mu) - special.gammaln(y + 1) + noise.logpmf(mechanism, t - y, param)
    lz = special.logsumexp(lf)
    p = np.exp(lf - lz)
    return p, float((y * p).sum()), float(lz)


def table(mechanism, param, top=50):
    return nc.tables(mechanism, np.array([[param]]), np.array([[top]]))


@pytest.mark.parametrize(("mechanism", "param"), NOISES)
def test_mean_and_log_z_match_brute_force(mechanism, param):
    T = table(mechanism, param)
    for t, mu in CELLS:
        _, mean, lz = brute(mechanism, param, t, mu)
        got = nc.mean_log_z(t, mu, T.kind, T.par[0], T.var[0], T.lnorm[0], T.lr, T.lc, 0)
        assert got[0] == pytest.approx(mean, rel=1e-10, abs=1e-12)
        assert got[1] == pytest.approx(lz, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize(("mechanism", "param"), NOISES)
def test_draws_follow_the_brute_force_conditional(mechanism, param):
    T = table(mechanism, param)
    n = 20000
    for i, (t, mu) in enumerate(CELLS):
        draws = nc.sample_cells(np.full(n, t), np.full(n, mu), T.kind, np.zeros(n, np.int64),
                                T.par, T.var, T.lr, 7 + i)
        pmf = brute(mechanism, param, t, mu)[0]
        if np.sort(pmf)[-2] * n < 5:  # (nearly) a point mass
            assert np.mean(draws == pmf.argmax()) > 0.999
            continue
        assert chisquare_pvalue(draws, 0, pmf) > 0.01, (t, mu)


def test_a_kernel_with_the_wrong_noise_is_caught():
    """The same test fails a sampler given sigma 20% off."""
    T = table("discrete-gaussian", 1.2 * 1.5)
    n = 20000
    draws = nc.sample_cells(np.full(n, 4), np.full(n, 2.0), T.kind, np.zeros(n, np.int64),
                            T.par, T.var, T.lr, 3)
    assert chisquare_pvalue(draws, 0, brute("discrete-gaussian", 1.5, 4, 2.0)[0]) < 1e-4


def test_geometric_kind_agrees_with_the_fast_path():
    """The generic walk with geometric noise gives lppf.conditional's mean and ln Z (that
    one leaves out the noise's normalizer ln((1 - alpha)/(1 + alpha)))."""
    a = 0.6
    T = table("geometric", a)
    for t, mu in CELLS:
        mean, lz = conditional.mean_log_z(t, a, mu)
        got = nc.mean_log_z(t, mu, T.kind, T.par[0], T.var[0], T.lnorm[0], T.lr, T.lc, 0)
        assert got[0] == pytest.approx(mean, rel=1e-10, abs=1e-12)
        assert got[1] == pytest.approx(lz + math.log((1 - a) / (1 + a)), rel=1e-10, abs=1e-12)


def test_skellam_beyond_its_table():
    """Noise values past the table come from continued fractions: same answers."""
    short = nc.tables("skellam", np.array([[2.0]]), np.array([[0]]))
    assert short.lr.shape[2] // 2 < 150
    t, mu = 300, 0.5
    _, mean, lz = brute("skellam", 2.0, t, mu)
    got = nc.mean_log_z(t, mu, short.kind, short.par[0], short.var[0], short.lnorm[0],
                        short.lr, short.lc, 0)
    assert got == pytest.approx((mean, lz), rel=1e-9)
    draws = nc.sample_cells(np.full(20000, t), np.full(20000, mu), short.kind,
                            np.zeros(20000, np.int64), short.par, short.var, short.lr, 2)
    assert chisquare_pvalue(draws, 0, brute("skellam", 2.0, t, mu)[0]) > 0.01


def test_local_sums_over_cells_and_keeps_noiseless_ones():
    Y = np.array([[3, -2, 0], [7, 1, 5]])
    param = np.array([[1.5], [0.0]])
    T = nc.tables("discrete-gaussian", param, Y)
    S = np.array([[1.0, 2.0, 0.5], [3.0, 1.0, 2.0]])
    mask = np.zeros(Y.shape, bool)
    mask[0, 2] = True
    Ey, R, total = nc.local(Y, T, S, mask)
    want = sum(brute("discrete-gaussian", 1.5, Y[0, j], S[0, j])[2] for j in range(2))
    want += sum(Y[1, j] * math.log(S[1, j]) - math.lgamma(Y[1, j] + 1) for j in range(3))
    assert total == pytest.approx(want, rel=1e-12)
    np.testing.assert_array_equal(Ey[1], Y[1])
    assert Ey[0, 2] == 0 and R[0, 0] == pytest.approx(Ey[0, 0] / 1.0)
    assert Ey[0, 1] == pytest.approx(brute("discrete-gaussian", 1.5, -2, 2.0)[1])


def test_mixture_pmf_averages_the_brute_force_conditionals():
    T = nc.tables("skellam", np.array([[1.5, 0.0]]), np.array([[9, 9]]))
    y_mW = np.tile(np.arange(40), (2, 1))
    got = nc.mixture_pmf(np.array([6, 3]), T.code[0], np.array([[0.5, 1.0], [3.0, 2.0]]),
                         y_mW, T)
    want = (brute("skellam", 1.5, 6, 0.5)[0][:40] + brute("skellam", 1.5, 6, 3.0)[0][:40]) / 2
    np.testing.assert_allclose(got[0], want, rtol=1e-10, atol=1e-15)
    np.testing.assert_array_equal(got[1], np.arange(40) == 3)  # noiseless: y = y~
    lo, hi = nc.support(np.array([6.0]), np.array([3.0]), np.array([0.5]), np.array([3.0]))
    assert brute("skellam", 1.5, 6, 0.5)[0][lo[0]:hi[0] + 1].sum() > 1 - 1e-12
