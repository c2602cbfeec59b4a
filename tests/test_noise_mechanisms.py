"""The discrete Gaussian and Skellam mechanisms: their noise laws, samplers and accounting."""

import math

import numpy as np
import pytest
from gof import chisquare_pvalue
from scipy import special

from lppf import mechanisms as M
from lppf import noise, privacy
from lppf.cli import main
from lppf.validation import InputError

CASES = [("discrete-gaussian", 0.7), ("discrete-gaussian", 2.3), ("skellam", 0.4),
         ("skellam", 3.0)]


def exact_pmf(mechanism, param, lo, hi):
    k = np.arange(lo, hi + 1)
    if mechanism == "skellam":
        return special.ive(np.abs(k), 2 * param)
    w = np.exp(-k * k / (2 * param * param))
    big = np.arange(-200, 201)
    return w / np.exp(-big * big / (2 * param * param)).sum()


def noise_draws(mechanism, param, n, **kw):
    Y = np.zeros((1, n), dtype=np.int64)
    name = {"discrete-gaussian": "sigma", "skellam": "mu"}[mechanism]
    return M.privatize(Y, mechanism=mechanism, **{name: param}, **kw).ravel()


@pytest.mark.parametrize(("mechanism", "param"), CASES)
def test_seeded_noise_follows_its_pmf_and_a_wrong_one_is_rejected(mechanism, param):
    tau = noise_draws(mechanism, param, 40000, rng=1)
    lo, hi = -30, 30
    assert chisquare_pvalue(tau, lo, exact_pmf(mechanism, param, lo, hi)) > 0.01
    assert chisquare_pvalue(tau, lo, exact_pmf(mechanism, param * 1.1, lo, hi)) < 1e-4


@pytest.mark.parametrize(("mechanism", "param"), CASES)
def test_secure_noise_follows_its_pmf(mechanism, param):
    """Unseedable (operating-system randomness): the false alarm rate is the threshold."""
    tau, info = M.privatize(np.zeros((1, 30000), dtype=np.int64), mechanism=mechanism,
                            return_info=True,
                            **{"discrete-gaussian": {"sigma": param},
                               "skellam": {"mu": param}}[mechanism])
    assert info["source"] == "secure" and info["sampler"] == M.noise_sampler(mechanism)
    assert chisquare_pvalue(tau.ravel(), -30, exact_pmf(mechanism, param, -30, 30)) > 1e-6


def test_fallback_discrete_gaussian_sampler_follows_its_pmf():
    rng = np.random.default_rng(0)
    tau = noise.discrete_gaussian(np.full(40000, 1.7), lambda n: 1.0 - rng.random(n))
    assert chisquare_pvalue(tau, -30, exact_pmf("discrete-gaussian", 1.7, -30, 30)) > 0.01


@pytest.mark.parametrize("x", [0.3, 4.0, 150.0, 3000.0])
def test_skellam_log_ratios_match_scipy(x):
    ive = special.ive(np.arange(301), x)
    fine = ive[1:] > 1e-290  # where scipy's values have not underflowed
    assert fine.sum() >= 40
    np.testing.assert_allclose(noise.skellam_log_ratios(x, 300)[fine],
                               np.log(ive[1:][fine] / ive[:-1][fine]), rtol=1e-10, atol=1e-12)
    assert np.all(np.diff(noise.skellam_log_ratios(x, 300)) < 0)  # log-concave


@pytest.mark.parametrize(("mechanism", "param"), [*CASES, ("geometric", 0.6)])
def test_logpmf_and_variance_match_direct_sums(mechanism, param):
    k = np.arange(-300, 301)
    p = np.exp(noise.logpmf(mechanism, k, param))
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    assert noise.variance(mechanism, param) == pytest.approx(float((k * k * p).sum()),
                                                             rel=1e-10)
    assert privacy.param_for_variance(mechanism, noise.variance(mechanism, param)) == \
        pytest.approx(param, rel=1e-9)
    if mechanism == "discrete-gaussian" and param < 1:
        assert noise.variance(mechanism, param) < param ** 2


