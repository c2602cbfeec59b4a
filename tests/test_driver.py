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
