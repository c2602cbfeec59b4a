"""fit_cavi end to end: recovery on synthetic data, convergence, restarts, masks, fixes, errors."""

import numpy as np
import pytest

from lppf.cavi import fit_cavi
from lppf.validation import FitData

SETTINGS = {"a0": 0.3, "b0": 0.3, "restarts": 1}


def synthetic_pmf(seed, alpha, shape=(60, 50), k=3):
    rng = np.random.default_rng(seed)
    Theta_DK = rng.gamma(0.3, 1 / 0.3, size=(shape[0], k))
    Phi_KV = rng.gamma(0.3, 1 / 0.3, size=(k, shape[1]))
    mu = Theta_DK @ Phi_KV
    Y = rng.poisson(mu)
    noise = rng.geometric(1 - alpha, Y.shape) - rng.geometric(1 - alpha, Y.shape)
    return mu, Y, Y + noise


def fit(Y, alpha, method, model="pmf", mask=None, fix=None, seed=1, k=3, **kw):
    data = FitData(Y, np.full((1, 1), alpha), np.zeros(Y.shape, bool) if mask is None else mask,
                   fix or {})
    settings = {**SETTINGS, "max_iter": 150, "tol": 1e-4, **kw}
    return fit_cavi(model, data, method=method, n_components=k,
                    rng=np.random.default_rng(seed), **settings)


def mae_by_method(alpha, seed=0):
    mu, Y, Y_noisy = synthetic_pmf(seed, alpha)
    out = {}
    for method in ("nonprivate", "naive", "private-collapsed", "private"):
        result = fit(Y if method == "nonprivate" else Y_noisy, alpha, method)
        out[method] = np.abs(result.mu_hat - mu).mean()
    return out


def test_private_methods_beat_naive_under_strong_noise():
    mae = mae_by_method(0.8)
    assert mae["private-collapsed"] < 0.6 * mae["naive"], mae
    assert mae["private"] < 0.75 * mae["naive"], mae
    assert mae["private-collapsed"] <= mae["private"] * 1.05, mae


def test_private_methods_match_nonprivate_under_weak_noise():
    mae = mae_by_method(0.1)
    for method in ("private-collapsed", "private"):
        assert mae[method] < 1.2 * mae["nonprivate"], mae


def test_result_contents_and_convergence():
    _, Y, Y_noisy = synthetic_pmf(2, 0.5, shape=(30, 20))
    res = fit(Y_noisy, 0.5, "private", max_iter=400, tol=1e-5)
    assert res.extra["converged"] and res.n_iter < 400
    assert res.trace["change"][-1] < 1e-5 and np.isnan(res.trace["elbo"]).all()
    assert res.factors["theta"].shape == (30, 3) and res.factors["phi"].shape == (3, 20)
    np.testing.assert_allclose(res.mu_hat, res.factors["theta"] @ res.factors["phi"])
    for name in ("theta_shape", "theta_rate", "phi_shape", "phi_rate", "lambda_plus_shape",
                 "lambda_plus_rate", "lambda_minus_shape", "lambda_minus_rate"):
        assert name in res.variational
    assert res.y_hat.shape == Y.shape and np.all(res.y_hat >= 0)
    res = fit(Y_noisy, 0.5, "private-collapsed", max_iter=400, tol=1e-5)
    assert res.extra["converged"] and np.isfinite(res.trace["elbo"]).all()
    assert np.all(np.diff(res.trace["elbo"]) >= -1e-9 * np.abs(res.trace["elbo"][1:]))


def test_zero_tolerance_runs_exactly_max_iter():
    _, Y, _ = synthetic_pmf(3, 0.5, shape=(12, 10))
    res = fit(Y, 0.0, "nonprivate", max_iter=37, tol=0.0)
    assert res.n_iter == 37 and len(res.trace["elbo"]) == 37 and not res.extra["converged"]


