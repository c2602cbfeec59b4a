"""The ported split R-hat and bulk/tail ESS give ArviZ's numbers."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from lppf.diagnostics import ess_bulk, ess_tail, rhat


@pytest.fixture(scope="module")
def az():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        import arviz

    logging.getLogger("arviz").setLevel(logging.ERROR)  # "Shape validation failed" is fine
    return arviz


def _ar1(rng: np.random.Generator, shape: tuple[int, int], rho: float) -> np.ndarray:
    """(chains, draws) AR(1) chains with autocorrelation ``rho`` and per-chain offsets."""
    x = rng.normal(size=shape)
    for t in range(1, shape[1]):
        x[:, t] += rho * x[:, t - 1]
    return x + rng.normal(scale=rng.uniform(0, 1), size=(shape[0], 1))


def _cases():
    rng = np.random.default_rng(12)
    for i in range(60):
        chains, draws = int(rng.integers(1, 6)), int(rng.integers(4, 400))
        kind = i % 4
        if kind == 0:  # independent draws
            yield rng.normal(size=(chains, draws)) * rng.uniform(0.1, 1e3)
        elif kind == 1:  # autocorrelated, chains at different levels
            yield _ar1(rng, (chains, draws), float(rng.uniform(0.5, 0.99)))
        elif kind == 2:  # heavy ties: small counts
            yield rng.poisson(rng.uniform(0.2, 5), size=(chains, draws)).astype(float)
        else:  # a log-likelihood-like trace: large offset, drifting
            yield -1e5 + np.cumsum(rng.normal(size=(chains, draws)), axis=1)


@pytest.mark.parametrize("x", list(_cases()))
def test_rhat_and_ess_agree_with_arviz(az, x):
    expected = (az.rhat(x), az.ess(x, method="bulk"), az.ess(x, method="tail"))
    for got, want in zip((rhat(x), ess_bulk(x), ess_tail(x)), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=0, equal_nan=True)


def test_degenerate_draws_agree_with_arviz(az):
    for x in (np.ones((2, 50)), np.ones((1, 3)), np.r_[np.ones(20), np.nan].reshape(1, -1)):
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = (az.rhat(x), az.ess(x, method="bulk"), az.ess(x, method="tail"))
        np.testing.assert_allclose([rhat(x), ess_bulk(x), ess_tail(x)], expected,
                                   equal_nan=True)
