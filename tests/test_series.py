"""The power series of the collapsed conditional's normalizer against brute-force sums and
the walks it stands in for."""

import math

import numpy as np
import pytest
from scipy import special

from lppf import conditional, noise, series
from lppf import noise_conditional as nc

NOISES = [("discrete-gaussian", 0.4), ("discrete-gaussian", 2.5), ("discrete-gaussian", 5.7),
          ("skellam", 0.1), ("skellam", 3.0), ("skellam", 16.0), ("geometric", 0.3),
          ("geometric", 0.7), ("geometric", 0.95)]
T_RANGE = np.arange(-40, 45)
MUS = np.concatenate([np.geomspace(1e-12, 1e-3, 4), np.geomspace(2e-3, 40.0, 60)])


def brute(mechanism, param, t, mu, hi=3000):
    """E[y] and ln Z by direct sums (ln Z with the geometric noise unnormalized, as the
    kernels of lppf.conditional)."""
    y = np.arange(hi)
    lf = special.xlogy(y, mu) - special.gammaln(y + 1) + noise.logpmf(mechanism, t - y, param)
    if mechanism == "geometric":
        lf -= math.log((1 - param) / (1 + param))
    lz = special.logsumexp(lf)
    return float((y * np.exp(lf - lz)).sum()), float(lz)


def evaluate(mechanism, param, t_N, mu_N):
    """series.evaluate on the cells (t_N, mu_N) of one noise value: (E, ln Z, covered)."""
    T = nc.tables(mechanism, np.array([[param]]), np.array([[T_RANGE.min(), T_RANGE.max()]]))
    s = series.of(T, np.array([T_RANGE]))
    n = len(t_N)
    ints, flts = np.zeros((4, n), np.int64), np.zeros((5, n))
    ints[0], ints[1], flts[0] = t_N, 0, mu_N
    n_fail = series.evaluate(n, ints, flts, s.lo, s.coef, s.ratio, s.log_p)
    covered = np.ones(n, bool)
    covered[ints[2, :n_fail]] = False
    log_s = np.log(np.where(covered, flts[3], 1.0))
    return flts[1], flts[2] + log_s, covered, T


def walk(T, t, mu):
    if T.kind == nc.GEOMETRIC:
        a = math.exp(T.par[0])
        return conditional.mean_log_z_noisy(t, a, mu, 1.0 / a, T.par[0])
    return nc.mean_log_z(t, mu, T.kind, T.par[0], T.var[0], T.lnorm[0], T.lr, T.lc, 0)


@pytest.mark.parametrize(("mechanism", "param"), NOISES)
def test_series_gives_the_walks_to_rounding(mechanism, param):
    """Every covered cell of a grid of counts and rates: E[y] and ln Z within a few units
    of rounding of the walk's (whose sums stop at 2^-53 of the total, hence the absolute
    tolerance of E[y] at tiny rates, where the series is the closer); the cells of mode 0
    all covered, and those of a small mode at small rates."""
    t_N, mu_N = (a.ravel() for a in np.meshgrid(T_RANGE, MUS))
    e, lz, covered, T = evaluate(mechanism, param, t_N, mu_N)
    for j in np.flatnonzero(covered):
        want_e, want_lz = walk(T, t_N[j], mu_N[j])
        assert e[j] == pytest.approx(want_e, rel=1e-12, abs=1e-14), (t_N[j], mu_N[j])
        assert lz[j] == pytest.approx(want_lz, rel=1e-13, abs=1e-12), (t_N[j], mu_N[j])
    z = mu_N * np.exp([nc.log_noise_ratio(T.kind, t, T.par[0], T.lr, 0) for t in t_N])
    assert covered[z < 1.0].all()
    assert covered[(z >= 1.0) & (z < 1e6) & (t_N < 20) & (mu_N < 3.0)].all()


@pytest.mark.parametrize(("mechanism", "param"), [("discrete-gaussian", 2.5), ("skellam", 3.0),
                                                  ("geometric", 0.7)])
def test_series_matches_brute_force_sums(mechanism, param):
    cells = [(0, 0.5), (4, 0.5), (-3, 2.0), (25, 0.01), (2, 6.0), (40, 1e-4), (-40, 30.0)]
    t_N, mu_N = np.array([c[0] for c in cells]), np.array([c[1] for c in cells])
    e, lz, covered, _ = evaluate(mechanism, param, t_N, mu_N)
    assert covered[:6].all()
    for j in np.flatnonzero(covered):
        want_e, want_lz = brute(mechanism, param, t_N[j], mu_N[j])
        assert e[j] == pytest.approx(want_e, rel=1e-11, abs=1e-14)
        assert lz[j] == pytest.approx(want_lz, rel=1e-12, abs=1e-12)


def refused(mechanism, param, lo_hi, t_N, mu_N):
    T = nc.tables(mechanism, np.array([[param]]), np.array([lo_hi]))
    s = series.of(T, np.array([lo_hi]))
    n = len(t_N)
    ints, flts = np.zeros((4, n), np.int64), np.zeros((5, n))
    ints[0], flts[0] = t_N, mu_N
    n_fail = series.evaluate(n, ints, flts, s.lo, s.coef, s.ratio, s.log_p)
    return sorted(ints[2, :n_fail])


def test_cells_past_the_series_are_refused():
    """Off the tables (below, above), a rate whose tail bound fails, a count of LONG - 1
    with its mode above 0, an unusable row (its noise ratio overflows): each is left to the
    walk; a small mode is not."""
    t_N = np.array([-6, 41, 0, 31, 2])
    mu_N = np.array([0.5, 0.5, 15.9, 3.0, 3.0])
    assert refused("geometric", 0.95, [-5, 40], t_N, mu_N) == [0, 1, 2, 3]
    assert refused("discrete-gaussian", 0.1, [0, 10], np.array([10, 0]),
                   np.array([1e-300, 0.5])) == [0]


def test_a_running_product_of_terms_gives_the_sum_of_their_logs():
    rng = np.random.default_rng(0)
    s = np.exp(rng.normal(0.0, 30.0, 5000))
    total, prod = 0.0, 1.0
    for v in s:
        total, prod = series.add_log(total, prod, v)
    assert total + math.log(prod) == pytest.approx(np.log(s).sum(), rel=1e-12)


def test_a_running_product_keeps_terms_up_to_the_largest_s_finite():
    """S reaches 1e214 under nearly noiseless noise: no product of two overflows."""
    s = np.exp(np.random.default_rng(1).uniform(0.0, math.log(1e214), 5000))
    total, prod = 0.0, 1.0
    for v in s:
        total, prod = series.add_log(total, prod, v)
    assert total + math.log(prod) == pytest.approx(np.log(s).sum(), rel=1e-12)
