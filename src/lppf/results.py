"""The result every inference backend returns.

MCMC (:mod:`lppf.mcmc`) and CAVI (:mod:`lppf.cavi`) backends share this type, so the
estimators, the CLI and the workflow write one ``.npz`` layout whatever the backend. The
data a fit consumes, :class:`~lppf.validation.FitData`, is built by
:func:`lppf.validation.fit_data`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# re-exported from their present home, lppf.validation, for code written against them here
from lppf.validation import INFERENCES, METHODS, MODELS, PRIVATE_METHODS, FitData  # noqa: F401


@dataclass
class FitResult:
    """What a backend returns; estimators copy these into fitted attributes.

    mu_hat : (n_rows, n_cols) posterior mean (MCMC) or E_Q (CAVI) of the rate, every cell
        including masked ones.
    factors : point estimates, e.g. ``{"theta": (D, K), "phi": (K, V)}`` or
        ``{"theta": (V, C), "pi": (C, C)}`` (posterior means / variational means).
    y_hat : posterior mean of the true counts (private methods), else None.
    samples : thinned factor samples, e.g. ``{"theta": (S, D, K), ...}`` (MCMC only).
    log_joint : (S,) log joint probability of each saved sample (MCMC).
    trace : per-iteration traces, e.g. ``{"loglik": (I,)}`` or ``{"elbo": ..., "change": ...}``.
    variational : variational parameters (CAVI), e.g. ``{"theta_shape": ..., "theta_rate": ...}``.
    elapsed : seconds per phase, e.g. ``{"burnin": s, "sampling": s}``.
    n_iter : iterations run.
    extra : backend-specific details, e.g. ``{"n_chains": 2, "start_loglik": ...}``.
    diagnostics : MCMC convergence diagnostics (:mod:`lppf.diagnostics`): ``rhat_loglik``,
        ``ess_bulk_loglik``, ``ess_tail_loglik`` (scalars), ``cells`` (m, 2), ``rhat_mu``,
        ``ess_bulk_mu``, ``ess_tail_mu`` (m,), ``mu_cells`` (n_chains, S, m).
    """

    mu_hat: np.ndarray
    factors: dict[str, np.ndarray]
    n_iter: int
    elapsed: dict[str, float]
    y_hat: np.ndarray | None = None
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    log_joint: np.ndarray | None = None
    trace: dict[str, np.ndarray] = field(default_factory=dict)
    variational: dict[str, np.ndarray] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
