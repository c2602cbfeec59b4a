"""The collapsed conditional P(y | y~, mu) ∝ mu^y / y! alpha^|y~ - y| against brute force."""

import itertools

import numpy as np
import pytest
from gof import chisquare_pvalue
from numba import njit
from scipy import special

from lppf import conditional
from lppf._numba import rng_state


def brute(t, a, mu):
    """(y, pmf) on a support wide enough for every case below."""
    top = max(t, 0) + mu * a + 40 * np.sqrt(mu * a + 1) + 200
    y = np.arange(int(top) + 1)
    logw = y * np.log(mu) - special.gammaln(y + 1) + np.abs(t - y) * np.log(a)
    log_z = special.logsumexp(logw)
    return y, np.exp(logw - log_z), log_z


@pytest.mark.parametrize("a", [0.01, 0.5, 0.95])
def test_mean_and_log_z_walked_and_from_cdfs(a):
    """Narrow and wide pmfs: walked, or from Poisson cdfs where the walk is too long (an sd
    beyond about WALK_MAX_STEPS / 8.6, i.e. a mode beyond about 1.4e4)."""
    for t, mode in itertools.product([1, 40, 5000, 14_000, 60_000],
                                     [3.0, 600.5, 12_000.5, 15_000.5, 50_000.0]):
        for mu in (mode * a, mode / a):  # the mode in the lower or the upper piece
            y, pmf, log_z = brute(t, a, mu)
            mean, got_log_z = conditional.mean_log_z(t, a, mu)
            assert got_log_z == pytest.approx(log_z, rel=1e-12, abs=1e-10), (t, mu)
            assert mean == pytest.approx(pmf @ y, rel=1e-10, abs=1e-10), (t, mu)


def test_mode_is_the_argmax():
    for t, a, mu in itertools.product([-3, 0, 1, 5, 60], [0.1, 0.5, 0.9],
                                      [1e-3, 0.7, 2.0, 9.5, 80.0]):
        pmf = brute(t, a, mu)[1]
        m = conditional.mode(t, mu / a, mu * a)
        assert pmf[m] >= pmf.max() * (1 - 1e-12), (t, a, mu)


def test_mixture_pmf_matches_brute_force_and_support_holds_the_mass():
    rng = np.random.default_rng(4)
    t = np.array([-4, 0, 3, 25, 400])
    a = np.array([0.3, 0.6, 0.9, 0.5, 0.99])
    mu_Sm = rng.gamma(3.0, [1.0, 2.0, 5.0, 10.0, 300.0], (4, 5))
    lo, hi = conditional.support(t, a, mu_Sm.min(axis=0), mu_Sm.max(axis=0))
    y_mW = lo[:, None] + np.arange((hi - lo).max() + 1)
    got = conditional.mixture_pmf(t, a, mu_Sm, y_mW)
    assert got.sum(axis=1) == pytest.approx(np.ones(5), abs=1e-12)
    for n in range(5):
        want = np.zeros(y_mW.shape[1])
        for mu in mu_Sm[:, n]:
            y, pmf, _ = brute(t[n], a[n], mu)
            want += np.interp(y_mW[n], y, pmf, right=0.0) / len(mu_Sm)
        np.testing.assert_allclose(got[n], want, rtol=1e-10, atol=1e-300)
    # grids walked from the value nearest the mode (consecutive) or taken value by value
    for grid in (y_mW, y_mW[:, :40], y_mW[:, -30:]):  # whole, below and above most modes
        walked = conditional.mixture_pmf(t, a, mu_Sm, grid)
        valued = conditional.mixture_pmf(t, a, mu_Sm, np.ascontiguousarray(grid[:, ::-1]))
        np.testing.assert_allclose(walked, valued[:, ::-1], rtol=1e-10, atol=1e-300)


def test_point_masses():
    y_mW = np.arange(6)[None].repeat(2, axis=0)
    got = conditional.mixture_pmf(np.array([3, 2]), np.array([0.0, 0.5]),
                                  np.array([[2.0, 0.0]]), y_mW)
    np.testing.assert_array_equal(got, np.eye(6)[[3, 0]])  # alpha = 0: y = y~; mu = 0: y = 0


@njit
def _draws(t, mu, a, n, core_cells, core_mass, seed):
    rs = rng_state(seed)
    core = np.empty(core_cells)
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = conditional.sample(t, mu, a, 1.0 / a, rs, core, core_mass)
    return out


@pytest.mark.parametrize(("core_cells", "core_mass"), [
    (conditional.CORE_CELLS, conditional.CORE_MASS),  # as in the kernels
    (conditional.CORE_CELLS, 0.5),  # tiny cores: the tails and redraws on most draws
    (2, conditional.CORE_MASS),  # no room for the core: walk_sample
])
@pytest.mark.parametrize(("t", "mu", "a"), [
    (-3, 0.7, 0.5), (-1, 20.0, 0.5),  # y~ <= 0: Poisson by inversion from 0
    (0, 40.0, 0.5),  # y~ <= 0, mu alpha >= SMALL_POISSON: walked from the mode
    (1, 0.2, 0.3), (3, 2.0, 0.5), (8, 6.0, 0.5), (40, 3.0, 0.9),  # walked from 0
    (5, 30.0, 0.6), (300, 250.0, 0.2),  # walked from the mode
])
def test_sample_matches_the_pmf_from_core_tails_and_fallback(t, mu, a, core_cells, core_mass):
    draws = _draws(t, mu, a, 20_000, core_cells, core_mass, 5)
    assert chisquare_pvalue(draws, 0, brute(t, a, mu)[1]) > 1e-3


