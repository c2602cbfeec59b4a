"""Gibbs samplers: :mod:`lppf.mcmc.pmf` (topics) and :mod:`lppf.mcmc.community` (networks)."""

from __future__ import annotations

import importlib

import numpy as np

from lppf.results import FitResult
from lppf.validation import MODELS, FitData

_BACKENDS = {"pmf": ("lppf.mcmc.pmf", "fit_pmf_mcmc"),
             "community": ("lppf.mcmc.community", "fit_community_mcmc")}


def fit_mcmc(model: str, data: FitData, *, method: str, n_components: int, a0: float,
             b0: float, n_iter: int, burnin: int, thin: int, rng: np.random.Generator,
             threads: int | None = None, progress: bool = False, n_chains: int = 1
             ) -> FitResult:
    """Run ``n_chains`` chains of the Gibbs sampler of ``model`` (``"pmf"`` or
    ``"community"``), samples pooled (:mod:`lppf.mcmc._driver`); see the backends."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose from {MODELS}")
    module, name = _BACKENDS[model]
    fit = getattr(importlib.import_module(module), name)
    return fit(data, method=method, n_components=n_components, a0=a0, b0=b0, n_iter=n_iter,
               burnin=burnin, thin=thin, rng=rng, threads=threads, progress=progress,
               n_chains=n_chains)
