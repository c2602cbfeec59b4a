"""The collapsed conditional under every mechanism's noise, against brute-force sums."""

import math

import numpy as np
import pytest
from gof import chisquare_pvalue
from numba import njit
from scipy import special

from lppf import cells, conditional, noise
from lppf import noise_conditional as nc
from lppf._numba import rng_state

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


@pytest.mark.parametrize("mu", [0.5, 200.0, 1e6])
def test_skellam_log_noise_far_beyond_its_table(mu):
    """ln p(k) past the table (J): the ratios for WALK_RATIOS steps, then the uniform
    expansion of ln I_k(x); against the backward recurrence of the ratios (k <= J + 3e4) and
    against the power series (x/2)^k / k! sum_m (x^2/4)^m k! / (m! (k + m)!) at k >> x^2."""
    T = nc.tables("skellam", np.array([[mu]]), np.array([[0]]))
    x, n = T.par[0], T.lc.shape[1]

    def log_p(k):
        return nc.log_noise(T.kind, k, T.par[0], T.lnorm[0], T.lr, T.lc, 0)

    top = n + 30_000
    ref = T.lnorm[0] + np.concatenate(([0.0], np.cumsum(noise.skellam_log_ratios(x, top))))
    for k in (n, n + nc.WALK_RATIOS - 1, n + nc.WALK_RATIOS, n + 1000, top - 1):
        assert log_p(k) == pytest.approx(ref[k], rel=1e-12, abs=1e-9)
        assert log_p(-k) == log_p(k)
    for k in (1e6, 1e9, 1e12) if x < 1e3 else (1e15,):
        q, term, total = x * x / 4.0, 1.0, 1.0
        for m in range(1, 6):
            term *= q / (m * (k + m))
            total += term
        want = -x + k * math.log(x / 2.0) - math.lgamma(k + 1.0) + math.log(total)
        assert log_p(int(k)) == pytest.approx(want, rel=1e-13)


def test_local_sums_cells_whose_series_are_huge():
    """Nearly noiseless Skellam noise: S of 1e131 then 1e183 in one row, a finite sum."""
    Y = np.array([[28, 28]])
    T = nc.tables("skellam", np.array([[1e-6]]), Y)
    S = np.array([[0.05, 3.5]])
    _, _, total = cells.local(Y, T, S, np.zeros(Y.shape, bool))
    want = sum(brute("skellam", 1e-6, 28, mu)[2] for mu in S[0])
    assert total == pytest.approx(want, rel=1e-12)


def test_skellam_normalizer_at_huge_noise():
    """ln p(0) = ln(e^-x I_0(x)), x = 2 mu, stays finite past where ive(0, x) is NaN and
    follows its expansion -ln(2 pi x) / 2 + 1 / (8 x)."""
    for mu in (1e9, 1e10, 2.0**40):
        x = 2.0 * mu
        assert noise.skellam_log0(mu) == pytest.approx(
            -0.5 * math.log(2 * math.pi * x) + 1 / (8 * x), rel=1e-12)
    assert np.isfinite(nc.tables("skellam", np.array([[1e9]]), np.array([[3]])).lnorm).all()


def test_local_sums_over_cells_and_keeps_noiseless_ones():
    Y = np.array([[3, -2, 0], [7, 1, 5]])
    param = np.array([[1.5], [0.0]])
    T = nc.tables("discrete-gaussian", param, Y)
    S = np.array([[1.0, 2.0, 0.5], [3.0, 1.0, 2.0]])
    mask = np.zeros(Y.shape, bool)
    mask[0, 2] = True
    Ey, R, total = cells.local(Y, T, S, mask)
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
    # walked from the mode on a consecutive grid, value by value on another
    reverse = nc.mixture_pmf(np.array([6, 3]), T.code[0], np.array([[0.5, 1.0], [3.0, 2.0]]),
                             np.ascontiguousarray(y_mW[:, ::-1]), T)
    np.testing.assert_allclose(reverse[:, ::-1], got, rtol=1e-10, atol=1e-300)
    lo, hi = nc.support(np.array([6.0]), np.array([3.0]), np.array([0.5]), np.array([3.0]))
    assert brute("skellam", 1.5, 6, 0.5)[0][lo[0]:hi[0] + 1].sum() > 1 - 1e-12


