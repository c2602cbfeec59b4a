"""scikit-learn API: parameters, clone, transform (fold-in), score, Pipeline, GridSearchCV,
the log likelihood of privatized counts, lazy top-level imports."""

import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sklearn
from scipy import stats
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from lppf import CommunityModel, PoissonMF, privatize
from lppf.estimators import DEFAULTS
from lppf.likelihood import privatized_logpmf
from lppf.validation import InputError

CAVI = {"inference": "cavi", "max_iter": 200, "random_state": 0}
MCMC = {"inference": "mcmc", "max_iter": 200, "burnin": 100, "thin": 5, "random_state": 0}


def brute_logpmf(t, mu, alpha, n=3000):
    """log sum_{y=0..n} Pois(y; mu) (1-alpha)/(1+alpha) alpha^|t-y| by direct summation."""
    y = np.arange(n)
    if alpha == 0:
        return stats.poisson.logpmf(t, mu)
    terms = stats.poisson.logpmf(y, mu) + np.abs(t - y) * np.log(alpha)
    return np.log1p(-alpha) - np.log1p(alpha) + logsumexp(terms)


@pytest.mark.parametrize("alpha", [0.0, 1e-3, 0.05, 0.5, 0.95])
@pytest.mark.parametrize("mu", [0.0, 0.3, 2.0, 15.0, 120.0])
def test_privatized_logpmf_matches_brute_force(mu, alpha):
    t = np.arange(-30, 160)
    got = privatized_logpmf(t, mu, alpha)
    want = np.array([brute_logpmf(ti, mu, alpha) for ti in t])
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-10, atol=1e-10)


def test_privatized_logpmf_normalizes_and_broadcasts():
    t = np.arange(-400, 400)
    for mu, alpha in [(3.0, 0.5), (0.0, 0.9), (40.0, 0.2), (5.0, 1e-4)]:
        assert np.exp(privatized_logpmf(t, mu, alpha)).sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(privatized_logpmf([[0, 3]], [[1.0], [2.0]], 0.0),
                                  stats.poisson.logpmf([[0, 3]], [[1.0], [2.0]]))
    assert np.shape(privatized_logpmf(2, 1.0, 0.5)) == ()
    # deep tail of the y <= y~ piece (mu/alpha >> y~), where P(Y <= t) underflows
    assert privatized_logpmf(3, 50.0, 1e-6) == pytest.approx(brute_logpmf(3, 50.0, 1e-6),
                                                             rel=1e-12)


@pytest.fixture(scope="module")
def topics():
    """Documents from known topics: Theta_DK, Phi_KV, true and privatized counts."""
    rng = np.random.default_rng(0)
    Theta, Phi = rng.gamma(1.0, 2.0, (160, 3)), rng.gamma(0.3, 1.0, (3, 60))
    Y = rng.poisson(Theta @ Phi)
    return Theta, Phi, Y, privatize(Y, 0.5, rng=2)


def test_params_are_sklearn_params():
    est = PoissonMF(3, max_iter=50, random_state=np.random.default_rng(1), alpha=0.5)
    assert set(est.get_params()) == set(DEFAULTS)
    copy = clone(est)
    assert copy is not est and copy.max_iter == 50 and copy.alpha == 0.5
    assert repr(PoissonMF(3, max_iter=50)) == "PoissonMF(max_iter=50, n_components=3)"
    with pytest.raises(InputError, match=r"random_state must be an integer in \[0, 2\*\*63\)"):
        PoissonMF(2, random_state="x", **{k: v for k, v in CAVI.items()
                                          if k != "random_state"}).fit(np.ones((3, 3)))


def test_random_state_generator(topics):
    *_, Yn = topics
    gen = np.random.default_rng(5)
    est = PoissonMF(2, inference="cavi", max_iter=20, random_state=gen, alpha=0.5)
    twin = clone(est)  # a copy of the generator in its current state
    first = est.fit(Yn).mu_hat_.copy()
    np.testing.assert_array_equal(twin.fit(Yn).mu_hat_, first)
    assert not np.array_equal(est.fit(Yn).mu_hat_, first)  # the generator moved on
    again = PoissonMF(2, inference="cavi", max_iter=20, random_state=est.seed_, alpha=0.5)
    np.testing.assert_array_equal(again.fit(Yn).mu_hat_, est.mu_hat_)


