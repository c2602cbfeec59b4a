"""Estimator API: parameters, validation errors, fitted attributes, the saved layout."""

import json

import numpy as np
import pytest

from lppf.estimators import DEFAULTS, CommunityModel, PoissonMF
from lppf.validation import InputError

FAST = {"max_iter": 12, "burnin": 4, "thin": 4, "random_state": 0}


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(0)
    Y = rng.poisson(rng.gamma(1.0, 1.0, (20, 2)) @ rng.gamma(1.0, 1.0, (2, 15)))
    return Y, Y + rng.integers(-2, 3, Y.shape)


def test_get_set_params_and_defaults():
    est = PoissonMF(4)
    params = est.get_params()
    assert params == {"n_components": 4, **{k: v for k, v in DEFAULTS.items()
                                            if k != "n_components"}}
    assert est.set_params(method="naive", thin=3) is est
    assert est.get_params()["method"] == "naive" and est.thin == 3
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        est.set_params(nope=1)
    assert repr(PoissonMF(4, method="naive")) == "PoissonMF(method='naive', n_components=4)"


@pytest.mark.parametrize("method", ["private", "private-collapsed", "naive", "nonprivate"])
def test_fit_sets_attributes_and_saves(counts, method, tmp_path):
    Y, Ytil = counts
    data = Y if method == "nonprivate" else Ytil
    est = PoissonMF(2, method=method, **FAST).fit(data, alpha=0.5)
    assert est.mu_hat_.shape == Y.shape and est.theta_.shape == (20, 2)
    assert est.phi_.shape == (2, 15)
    assert (est.y_hat_ is None) == (method in ("naive", "nonprivate"))
    assert est.samples_["theta"].shape == (2, 20, 2) and est.log_joint_.shape == (2,)
    assert est.n_iter_ == 12 and est.elapsed_["total"] >= est.elapsed_["sampling"] > 0
    est.save(tmp_path / "fit.npz", input_path="in.npz")
    with np.load(tmp_path / "fit.npz") as z:
        keys = set(z.files)
        config = json.loads(str(z["config"]))
        np.testing.assert_array_equal(z["mu_hat"], est.mu_hat_)
        assert int(z["seed"]) == 0 and int(z["iterations"]) == 12
    expected = {"mu_hat", "theta", "phi", "theta_samples", "phi_samples", "log_joint",
                "trace_loglik", "elapsed_seconds", "elapsed_burnin", "elapsed_sampling",
                "iterations", "seed", "config", "extra_start_loglik", "extra_n_chains",
                "extra_burnin", "extra_thin", "extra_extended", "extra_window_rhat",
                "extra_window_ess", "extra_window_rhat_mu", "extra_langevin", "diag_rhat_loglik",
                "diag_ess_bulk_loglik", "diag_ess_tail_loglik",
                "diag_cells", "diag_rhat_mu", "diag_ess_bulk_mu", "diag_ess_tail_mu",
                "diag_mu_cells"}
    moved = est.result_.extra["langevin"]  # the moves run for private-collapsed fits only
    assert moved in (0, 1) and (moved == 0 or method == "private-collapsed")
    assert keys == (expected | ({"y_hat"} if method.startswith("private") else set())
                    | ({"alpha"} if method != "nonprivate" else set())
                    | ({"extra_langevin_acceptance"} if moved else set()))
    assert config["method"] == method and config["model"] == "pmf"
    assert config["input"] == "in.npz" and config["numba_threads"] >= 1
    assert {"a0", "b0", "max_iter", "burnin", "thin", "tol", "restarts", "threads"} <= set(config)


def test_same_seed_same_fit(counts):
    _, Ytil = counts
    a = PoissonMF(2, **FAST).fit(Ytil, alpha=0.5)
    b = PoissonMF(2, **FAST).fit(Ytil, alpha=0.5)
    np.testing.assert_array_equal(a.mu_hat_, b.mu_hat_)
    c = PoissonMF(2, **{**FAST, "random_state": None}).fit(Ytil, alpha=0.5)
    d = PoissonMF(2, **{**FAST, "random_state": c.seed_}).fit(Ytil, alpha=0.5)
    np.testing.assert_array_equal(c.mu_hat_, d.mu_hat_)


def test_alpha_shapes_accepted(counts):
    _, Ytil = counts
    for alpha in (0.3, np.full(20, 0.3), np.full((20, 1), 0.3), np.full((20, 15), 0.3)):
        est = PoissonMF(2, **FAST).fit(Ytil, alpha=alpha)
        assert est.result_.mu_hat.shape == Ytil.shape


