"""Coordinate-ascent variational inference (CAVI) for locally private Poisson factorization.

Methods: ``private`` (the published scheme: mode spike for the Bessel count, lambda factors,
delta method; no tractable ELBO), ``private-collapsed`` (exact optimal q(y) ∝ S^y / y!
alpha^|y~ - y|, closed-form truncated-Poisson expectations), ``naive`` (max(y~, 0) treated as
true counts) and ``nonprivate`` (true counts). See docs/method.md, "Variational inference (CAVI)".
"""

from __future__ import annotations

from typing import Any

from lppf.backends import backend
from lppf.results import FitResult
from lppf.validation import FitData


def fit_cavi(model: str, data: FitData, **keywords: Any) -> FitResult:
    """Fit ``model`` ("pmf" or "community") by CAVI to ``data`` validated by
    :mod:`lppf.validation`; the keywords are those of every CAVI backend
    (:mod:`lppf.backends`): ``method``, ``n_components``, ``a0``, ``b0``, ``max_iter``,
    ``tol``, ``restarts``, ``rng``, ``threads``, ``progress``.

    Iterates local factors -> global factors until the relative change of mu_hat (and of the
    ELBO where computable) in one iteration is below ``tol``, at most ``max_iter`` iterations
    (``tol = 0``: exactly ``max_iter``). ``restarts`` random initializations drawn from ``rng``;
    the one with the best final ELBO (``private``: log likelihood of y~ at mu_hat) is kept.
    """
    return backend(model, "cavi")(data, **keywords)
