"""Several chains: derived seeds, pooling, thread invariance; R-hat, ESS and the export."""

from __future__ import annotations

import threading
import time

import numba
import numpy as np
import pytest

from lppf._numba import threads
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
from lppf.mcmc._driver import run_chains
from lppf.validation import FitData


def _data(model: str):
    rng = np.random.default_rng(3)
    V = 30
    Y = rng.poisson(2.0, (V, V if model == "community" else 20))
    mask = np.zeros(Y.shape, bool)
    if model == "community":
        np.fill_diagonal(mask, True)
    return FitData(Y + 0, np.full((1, 1), 0.5), mask)


def _fit(model: str, n_chains: int, threads: int = 1, seed: int = 0, extend: int = 0):
    return fit_mcmc(model, _data(model), method="private-collapsed", n_components=2, a0=0.5,
                    b0=1.0, n_iter=20, burnin=10, thin=5, rng=np.random.default_rng(seed),
                    threads=threads, n_chains=n_chains, extend=extend)


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


@pytest.mark.parametrize(("model", "n_chains", "extend"),
                         [("pmf", 2, 0), ("community", 2, 0), ("pmf", 3, 0), ("pmf", 4, 2),
                          ("community", 4, 1)])
def test_chains_identical_for_any_thread_count(model, n_chains, extend):
    """Two threads run two chains at once (three: two, then the third), one runs them in
    turn: the pooled result is the same to the bit, extensions included (20 sweeps of 2
    x 2 factors miss the criterion: each ``extend`` runs)."""
    one = _fit(model, n_chains, threads=1, extend=extend)
    two = _fit(model, n_chains, threads=2, extend=extend)
    assert one.extra["extended"] == two.extra["extended"] == extend
    np.testing.assert_array_equal(one.mu_hat, two.mu_hat)
    np.testing.assert_array_equal(one.y_hat, two.y_hat)
    np.testing.assert_array_equal(one.samples["theta"], two.samples["theta"])
    np.testing.assert_array_equal(one.log_joint, two.log_joint)
    np.testing.assert_array_equal(one.trace["loglik"], two.trace["loglik"])
    np.testing.assert_array_equal(one.diagnostics["mu_cells"], two.diagnostics["mu_cells"])


class _ThreadChain:
    """A chain that records the Python thread and the numba threads of its sweeps."""

    def __init__(self, seen: list):
        self.seen = seen

    def sweep(self) -> float:
        time.sleep(0.01)  # long enough for the other chain's sweeps to overlap
        self.seen.append((threading.get_ident(), numba.get_num_threads()))
        return 0.0

    def factors(self):
        return {"theta": np.zeros((2, 1))}

    def mu(self):
        return np.ones((2, 2))

    def counts(self):
        return None

    def log_joint(self, mu=None) -> float:
        return 0.0


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
def test_chains_run_at_once_on_their_share_of_the_threads():
    seen = {c: [] for c in range(2)}
    made = []

    def make_chain(rng):
        made.append(rng)
        return _ThreadChain(seen[len(made) - 1]), {}

    with threads(2):
        run_chains(make_chain, n_chains=2, n_iter=10, burnin=5, thin=5,
                   rng=np.random.default_rng(0), mask=np.zeros((2, 2), bool), progress=False,
                   desc="")
    idents = [{ident for ident, _ in seen[c]} for c in range(2)]
    assert all(len(i) == 1 for i in idents) and idents[0] != idents[1]
    assert {n for c in range(2) for _, n in seen[c]} == {1}


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
    extended = PoissonMF(2, method="private-collapsed", max_iter=30, burnin=10, thin=5,
                         n_chains=4, extend=1, random_state=0).fit(data.Y, alpha=0.5)
    assert extended.n_iter_ == 70  # 30, then a window of 40 thinned by 10: 4 samples
    assert extended.to_inference_data().sample_stats["loglik"].shape == (4, 40)
    idata.to_netcdf(tmp_path / "fit.nc")
    import arviz as az

    back = az.from_netcdf(tmp_path / "fit.nc")
    np.testing.assert_array_equal(back.posterior["phi"].values,
                                  model.samples_["phi"].reshape(2, 4, 2, 20))
    arrays = model.to_arrays()
    assert arrays["diag_rhat_mu"].shape == (16,) and np.isfinite(arrays["diag_rhat_loglik"])


class _BigChain(_ThreadChain):
    """Factors of 1 MB each, a new value every sweep."""

    def __init__(self, seen: list):
        super().__init__(seen)
        self.theta = np.zeros((1000, 125))

    def sweep(self) -> float:
        self.theta += 1.0
        return 0.0

    def factors(self):
        return {"theta": self.theta}


def test_saved_samples_take_no_more_memory_than_the_pooled_output():
    """2 chains x 20 saved samples of 1 MB: the samples are written into the pooled arrays
    (40 MB), not kept as lists, stacked and concatenated (three copies)."""
    import tracemalloc

    tracemalloc.start()
    try:
        fit = run_chains(lambda rng: (_BigChain([]), {}), n_chains=2, n_iter=20, burnin=0,
                         thin=1, rng=np.random.default_rng(0), mask=np.zeros((2, 2), bool),
                         progress=False, desc="")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    output = fit.samples["theta"].nbytes
    assert output == 2 * 20 * 1_000_000
    np.testing.assert_array_equal(fit.samples["theta"][[0, 19, 20, 39], 0, 0], [1, 20, 1, 20])
    assert peak < 1.2 * output, (peak, output)
