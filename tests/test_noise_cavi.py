"""CAVI and the estimators under discrete Gaussian and Skellam noise."""

import numpy as np
import pytest

from lppf import noise
from lppf.cavi import fit_cavi
from lppf.cavi._local import CollapsedLocal, NoiseLocal
from lppf.estimators import CommunityModel, PoissonMF
from lppf.noise_conditional import tables
from lppf.validation import FitData, InputError


def planted(seed=0, D=40, V=30):
    rng = np.random.default_rng(seed)
    mu = rng.gamma(0.3, 3.0, (D, 3)) @ rng.gamma(0.3, 3.0, (3, V))
    return rng, mu, rng.poisson(mu)


class _Model:  # the two methods of a model that the local factors call
    def __init__(self, S):
        self.S = S

    def slots(self, m):
        return ()

    def rate_sum(self, slots, cells):
        return self.S


def test_geometric_tables_give_the_collapsed_local_factors():
    """NoiseLocal with geometric tables reproduces CollapsedLocal (the fast path)."""
    rng, mu, Y = planted()
    Ytil = Y + noise.sample("geometric", np.full(Y.shape, 0.6), rng)
    alpha = np.array([[0.6]])
    mask = np.zeros(Y.shape, bool)
    mask[3, 4] = True
    fast, walk = CollapsedLocal(Ytil, alpha, mask), NoiseLocal(
        Ytil, alpha, mask, tables("geometric", alpha, Ytil))
    R1, R2 = fast.refresh(_Model(mu), None), walk.refresh(_Model(mu), None)
    np.testing.assert_allclose(R2, R1, rtol=1e-10, atol=1e-14)
    assert walk.loglik == pytest.approx(fast.loglik, rel=1e-12)


@pytest.mark.parametrize(("mechanism", "param"), [("discrete-gaussian", 3.0), ("skellam", 5.0)])
@pytest.mark.parametrize("model", ["pmf", "community"])
def test_cavi_elbo_rises_and_beats_naive(mechanism, param, model):
    rng, mu, Y = planted(D=30, V=30)
    Ytil = Y + noise.sample(mechanism, np.full(Y.shape, param), rng)
    mae = {}
    for method in ("private-collapsed", "naive"):
        data = FitData(Ytil, np.full((1, 1), param), np.zeros(Y.shape, bool),
                       mechanism=mechanism)
        fit = fit_cavi(model, data, method=method, n_components=3, a0=0.1, b0=1.0,
                       max_iter=150, tol=0.0, restarts=1, rng=np.random.default_rng(0),
                       threads=None, progress=False)
        elbo = fit.trace["elbo"]
        assert np.all(np.diff(elbo) >= -1e-8 * np.abs(elbo[1:])), method
        mae[method] = np.abs(fit.mu_hat - mu)[~np.eye(30, dtype=bool)].mean()
    if model == "pmf":
        assert mae["private-collapsed"] < mae["naive"], mae


def test_estimators_take_the_mechanism():
    rng, _, Y = planted()
    Ytil = Y + noise.sample("skellam", np.full(Y.shape, 2.0), rng)
    model = PoissonMF(3, method="private-collapsed", inference="cavi", max_iter=50,
                      mechanism="skellam", random_state=0).fit(Ytil, alpha=2.0)
    assert model.mu_hat_.shape == Y.shape and model.config()["mechanism"] == "skellam"
    assert np.isfinite(model.score(Ytil[:5], alpha=2.0))
    with pytest.raises(InputError, match="needs the geometric mechanism"):
        CommunityModel(2, method="private", mechanism="skellam").fit(Ytil[:30, :30], alpha=2.0)
    with pytest.raises(InputError, match="mechanism must be one of"):
        PoissonMF(2, mechanism="laplace").fit(Ytil, alpha=2.0)
    with pytest.raises(InputError, match="sigma must lie in"):
        PoissonMF(2, method="private-collapsed", mechanism="discrete-gaussian").fit(
            Ytil, alpha=-1.0)