@njit
def _lane_draws(t_L, mu_L, p_L, T, n_cells, rounds, seed):
    """``rounds`` calls of sample_lanes on the cells (y~, mu, value; at most LANES) with
    ``n_cells`` masses per lane; (rounds, n) draws and how many took the tail or a redraw."""
    rs = rng_state(seed)
    n = len(t_L)
    up, down = np.empty(nc.WALK_CELLS), np.empty(nc.WALK_CELLS)
    tl, ml = np.zeros(nc.LANES, np.int64), np.full(nc.LANES, 0.5)
    bl, pl = np.full(nc.LANES, nc.lane_base(0, 0, T.lr)), np.zeros(nc.LANES, np.int64)
    y_L, work, cum = np.zeros(nc.LANES, np.int64), np.empty((2, nc.LANES)), np.empty(
        (n_cells, nc.LANES))
    for l in range(n):
        tl[l], ml[l], pl[l] = t_L[l], mu_L[l], p_L[l]
        bl[l] = nc.lane_base(t_L[l], p_L[l], T.lr)
    out = np.empty((rounds, n), np.int64)
    past = 0
    for r in range(rounds):
        nc.sample_lanes(n, tl, ml, bl, pl, T.kind, T.par, T.var, T.lr, T.lr.reshape(-1), rs,
                        up, down, cum, work, y_L)
        for l in range(n):
            out[r, l] = y_L[l]
            past += y_L[l] >= n_cells
    return out, past


LANE_CELLS_CASES = [  # (y~, mu, value): both values of one table, y~ <= 0 and up to 15
    (-3, 0.7, 0), (0, 2.0, 1), (4, 0.5, 0), (2, 1e-3, 1), (15, 6.0, 0), (1, 6.0, 1),
    (9, 4.0, 1), (-12, 0.05, 0)]


@pytest.mark.parametrize("mechanism", ["discrete-gaussian", "skellam"])
@pytest.mark.parametrize(("n_cells", "cells"), [
    (nc.LANE_CELLS, LANE_CELLS_CASES),
    # three masses: most draws walk the tail, and the loose bound redraws many by sample
    (3, [(1, 2.0, 0), (0, 1.0, 1), (-2, 2.5, 1), (2, 0.5, 0), (2, 1.2, 1)]),
])
def test_sample_lanes_matches_the_pmf_of_each_lane(mechanism, n_cells, cells):
    params = np.array([[0.8, 3.0]])
    T = nc.tables(mechanism, params, np.array([[20]]))
    t_L, mu_L, p_L = (np.array(c) for c in zip(*cells, strict=True))
    p_L = p_L.astype(np.int64)
    half = T.lr.shape[2] // 2
    for t, mu, p in cells:
        assert nc.fits_lanes(t, mu, T.lc, p, half, n_cells), (t, mu, p)
    draws, past = _lane_draws(t_L, mu_L.astype(float), p_L, T, n_cells, 20_000, 7)
    for l, (t, mu, p) in enumerate(cells):
        pmf = brute(mechanism, params[0, p], t, mu)[0]
        if np.sort(pmf)[-2] * len(draws) < 5:  # (nearly) a point mass
            assert np.mean(draws[:, l] == pmf.argmax()) > 0.999
            continue
        assert chisquare_pvalue(draws[:, l], 0, pmf) > 1e-3, (t, mu, p)
    assert past > (0 if n_cells == nc.LANE_CELLS else 5_000)  # the tails are walked


def test_sample_lanes_catches_a_wrong_ratio():
    """The same test fails lanes drawn with a noise 20% wider than the data's."""
    T = nc.tables("discrete-gaussian", np.array([[1.2 * 0.8]]), np.array([[20]]))
    draws = _lane_draws(np.array([4]), np.array([2.0]), np.array([0]), T, nc.LANE_CELLS,
                        20_000, 3)[0]
    assert chisquare_pvalue(draws[:, 0], 0, brute("discrete-gaussian", 0.8, 4, 2.0)[0]) < 1e-4


def test_fits_lanes_only_where_the_tail_bound_and_tables_hold():
    N = nc.LANE_CELLS
    T = nc.tables("discrete-gaussian", np.array([[0.3, 3.0]]), np.array([[40]]))
    half = T.lr.shape[2] // 2
    assert nc.fits_lanes(N - 1, nc.LANE_MAX_MU, T.lc, 1, half, N)
    assert not nc.fits_lanes(N, 1.0, T.lc, 1, half, N)  # y~ past the masses
    assert not nc.fits_lanes(0, nc.LANE_MAX_MU * 1.01, T.lc, 1, half, N)
    assert not nc.fits_lanes(0, 0.0, T.lc, 1, half, N)  # mu = 0: y = 0 by sample
    assert not nc.fits_lanes(0, 4.0, T.lc, 1, half, 3)  # ratio mu / (N + 1) not below 1
    assert not nc.fits_lanes(-half + N - 2, 1.0, T.lc, 1, half, N)  # ratios past the table
    assert not nc.fits_lanes(-half, 1.0, T.lc, 1, half, N)
    # sigma 0.3: p(0) / p(15) = e^(225 / 0.18), masses relative to f(0) would overflow
    assert not nc.fits_lanes(N - 1, 1.0, T.lc, 0, half, N)
    assert nc.fits_lanes(3, 1.0, T.lc, 0, half, N)