@pytest.mark.parametrize("settings", [CAVI, MCMC], ids=["cavi", "mcmc"])
def test_transform_infers_theta_given_phi(topics, settings):
    """With phi held at the truth, new documents' theta is recovered; with the topics
    permuted it is not (so transform does use the fitted phi)."""
    Theta, Phi, _, Yn = topics
    error = {}
    for name, phi in [("true", Phi), ("permuted", Phi[::-1])]:
        est = PoissonMF(3, alpha=0.5, **settings).fit(Yn[:100], fix={"phi": phi})
        np.testing.assert_allclose(est.components_, phi, rtol=1e-12)
        Theta_new = est.transform(Yn[100:])
        assert Theta_new.shape == (60, 3)
        np.testing.assert_allclose(est.transform(Yn[100:]), Theta_new, rtol=1e-12)  # repeatable
        error[name] = np.abs(Theta_new - Theta[100:]).mean() / Theta[100:].mean()
    assert error["true"] < 0.5 < 0.65 < error["permuted"]


def test_fitted_attributes_and_fit_transform(topics):
    *_, Yn = topics
    est = PoissonMF(3, alpha=0.5, **CAVI)
    Theta_DK = est.fit_transform(Yn[:40])
    np.testing.assert_array_equal(Theta_DK, est.theta_)
    np.testing.assert_array_equal(est.components_, est.phi_)
    assert est.n_features_in_ == 60 and 1 <= est.n_iter_ <= 200
    assert list(est.get_feature_names_out()) == ["poissonmf0", "poissonmf1", "poissonmf2"]
    with pytest.raises(InputError, match="X has 59 features, but PoissonMF is expecting 60"):
        est.transform(Yn[:5, 1:])
    with pytest.raises(sklearn.exceptions.NotFittedError):
        PoissonMF(2).transform(Yn)


def test_alpha_argument_overrides_the_parameter(topics):
    *_, Yn = topics
    est = PoissonMF(3, alpha=0.5, **CAVI).fit(Yn[:40])
    same = PoissonMF(3, alpha=0.9, **CAVI).fit(Yn[:40], alpha=0.5)
    np.testing.assert_array_equal(est.mu_hat_, same.mu_hat_)
    assert est.score(Yn[40:80]) == same.score(Yn[40:80], alpha=0.5)
    with pytest.raises(InputError, match="alpha is required for method 'private'"):
        PoissonMF(3, **CAVI).fit(Yn[:40])


def test_score_is_the_held_out_likelihood(topics):
    """Nonprivate: the mean Poisson log pmf over the cells with odd row + column, at
    theta inferred from the other cells; held-out real documents beat shuffled ones."""
    _, _, Y, Yn = topics
    est = PoissonMF(3, method="nonprivate", **CAVI).fit(Y[:100])
    held = np.add.outer(np.arange(60), np.arange(60)) % 2 == 1
    visible = PoissonMF(3, method="nonprivate", **CAVI).fit(
        Y[100:], mask=held, fix={"phi": est.components_})
    want = stats.poisson.logpmf(Y[100:][held], visible.mu_hat_[held]).mean()
    # the fold-in uses its own seed, so compare in distribution, not bit for bit
    assert est.score(Y[100:]) == pytest.approx(want, abs=0.02)
    shuffled = np.random.default_rng(0).permuted(Y[100:], axis=1)
    assert est.score(shuffled) < est.score(Y[100:]) - 0.1
    private = PoissonMF(3, alpha=0.5, **CAVI).fit(Yn[:100])
    assert private.score(Yn[100:]) > private.score(Yn[100:], alpha=0.05)