@pytest.mark.parametrize(("sigma", "n"), [(1.0, 1), (3.0, 1), (3.0, 2)])
def test_discrete_gaussian_delta_is_the_privacy_loss_sum(sigma, n):
    """delta(eps) = sum_k max(0, p(k) - e^eps p(k - N)): the tight delta, computed apart."""
    k = np.arange(-400, 401)
    p = np.exp(noise.logpmf("discrete-gaussian", k, sigma))
    q = np.exp(noise.logpmf("discrete-gaussian", k - n, sigma))
    for eps in (0.3, 1.0, 2.5):
        assert privacy.dg_delta(sigma, eps, n) == pytest.approx(
            float(np.maximum(p - math.exp(eps) * q, 0).sum()), rel=1e-8, abs=1e-15)


@pytest.mark.parametrize(("mu", "n"), [(0.5, 1), (4.0, 1), (20.0, 3)])
def test_skellam_renyi_bound_holds(mu, n):
    """The Renyi divergence between the noise and the noise shifted by N, summed exactly,
    lies below the bound at every order (a bound four times too small fails)."""
    k = np.arange(-400, 401)
    lp = noise.logpmf("skellam", k, mu)
    lq = noise.logpmf("skellam", k - n, mu)
    orders = np.array([1.5, 2.0, 4.0, 16.0])
    exact = [special.logsumexp(a * lp + (1 - a) * lq) / (a - 1) for a in orders]
    bound = privacy.skellam_rdp(mu, orders, n)
    assert np.all(exact <= bound) and np.any(np.array(exact) > bound / 4)


@pytest.mark.parametrize("mechanism", M.MECHANISMS)
def test_matched_param_gives_the_asked_guarantee(mechanism):
    for eps in (0.5, 2.0):
        p = M.matched_param(mechanism, eps, 1e-5, 2.0)
        got = M.privacy(mechanism, p, 2.0, 1e-5)
        assert got["epsilon"] == pytest.approx(eps, rel=1e-6)
        assert got["statement"].count("\n") == 0
    assert M.privacy("discrete-gaussian", 2.0, 1.0)["rho"] == pytest.approx(1 / 8)
    assert M.privacy("geometric", 0.5, 3.0)["epsilon"] == pytest.approx(3 * math.log(2))


def test_privatize_takes_the_parameter_of_its_mechanism():
    Y = np.zeros((3, 4), dtype=np.int64)
    with pytest.raises(InputError, match="takes sigma, not alpha"):
        M.privatize(Y, 0.5, rng=0, mechanism="discrete-gaussian", sigma=1.0)
    with pytest.raises(InputError, match="needs mu"):
        M.privatize(Y, rng=0, mechanism="skellam")
    with pytest.raises(InputError, match="mechanism must be one of"):
        M.privatize(Y, 0.5, rng=0, mechanism="laplace")
    with pytest.raises(InputError, match="sigma must lie in"):
        M.privatize(Y, rng=0, mechanism="discrete-gaussian", sigma=-1.0)
    same = M.privatize(Y, rng=0, mechanism="skellam", mu=[0.0, 1.0, 2.0])
    assert np.all(same[0] == 0)


def test_cli_privatize_records_the_mechanism(tmp_path, capsys):
    np.savez(tmp_path / "y.npz", Y=np.ones((5, 6), dtype=np.int64))
    assert main(["privatize", str(tmp_path / "y.npz"), str(tmp_path / "s.npz"),
                 "--mechanism", "skellam", "--mu", "2", "--seed", "1"]) == 0
    with np.load(tmp_path / "s.npz") as z:
        assert str(z["mechanism"]) == "skellam" and float(z["mu"]) == 2.0
        assert "alpha" not in z.files
    assert "Skellam mu = 2" in capsys.readouterr().err
    assert main(["privatize", str(tmp_path / "y.npz"), str(tmp_path / "g.npz"),
                 "--mechanism", "discrete-gaussian", "--epsilon", "1", "--precision", "1",
                 "--delta", "1e-5", "--seed", "1"]) == 0
    with np.load(tmp_path / "g.npz") as z:
        sigma = float(z["sigma"])
        assert float(z["delta"]) == 1e-5
    assert M.privacy("discrete-gaussian", sigma, 1.0, 1e-5)["epsilon"] == pytest.approx(1.0)
    assert "zCDP" in capsys.readouterr().err
    assert main(["privatize", str(tmp_path / "y.npz"), str(tmp_path / "x.npz"),
                 "--mechanism", "skellam", "--alpha", "0.5"]) == 2
    assert "--alpha belongs to another mechanism" in capsys.readouterr().err