def test_sample_with_a_rate_that_underflows_is_zero():
    """mu a below the smallest double: no division by zero, y = 0 (P(y > 0) < 1e-300)."""
    assert _draws(5, 5e-324, 0.1, 3, 8, 0.1, 0).tolist() == [0] * 3  # mu a rounds to 0.0
    assert _draws(5, 0.0, 0.5, 3, 8, 0.1, 0).tolist() == [0] * 3


def test_sample_where_mu_alpha_underflows_matches_the_pmf():
    """mu alpha rounds to 0 while y~ > 0: the mass lies in [0, y~], not at 0 (the sampler
    returned 0 there)."""
    t, mu, a = 5, 1e-170, 1e-170  # mu / alpha = 1: Pois(1) truncated to [0, 5]
    assert mu * a == 0.0
    draws = _draws(t, mu, a, 20_000, conditional.CORE_CELLS, conditional.CORE_MASS, 4)
    assert chisquare_pvalue(draws, 0, brute(t, a, mu)[1][: t + 1]) > 1e-3
    for t, mu, a in [(40, 1e-160, 1e-170), (5, 1e-10, 1e-320)]:  # 1 / alpha = inf in the 2nd
        assert mu * a == 0.0 and brute(t, a, mu)[1][t] > 1 - 1e-8  # the mass at y~
        assert (_draws(t, mu, a, 50, conditional.CORE_CELLS, 0.5, 4) == t).all()


def test_sample_with_a_nan_rate_returns():
    """A NaN rate (which checked inputs never give) must not walk for ever."""
    assert _draws(5, np.nan, 0.5, 2, 8, 0.1, 0).tolist() == [0, 0]
    rs, core = rng_state(0), np.empty(2)
    assert conditional.walk_sample(2, 5, np.nan, np.nan, 0.5) >= 0
    assert conditional.sample_cell(5, np.nan, 0.5, 2.0, rs, core) == 0


@njit
def _lane_draws(cells, n_cells, rounds, seed):
    """``rounds`` calls of sample_lanes on the cells (rows y~, mu, alpha; at most LANES) with
    ``n_cells`` masses per lane; (rounds, n) draws and how many took the tail or a redraw."""
    rs = rng_state(seed)
    core = np.empty(conditional.CORE_CELLS)
    n = cells.shape[0]
    t_L, y_L = np.zeros(conditional.LANES, np.int64), np.zeros(conditional.LANES, np.int64)
    par, work = np.full((4, conditional.LANES), 0.5), np.empty((2, conditional.LANES))
    cum = np.empty((n_cells, conditional.LANES))
    for l in range(n):
        t, mu, a = cells[l]
        t_L[l] = int(t)
        par[0, l], par[1, l], par[2, l], par[3, l] = mu / a, mu * a, mu, a
    out = np.empty((rounds, n), np.int64)
    past = 0
    for r in range(rounds):
        conditional.sample_lanes(n, t_L, par, rs, core, cum, work, y_L)
        for l in range(n):
            out[r, l] = y_L[l]
            past += y_L[l] >= n_cells
    return out, past


@pytest.mark.parametrize(("n_cells", "cells"), [
    # a full batch: y~ <= 0 (Poisson), walked from 0 through y~, mu alpha up to LANE_MAX_HI
    (conditional.LANE_CELLS, [(-3, 0.7, 0.5), (0, 2.0, 0.3), (4, 0.5, 0.8), (2, 1e-3, 0.2),
                              (15, 7.0, 0.5), (1, 6.0, 0.99), (9, 4.0, 0.9), (-1, 0.05, 0.4)]),
    # three masses: most draws walk the tail, and the loose bound redraws many by sample
    (3, [(1, 2.0, 0.5), (0, 1.0, 0.7), (-2, 3.0, 0.9), (2, 0.5, 0.3), (2, 1.2, 0.8)]),
])
def test_sample_lanes_matches_the_pmf_of_each_lane(n_cells, cells):
    cells = np.array(cells, dtype=float)
    for t, mu, a in cells:
        assert conditional.fits_lanes(int(t), mu / a, mu * a, n_cells)
    draws, past = _lane_draws(cells, n_cells, 20_000, 7)
    for l, (t, mu, a) in enumerate(cells):
        assert chisquare_pvalue(draws[:, l], 0, brute(int(t), a, mu)[1]) > 1e-3, (t, mu, a)
    assert past > (0 if n_cells == conditional.LANE_CELLS else 10_000)


def test_fits_lanes_only_where_the_tail_bound_holds():
    N = conditional.LANE_CELLS
    assert conditional.fits_lanes(N - 1, 15.9, 1.0, N)
    assert not conditional.fits_lanes(N, 1.0, 0.5, N)  # y~ past the masses
    assert not conditional.fits_lanes(2, conditional.FROM_ZERO, 1.0, N)  # walked from the mode
    assert not conditional.fits_lanes(0, 1.0, conditional.LANE_MAX_HI * 1.01, N)
    assert not conditional.fits_lanes(0, 4.0, 3.0, 3)  # ratio c_hi / (N + 1) not below 1 - 1/N
    assert not conditional.fits_lanes(0, 0.0, 0.0, N)  # mu = 0: y = 0 by sample