def test_grid_search_chooses_k_on_private_data(topics):
    *_, Yn = topics
    search = GridSearchCV(PoissonMF(alpha=0.5, **CAVI), {"n_components": [1, 3, 6]}, cv=2)
    search.fit(Yn)
    assert search.best_params_ == {"n_components": 3}
    assert search.best_estimator_.components_.shape == (3, 60)


def test_pipeline_and_per_row_alpha_by_metadata_routing(topics):
    *_, Yn = topics
    pipe = make_pipeline(PoissonMF(3, alpha=0.5, **CAVI), Normalizer(norm="l1"))
    out = pipe.fit_transform(Yn[:40])
    assert out.shape == (40, 3) and np.allclose(out.sum(axis=1), 1.0)
    assert pipe.transform(Yn[40:50]).shape == (10, 3)
    alpha_D = np.where(np.arange(160) % 2 == 0, 0.5, 0.3)
    with sklearn.config_context(enable_metadata_routing=True):
        est = PoissonMF(**CAVI).set_fit_request(alpha=True).set_score_request(alpha=True)
        search = GridSearchCV(est, {"n_components": [2, 3]}, cv=2).fit(Yn, alpha=alpha_D)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


@pytest.fixture(scope="module")
def network():
    rng = np.random.default_rng(0)
    Theta = rng.gamma(0.5, 1.0, (60, 3))
    Pi = np.diag(rng.gamma(5.0, 1.0, 3)) + 0.05
    Y = rng.poisson(Theta @ Pi @ Theta.T)
    np.fill_diagonal(Y, 0)
    return Theta, Pi, privatize(Y, 0.3, rng=1)


def test_community_fold_in_of_new_actors(network):
    """New actors' rows to the fitted actors are a PMF with phi = Pi @ Theta.T."""
    Theta, Pi, Yn = network
    est = CommunityModel(3, alpha=0.3, **CAVI).fit(Yn[:45, :45])
    np.testing.assert_allclose(est.components_, est.pi_ @ est.theta_.T)
    assert est.n_features_in_ == 45 and est.fit_transform(Yn[:45, :45]).shape == (45, 3)
    Theta_new = est.transform(Yn[45:, :45])
    assert Theta_new.shape == (15, 3)
    mu_new = Theta[45:] @ Pi @ Theta[:45].T
    error = np.abs(Theta_new @ est.components_ - mu_new).mean()
    assert error < 0.5 * np.abs(mu_new - mu_new.mean(axis=1, keepdims=True)).mean()
    assert np.isfinite(est.score(Yn[45:, :45]))
    search = GridSearchCV(CommunityModel(alpha=0.3, **CAVI), {"n_components": [1, 3]}, cv=3)
    assert np.isfinite(search.fit(Yn).cv_results_["mean_test_score"]).all()


def test_community_components_average_the_samples(network):
    *_, Yn = network
    est = CommunityModel(2, alpha=0.3, **{**MCMC, "max_iter": 40, "burnin": 20}).fit(Yn)
    Pi_SCC, Theta_SVC = est.samples_["pi"], est.samples_["theta"]
    want = np.mean([p @ t.T for p, t in zip(Pi_SCC, Theta_SVC, strict=True)], axis=0)
    np.testing.assert_allclose(est.components_, want)


def test_import_lppf_stays_cheap():
    code = ("import sys, lppf; assert 'sklearn' not in sys.modules; "
            "assert 'lppf.estimators' not in sys.modules; "
            "from lppf import PoissonMF, CommunityModel, privatize; "
            "assert PoissonMF.__module__ == 'lppf.estimators'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_example_session_runs_and_is_shown_in_the_docs(capsys):
    root = Path(__file__).resolve().parents[1]
    script = (root / "docs/examples/sklearn_session.py").read_text()
    assert f"```python\n{script}```" in (root / "docs/sklearn.md").read_text()
    runpy.run_path(str(root / "docs/examples/sklearn_session.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "chosen: {'n_components': 3}" in out and "new actors' memberships: (10, 3)" in out
