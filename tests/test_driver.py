"""The MCMC driver's posterior means over saved samples."""

import numpy as np
import pytest

from lppf.mcmc._driver import run_chains


class CountingChain:
    """At sweep t the state is t everywhere; the counts live in one array updated in place,
    as the samplers' do."""

    def __init__(self):
        self.t = 0
        self.Y = np.zeros((2, 3), dtype=np.int32)

    def sweep(self) -> float:
        self.t += 1
        self.Y[...] = self.t
        return 0.0

    def factors(self):
        return {"x": np.full(1, float(self.t))}

    def mu(self):
        return np.full((2, 3), float(self.t))

    def counts(self):
        return self.Y

    def log_joint(self, mu=None):
        return float(self.t)


def test_posterior_means_average_every_saved_sample():
    fit = run_chains(lambda rng: (CountingChain(), {"loglik": np.zeros(1)}), n_chains=2,
                     n_iter=7, burnin=1, thin=2, rng=np.random.default_rng(0),
                     mask=np.zeros((2, 3), bool), progress=False, desc="")
    saved = [3.0, 5.0, 7.0]  # sweeps 3, 5, 7 of each chain
    np.testing.assert_array_equal(fit.samples["x"][:, 0], saved * 2)
    np.testing.assert_array_equal(fit.log_joint, saved * 2)
    np.testing.assert_allclose(fit.mu_hat, np.mean(saved))
    np.testing.assert_allclose(fit.y_hat, np.mean(saved))


class LazyChain(CountingChain):
    """A chain whose sweep never forms mu and that has no ``mean_mu``: the driver asks
    mu_at."""

    def mu(self):
        return None

    def mu_at(self, cells):
        return np.full(len(cells), 10.0 * self.t)


def test_a_chain_without_mu_gets_its_mean_from_the_pooled_samples():
    seen = []

    class MeanChain(LazyChain):
        def mean_mu(self, samples):
            seen.append(samples["x"][:, 0].tolist())
            return np.full((2, 3), samples["x"].mean())

    fit = run_chains(lambda rng: (MeanChain(), {"loglik": np.zeros(1)}), n_chains=2,
                     n_iter=7, burnin=1, thin=2, rng=np.random.default_rng(0),
                     mask=np.zeros((2, 3), bool), progress=False, desc="")
    assert seen == [[3.0, 5.0, 7.0] * 2]
    np.testing.assert_allclose(fit.mu_hat, 5.0)
    np.testing.assert_array_equal(fit.diagnostics["mu_cells"][0, :, 0], [30.0, 50.0, 70.0])
    with pytest.raises(TypeError, match="mean_mu"):
        run_chains(lambda rng: (LazyChain(), {"loglik": np.zeros(1)}), n_chains=1,
                   n_iter=3, burnin=1, thin=1, rng=np.random.default_rng(0),
                   mask=np.zeros((2, 3), bool), progress=False, desc="")


def test_a_schedule_that_saves_nothing_is_refused():
    with pytest.raises(ValueError, match="thin = 2"):
        run_chains(lambda rng: (CountingChain(), {"loglik": np.zeros(1)}), n_chains=1,
                   n_iter=5, burnin=4, thin=2, rng=np.random.default_rng(0),
                   mask=np.zeros((2, 3), bool), progress=False, desc="")


class SettlingChain:
    """Independent N(0, 1) log likelihoods and rates (sweep t saves x = t), shifted by an
    offset of its own (|offset| >= 10) for its first ``settle`` sweeps: its chains disagree
    until then, and agree after."""

    def __init__(self, rng, settle):
        self.rng, self.settle, self.t, self.v = rng, settle, 0, 0.0
        self.offset = rng.choice([-1.0, 1.0]) * rng.uniform(10, 100)

    def sweep(self) -> float:
        self.t += 1
        self.v = self.rng.normal() + (self.offset if self.t <= self.settle else 0.0)
        return self.v

    def factors(self):
        return {"x": np.full(1, float(self.t))}

    def mu(self):
        return np.full((2, 3), 100.0 + self.v)

    def counts(self):
        return None

    def log_joint(self, mu=None):
        return self.v


def _settling_fit(extend, n_chains=4, settle=700):
    return run_chains(lambda rng: (SettlingChain(rng, settle), {"loglik": np.zeros(1)}),
                      n_chains=n_chains, n_iter=310, burnin=10, thin=1,
                      rng=np.random.default_rng(1), mask=np.zeros((2, 3), bool),
                      progress=False, desc="", extend=extend)


def test_chains_that_miss_the_criterion_run_on_with_the_window_and_thinning_doubled():
    """Windows of 300, 600 and 1200 sweeps thinned by 1, 2 and 4: the chains agree only in
    the third, which is kept whole (the same 300 samples per chain) and diagnosed alone."""
    from lppf.diagnostics import convergence_problem

    fit = _settling_fit(extend=5)
    assert fit.extra["extended"] == 2 and fit.n_iter == 310 + 600 + 1200
    assert fit.extra["burnin"] == 910 and fit.extra["thin"] == 4
    assert fit.trace["loglik"].shape == (4, 2110)
    np.testing.assert_array_equal(fit.samples["x"][:300, 0], np.arange(914, 2111, 4))
    assert convergence_problem(fit.diagnostics, 4) is None
    assert fit.diagnostics["mu_cells"].shape == (4, 300, 6)
    # every window's diagnostics are kept: the first two miss, the last is the fit's own
    rhat, ess = fit.extra["window_rhat"], fit.extra["window_ess"]
    assert rhat.shape == ess.shape == fit.extra["window_rhat_mu"].shape == (3,)
    assert (rhat[:2] > 1.01).all() and rhat[2] == fit.diagnostics["rhat_loglik"]
    assert ess[2] == fit.diagnostics["ess_bulk_loglik"]
    stopped = _settling_fit(extend=1)  # the second window still holds the offsets
    assert stopped.extra["extended"] == 1 and stopped.n_iter == 910
    assert convergence_problem(stopped.diagnostics, 4).startswith("R-hat of the log")


def test_chains_that_meet_the_criterion_or_are_too_few_are_not_extended():
    settled = _settling_fit(extend=3, settle=0)
    assert settled.extra["extended"] == 0 and settled.n_iter == 310
    assert settled.extra["burnin"] == 10 and settled.extra["thin"] == 1
    assert settled.extra["window_rhat"].tolist() == [settled.diagnostics["rhat_loglik"]]
    few = _settling_fit(extend=3, n_chains=3)  # the criterion needs 4 chains
    assert few.extra["extended"] == 0 and few.n_iter == 310
