"""Coordinate-ascent variational inference (CAVI) for locally private Poisson factorization.

Methods: ``private`` (the published scheme: mode spike for the Bessel count, lambda factors,
delta method; no tractable ELBO), ``private-collapsed`` (exact optimal q(y) ∝ S^y / y!
alpha^|y~ - y|, closed-form truncated-Poisson expectations), ``naive`` (max(y~, 0) treated as
true counts) and ``nonprivate`` (true counts). See docs/method.md, "Variational inference (CAVI)".
"""

from __future__ import annotations

import numpy as np

from lppf.results import FitResult
from lppf.validation import FitData


def fit_cavi(model: str, data: FitData, *, method: str, n_components: int, a0: float, b0: float,
             max_iter: int, tol: float, restarts: int, rng: np.random.Generator,
             threads: int | None = None, progress: bool = False) -> FitResult:
    """Fit ``model`` ("pmf" or "community") by CAVI with one of the four ``method``s, to
    ``data`` validated by :mod:`lppf.validation`.

    Iterates local factors -> global factors until the relative change of mu_hat (and of the
    ELBO where computable) in one iteration is below ``tol``, at most ``max_iter`` iterations
    (``tol = 0``: exactly ``max_iter``). ``restarts`` random initializations drawn from ``rng``;
    the one with the best final ELBO (``private``: log likelihood of y~ at mu_hat) is kept.
    """
    if model == "pmf":
        from lppf.cavi.pmf import fit_pmf_cavi as backend
    else:
        from lppf.cavi.community import fit_community_cavi as backend
    return backend(data, method=method, n_components=n_components, a0=a0, b0=b0,
                   max_iter=max_iter, tol=tol, restarts=restarts, rng=rng, threads=threads,
                   progress=progress)
