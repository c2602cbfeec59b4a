"""The table of inference backends: ``(model, inference) -> function``, one entry each.

Every backend is called as ``backend(data, **keywords)`` with ``data`` a
:class:`~lppf.validation.FitData` and the keywords of :meth:`lppf.fitting.Settings.keywords`
(common: ``method``, ``n_components``, ``a0``, ``b0``, ``rng``, ``threads``, ``progress``;
MCMC adds ``n_iter``, ``burnin``, ``thin``, ``n_chains``, ``extend``, ``sampler``; CAVI
``max_iter``, ``tol``, ``restarts``), and returns a :class:`~lppf.results.FitResult`.
Backends are imported on first use: the workflow and ``lppf --help`` read this module
without numba's compiler.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from lppf.validation import INFERENCES, MODELS

BACKENDS = {
    ("pmf", "mcmc"): ("lppf.mcmc.pmf", "fit_pmf_mcmc"),
    ("community", "mcmc"): ("lppf.mcmc.community", "fit_community_mcmc"),
    ("pmf", "cavi"): ("lppf.cavi.pmf", "fit_pmf_cavi"),
    ("community", "cavi"): ("lppf.cavi.community", "fit_community_cavi"),
}


def backend(model: str, inference: str) -> Callable:
    """The function that fits ``model`` by ``inference``; ValueError for an unknown one."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose from {MODELS}")
    if inference not in INFERENCES:
        raise ValueError(f"unknown inference {inference!r}; choose from {INFERENCES}")
    module, name = BACKENDS[model, inference]
    return getattr(importlib.import_module(module), name)


__all__ = ["BACKENDS", "backend"]