def test_restarts_keep_best_objective_and_are_seeded():
    _, _, Y_noisy = synthetic_pmf(4, 0.5, shape=(20, 15))
    for method in ("private-collapsed", "private"):
        a = fit(Y_noisy, 0.5, method, restarts=3, seed=9)
        b = fit(Y_noisy, 0.5, method, restarts=3, seed=9)
        np.testing.assert_array_equal(a.mu_hat, b.mu_hat)
        objectives = a.extra["objective"]
        assert len(objectives) == 3 and len(set(objectives)) == 3
        assert max(objectives) - min(objectives) > 0
        single = [fit(Y_noisy, 0.5, method, restarts=1, seed=s) for s in (9,)]
        assert max(objectives) >= single[0].extra["objective"][0]
    assert a.extra["objective_kind"] == "loglik"


def test_same_result_for_any_thread_count():
    _, _, Y_noisy = synthetic_pmf(5, 0.6, shape=(300, 200))
    one = fit(Y_noisy, 0.6, "private-collapsed", threads=1, max_iter=5, tol=0)
    two = fit(Y_noisy, 0.6, "private-collapsed", threads=2, max_iter=5, tol=0)
    np.testing.assert_array_equal(one.mu_hat, two.mu_hat)


@pytest.mark.parametrize("method", ["naive", "private-collapsed", "private"])
@pytest.mark.parametrize("model", ["pmf", "community"])
def test_masked_cells_are_ignored(model, method):
    rng = np.random.default_rng(6)
    Y = rng.poisson(2.0, size=(12, 12)) - rng.poisson(0.5, size=(12, 12))
    mask = rng.random(Y.shape) < 0.2
    other = np.where(mask, rng.integers(-30, 90, size=Y.shape), Y)
    a = fit(Y, 0.4, method, model=model, mask=mask, max_iter=20, tol=0, k=2)
    b = fit(other, 0.4, method, model=model, mask=mask, max_iter=20, tol=0, k=2)
    np.testing.assert_allclose(a.mu_hat, b.mu_hat, rtol=1e-12)
    c = fit(other, 0.4, method, model=model, max_iter=20, tol=0, k=2)
    assert not np.allclose(a.mu_hat, c.mu_hat)


def test_fixed_factor_is_held():
    _, Y, Y_noisy = synthetic_pmf(7, 0.5, shape=(40, 30))
    Phi_KV = np.random.default_rng(0).gamma(1.0, 1.0, size=(3, 30))
    res = fit(Y_noisy, 0.5, "private-collapsed", fix={"phi": Phi_KV})
    np.testing.assert_array_equal(res.factors["phi"], Phi_KV)
    assert "phi_shape" not in res.variational and "theta_shape" in res.variational
    Pi = np.eye(2) * 3.0
    res = fit(np.maximum(Y[:12, :12], 0), 0.0, "nonprivate", model="community", k=2,
              fix={"pi": Pi})
    np.testing.assert_array_equal(res.factors["pi"], Pi)


def test_community_recovers_blocks():
    rng = np.random.default_rng(8)
    z = np.repeat(np.arange(3), 14)[:40]
    Theta_VC = np.eye(3)[z] * rng.gamma(5.0, 1 / 5.0, size=(40, 1)) + rng.gamma(0.5, 0.1, (40, 3))
    mu = Theta_VC @ (np.full((3, 3), 0.3) + 8.0 * np.eye(3)) @ Theta_VC.T
    Y = rng.poisson(mu)
    off = ~np.eye(40, dtype=bool)
    noisy = Y + rng.geometric(0.2, Y.shape) - rng.geometric(0.2, Y.shape)
    mae = {}
    for method in ("nonprivate", "naive", "private-collapsed", "private"):
        res = fit(Y if method == "nonprivate" else noisy, 0.8, method, model="community", k=3,
                  restarts=3, max_iter=200, a0=1.0, b0=1.0)
        mae[method] = np.abs(res.mu_hat - mu)[off].mean()
    constant = np.abs(mu - mu[off].mean())[off].mean()  # the all-noise fit
    assert mae["nonprivate"] < 0.15 * constant, mae
    assert mae["private-collapsed"] < 0.6 * mae["naive"], mae
    assert mae["private"] < 0.5 * constant, mae
