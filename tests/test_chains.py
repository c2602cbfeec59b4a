"""Several chains: derived seeds, pooling, thread invariance; R-hat, ESS and the export."""

from __future__ import annotations

import numpy as np
import pytest

from lppf.diagnostics import (
    ESS_MIN,
    RHAT_MAX,
    chain_diagnostics,
    convergence_problem,
    diagnostic_cells,
    warning_line,
)
from lppf.estimators import PoissonMF
from lppf.mcmc import fit_mcmc
from lppf.validation import FitData


def _data(model: str):
    rng = np.random.default_rng(3)
    V = 30
    Y = rng.poisson(2.0, (V, V if model == "community" else 20))
    mask = np.zeros(Y.shape, bool)
    if model == "community":
        np.fill_diagonal(mask, True)
    return FitData(Y + 0, np.full((1, 1), 0.5), mask)


def _fit(model: str, n_chains: int, threads: int = 1, seed: int = 0):
    return fit_mcmc(model, _data(model), method="private-collapsed", n_components=2, a0=0.5,
                    b0=1.0, n_iter=20, burnin=10, thin=5, rng=np.random.default_rng(seed),
                    threads=threads, n_chains=n_chains)


@pytest.mark.parametrize("model", ["pmf", "community"])
def test_chain_c_does_not_depend_on_the_number_of_chains(model):
    one, three = _fit(model, 1), _fit(model, 3)
    np.testing.assert_array_equal(one.samples["theta"], three.samples["theta"][:2])
    np.testing.assert_array_equal(one.trace["loglik"], three.trace["loglik"][0])
    assert three.trace["loglik"].shape == (3, 20) and three.samples["theta"].shape[0] == 6
    assert not np.array_equal(three.samples["theta"][:2], three.samples["theta"][2:4])
    mu = np.mean([r for r in three.diagnostics["mu_cells"].reshape(6, -1)], axis=0)
    cells = three.diagnostics["cells"]
    np.testing.assert_allclose(three.mu_hat[cells[:, 0], cells[:, 1]], mu)


@pytest.mark.parametrize("model", ["pmf", "community"])
def test_chains_share_one_em_start(model):
    three = _fit(model, 3)
    scores = three.extra["start_loglik"]
    assert scores.shape[0] == 3 and (scores == scores[0]).all()
    first = three.samples["theta"][0::2]  # each chain's first saved sample differs
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])


@pytest.mark.parametrize("model", ["pmf", "community"])
def test_chains_identical_for_any_thread_count(model):
    one, two = _fit(model, 2, threads=1), _fit(model, 2, threads=2)
    np.testing.assert_array_equal(one.mu_hat, two.mu_hat)
    np.testing.assert_array_equal(one.trace["loglik"], two.trace["loglik"])


def test_rhat_of_mixed_chains_near_one_and_of_stuck_chains_large():
    rng = np.random.default_rng(0)
    cells = np.zeros((3, 2), np.int64)
    mixed = chain_diagnostics(rng.normal(size=(4, 500)), rng.normal(size=(4, 200, 3)), cells)
    assert abs(mixed["rhat_loglik"] - 1) < 0.01 and np.all(np.abs(mixed["rhat_mu"] - 1) < 0.02)
    assert mixed["ess_bulk_loglik"] > 1000 and np.all(mixed["ess_tail_mu"] > 300)
    assert warning_line(mixed, 4) is None
    modes = np.array([0.0, 0.0, 3.0, 3.0])[:, None]
    stuck = chain_diagnostics(rng.normal(size=(4, 500)) + modes,
                              rng.normal(size=(4, 200, 3)) + modes[:, :, None], cells)
    assert stuck["rhat_loglik"] > 1.05 and np.all(stuck["rhat_mu"] > 1.05)
    assert "R-hat of the log likelihood" in warning_line(stuck, 4)


def test_one_chain_is_diagnosed_by_its_halves():
    rng = np.random.default_rng(2)
    cells = np.zeros((2, 2), np.int64)
    flat = chain_diagnostics(rng.normal(size=(1, 400)), rng.normal(size=(1, 40, 2)), cells)
    assert abs(flat["rhat_loglik"] - 1) < 0.02 and np.all(np.isfinite(flat["rhat_mu"]))
    drift = np.linspace(0, 5, 400)[None]
    assert chain_diagnostics(drift + rng.normal(size=(1, 400)), rng.normal(size=(1, 40, 2)),
                             cells)["rhat_loglik"] > 1.05


def test_the_criterion_names_the_first_diagnostic_it_misses():
    diagnostics = {"rhat_loglik": 1.005, "ess_bulk_loglik": 450.0, "rhat_mu": [1.0, 1.015],
                   "cells": np.array([[0, 1], [3, 7]])}
    assert convergence_problem(diagnostics, 4) is None
    assert convergence_problem(diagnostics, 3) == "3 chains < 4 (R-hat needs chains)"
    late = {**diagnostics, "rhat_loglik": RHAT_MAX + 0.002}
    assert convergence_problem(late, 4) == "R-hat of the log likelihood 1.012 > 1.01"
    cell = {**diagnostics, "rhat_mu": [1.0, 1.03]}
    assert convergence_problem(cell, 4) == "R-hat of mu at cell (row 3, column 7) 1.030 > 1.02"
    assert "(row 0, column 1) nan" in convergence_problem({**cell, "rhat_mu": [np.nan, 1]}, 4)
    few = {**diagnostics, "ess_bulk_loglik": ESS_MIN - 1.0}
    assert convergence_problem(few, 4) == "bulk ESS of the log likelihood 399 < 400"
    assert warning_line(few, 4).startswith("warning: not converged: bulk ESS")


def test_diagnostic_cells_are_observed_and_fixed():
    mask = np.random.default_rng(1).random((20, 30)) < 0.5
    cells = diagnostic_cells(mask)
    assert len(cells) == 16 and not mask[cells[:, 0], cells[:, 1]].any()
    np.testing.assert_array_equal(cells, diagnostic_cells(mask))


def test_inference_data_round_trip(tmp_path):
    data = _data("pmf")
    model = PoissonMF(2, method="private", max_iter=30, burnin=10, thin=5, n_chains=2,
                      random_state=0).fit(data.Y, alpha=0.5)
    idata = model.to_inference_data()
    assert idata.posterior["theta"].shape == (2, 4, 30, 2)
    assert idata.sample_stats["loglik"].shape == (2, 20)
    idata.to_netcdf(tmp_path / "fit.nc")
    import arviz as az

    back = az.from_netcdf(tmp_path / "fit.nc")
    np.testing.assert_array_equal(back.posterior["phi"].values,
                                  model.samples_["phi"].reshape(2, 4, 2, 20))
    arrays = model.to_arrays()
    assert arrays["diag_rhat_mu"].shape == (16,) and np.isfinite(arrays["diag_rhat_loglik"])