BAD = [
    ({"method": "bayes"}, {}, "method must be one of"),
    ({"inference": "vb"}, {}, "inference must be one of"),
    ({"n_components": 0}, {}, "n_components must be an integer >= 1"),
    ({"a0": -1.0}, {}, "a0 must be finite and > 0"),
    ({"thin": 0}, {}, "thin must be an integer >= 1"),
    ({"max_iter": 10, "burnin": 10}, {}, r"max_iter \(10\) must exceed burnin \(10\)"),
    ({"threads": 0}, {}, "threads must be an integer >= 1"),
    ({}, {"alpha": 1.0}, r"alpha must lie in \[0, 1\)"),
    ({}, {"alpha": np.full(7, 0.5)}, r"alpha: shape \(7,\) does not fit"),
    ({}, {"alpha": None}, "alpha is required for method 'private'"),
    ({}, {"mask": np.zeros((3, 3), bool)}, r"mask: shape \(3, 3\) does not match"),
    ({}, {"mask": np.full((20, 15), 0.5)}, "mask: expected a boolean"),
    ({}, {"fix": {"phi": np.ones((3, 15))}}, r"fix\['phi'\]: shape \(3, 15\), expected"),
    ({}, {"fix": {"pi": np.ones((2, 2))}}, "fix: unknown factor 'pi'"),
    ({}, {"fix": {"phi": -np.ones((2, 15))}}, "must be finite and > 0"),
    ({}, {"Y": np.full((20, 15), 0.5)}, "Y: contains non-integer values"),
    ({"method": "nonprivate"}, {"Y": -np.ones((20, 15))}, "Y: contains negative counts"),
    ({}, {"alpha": 0.0, "Y": -np.ones((20, 15))}, r"Y\[0, 0\] = -1 < 0 in a cell with alpha = 0"),
]


@pytest.mark.parametrize(("params", "inputs", "message"), BAD)
def test_bad_input_is_one_clear_line(counts, params, inputs, message):
    _, Ytil = counts
    inputs = {"Y": Ytil, "alpha": 0.5, **inputs}
    with pytest.raises(InputError, match=message) as info:
        PoissonMF(**{"n_components": 2, **FAST, **params}).fit(**inputs)
    assert "\n" not in str(info.value)


def test_community_model_masks_the_diagonal():
    rng = np.random.default_rng(1)
    Y = rng.poisson(1.0, (12, 12))
    with pytest.raises(InputError, match="square matrix"):
        CommunityModel(2, method="nonprivate", **FAST).fit(Y[:, :10])
    est = CommunityModel(2, method="nonprivate", **FAST)
    data = est._check_data(Y, None, None, None)
    assert data.mask.diagonal().all() and not data.mask[0, 1]
    assert est._factor_shapes(Y.shape) == {"theta": (12, 2), "pi": (2, 2)}


def test_cavi_dispatch_passes_the_shared_settings(counts, monkeypatch):
    import lppf.cavi

    seen = {}

    def fake_fit_cavi(model, data, **kwargs):
        seen.update(model=model, **kwargs)
        from lppf.results import FitResult
        return FitResult(mu_hat=np.ones(data.Y.shape), factors={}, n_iter=3, elapsed={})

    monkeypatch.setattr(lppf.cavi, "fit_cavi", fake_fit_cavi)
    _, Ytil = counts
    PoissonMF(2, inference="cavi", max_iter=50, tol=0.0, restarts=3,
              random_state=1).fit(Ytil, alpha=0.5)
    assert seen["model"] == "pmf" and seen["max_iter"] == 50 and seen["tol"] == 0.0
    assert seen["restarts"] == 3 and seen["method"] == "private" and seen["n_components"] == 2


DEGENERATE = [
    (PoissonMF, {}, {"mask": np.ones((20, 15), bool)}, "mask", "holds out every cell"),
    (PoissonMF, {}, {"Y": np.zeros((0, 0))}, "Y", r"found array with 0 sample\(s\)"),
    (PoissonMF, {}, {"Y": np.full((20, 15), 2**31)}, "Y", r"within \+-2\*\*31"),
    (PoissonMF, {}, {"Y": np.full((20, 15), 1e30)}, "Y", r"within \+-2\*\*31"),
    (CommunityModel, {}, {"Y": np.ones((1, 1), int)}, "Y", "at least 2 actors"),
    (PoissonMF, {"n_components": 10**9}, {}, "n_components", "GiB"),
    (PoissonMF, {"a0": 1e16}, {}, "a0", "degenerate gamma prior"),
    (PoissonMF, {"random_state": 2**70}, {}, "random_state", r"\[0, 2\*\*63\)"),
    (PoissonMF, {"max_iter": 2**40}, {}, "max_iter", r"below 2\*\*31"),
    (PoissonMF, {}, {"fix": {"phi": np.zeros((2, 15))}}, "fix_phi", "finite and > 0"),
]


@pytest.mark.parametrize(("cls", "params", "inputs", "param", "message"), DEGENERATE)
def test_degenerate_problems_are_refused_naming_the_argument(counts, cls, params, inputs,
                                                             param, message):
    _, Ytil = counts
    inputs = {"Y": Ytil, "alpha": 0.5, **inputs}
    with pytest.raises(InputError, match=message) as info:
        cls(**{"n_components": 2, **FAST, **params}).fit(**inputs)
    assert info.value.param == param and "\n" not in str(info.value)


def test_convergence_warning_for_a_short_mcmc_fit_and_a_cavi_fit_stopped_early(counts):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    _, Ytil = counts
    with pytest.warns(ConvergenceWarning, match="PoissonMF did not converge: 1 chain < 4"):
        PoissonMF(2, method="naive", **FAST).fit(Ytil)
    with pytest.warns(ConvergenceWarning, match="R-hat|bulk ESS"):
        PoissonMF(2, method="naive", n_chains=4, **FAST).fit(Ytil)
    with pytest.warns(ConvergenceWarning, match="CAVI stopped at max_iter 2 before"):
        PoissonMF(2, method="naive", inference="cavi", max_iter=2, tol=1e-9).fit(Ytil)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        PoissonMF(2, method="naive", inference="cavi", max_iter=2, tol=0.0).fit(Ytil)
        PoissonMF(2, method="naive", inference="cavi", max_iter=500, tol=0.1).fit(Ytil)
