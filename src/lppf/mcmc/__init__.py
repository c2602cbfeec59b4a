"""MCMC: :mod:`lppf.mcmc.pmf` (topics, Gibbs) and :mod:`lppf.mcmc.community` (networks,
Gibbs, and HMC for fixed counts: :mod:`lppf.mcmc.hmc`)."""

from __future__ import annotations

from typing import Any

from lppf.backends import backend
from lppf.results import FitResult
from lppf.validation import FitData


def fit_mcmc(model: str, data: FitData, **keywords: Any) -> FitResult:
    """Run ``n_chains`` chains of the sampler of ``model`` (``"pmf"`` or ``"community"``),
    samples pooled (:mod:`lppf.mcmc._driver`); the keywords are those of every MCMC backend
    (:mod:`lppf.backends`): ``method``, ``n_components``, ``a0``, ``b0``, ``n_iter``,
    ``burnin``, ``thin``, ``rng``, ``threads``, ``progress``, ``n_chains``, ``extend``,
    ``sampler``."""
    return backend(model, "mcmc")(data, **keywords)
