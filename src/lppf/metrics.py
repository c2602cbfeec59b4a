"""Evaluation of fits against the truth: errors, topic quality, alignment, coverage, time,
for a fit and for each chain of an MCMC fit alone.

Conventions
-----------
* Errors are means over the evaluated cells (``cells``: a boolean mask, default all).
* Poisson KL: ``KL(Pois(mu*) || Pois(mu_hat)) = mu* ln(mu*/mu_hat) - mu* + mu_hat`` with
  ``0 ln 0 = 0`` (``scipy.special.rel_entr``).
* Poisson deviance of a count y under a predicted mean mu: ``2 (y ln(y/mu) - y + mu)``, i.e.
  twice the Poisson KL with the count in place of mu*. It is a consistent scoring function for
  the mean (a Bregman divergence: its expectation is smallest at mu = E[y]), where MAE is one
  for the median; on sparse, heavy-tailed counts the median is 0 and MAE rewards predicting
  nothing, so held-out prediction of counts is scored by deviance.
* Topic quality uses document co-occurrence in the reference corpus ``Y_DV`` (the true data):
  ``D(w)`` documents containing w, ``D(w, w')`` documents containing both.
  UMass (Mimno et al., 2011): for the top words w_1..w_M of a topic in order of decreasing
  weight, ``sum_{m=2..M} sum_{l<m} ln((D(w_m, w_l) + 1) / D(w_l))`` (a sum, as published;
  ``D(w_l)`` is clipped at 1 for words absent from the corpus).
  NPMI (Lau et al., 2014): mean over pairs of ``ln(P(w, w') + EPS) - ln(P(w) P(w'))`` divided by
  ``-ln(P(w, w') + EPS)``, probabilities = document frequencies / D, ``EPS = 1e-12`` (as gensim),
  with the limits taken exactly: -1 for pairs that never co-occur (also when a word is absent
  from the corpus) and 1 for pairs present in every document.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from lppf import conditional
from lppf.results import FACTORS, part, part_key, samples_key

EPS = 1e-12
TOP_WORDS = 10


def _cells(shape: tuple[int, ...], cells: np.ndarray | None) -> np.ndarray:
    return np.ones(shape, dtype=bool) if cells is None else np.asarray(cells, dtype=bool)


def mae(mu_hat: np.ndarray, truth: np.ndarray, cells: np.ndarray | None = None) -> float:
    """Mean |mu_hat - truth| over ``cells`` (truth: the true counts Y or rates mu*)."""
    sel = _cells(truth.shape, cells)
    return float(np.mean(np.abs(mu_hat[sel] - truth[sel]))) if sel.any() else float("nan")


def heldout_mae(mu_hat: np.ndarray, Y: np.ndarray, mask: np.ndarray,
                cells: np.ndarray | None = None) -> float:
    """MAE over the held-out cells (``mask`` True) that are also in ``cells``."""
    return mae(mu_hat, Y, np.asarray(mask, dtype=bool) & _cells(Y.shape, cells))


def poisson_deviance(mu_hat: np.ndarray, Y: np.ndarray, cells: np.ndarray | None = None) -> float:
    """Mean over ``cells`` of the Poisson deviance ``2 (y ln(y/mu_hat) - y + mu_hat)``."""
    return 2.0 * poisson_kl(np.asarray(Y, dtype=float), mu_hat, cells)


def row_column_baseline(Y: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Rates ``mu_ij = r_i c_j / m`` from the observed cells only (the independence model):
    ``r_i``, ``c_j`` the mean observed count of row i and column j and ``m`` the overall one.
    Each row and column mean counts one extra cell at ``m`` (so no rate is 0 where a row or
    column has no observed count). Returns (n_rows, n_cols)."""
    obs = np.asarray(observed, dtype=bool)
    Y_obs = np.where(obs, Y, 0).astype(float)
    m = Y_obs.sum() / max(obs.sum(), 1)
    r = (Y_obs.sum(axis=1) + m) / (obs.sum(axis=1) + 1)
    c = (Y_obs.sum(axis=0) + m) / (obs.sum(axis=0) + 1)
    return np.outer(r, c) / m if m > 0 else np.zeros(Y.shape)


def poisson_kl(mu_true: np.ndarray, mu_hat: np.ndarray, cells: np.ndarray | None = None) -> float:
    """Mean over ``cells`` of KL(Pois(mu*) || Pois(mu_hat)); inf where mu_hat = 0 < mu*."""
    sel = _cells(mu_true.shape, cells)
    t, h = mu_true[sel], mu_hat[sel]
    return float(np.mean(special.rel_entr(t, h) - t + h)) if sel.any() else float("nan")


def kl_trace(samples: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Elementwise Poisson KL(truth || sample) averaged over entries, one value per sample.

    ``samples`` (S, ...) e.g. Theta samples (S, D, K) against the true Theta (D, K).
    """
    t = truth[None]
    kl = special.rel_entr(t, samples) - t + samples
    return kl.reshape(len(samples), -1).mean(axis=1)


def document_frequencies(Y_DV: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``D(w)`` for ``words`` (U,) and co-document counts ``D(w, w')`` (U, U) in ``Y_DV``."""
    B_DU = (np.asarray(Y_DV)[:, words] > 0).astype(np.float64)
    return B_DU.sum(axis=0), B_DU.T @ B_DU, B_DU.shape[0]


def top_words(Phi_KV: np.ndarray, n: int = TOP_WORDS) -> np.ndarray:
    """Indices of each topic's ``n`` heaviest words, heaviest first, shape (..., K, n)."""
    return np.argsort(-Phi_KV, axis=-1, kind="stable")[..., :n]


def _pair_counts(Y_DV: np.ndarray, top_TM: np.ndarray):
    words, inv = np.unique(top_TM, return_inverse=True)
    df_U, co_UU, n_docs = document_frequencies(Y_DV, words)
    idx_TM = inv.reshape(top_TM.shape)
    return df_U[idx_TM], co_UU[idx_TM[:, :, None], idx_TM[:, None, :]], n_docs


def umass(Y_DV: np.ndarray, top_TM: np.ndarray) -> np.ndarray:
    """UMass coherence (Mimno's +1 smoothing) of each topic's ordered top words (T, M) -> (T,)."""
    df_TM, co_TMM, _ = _pair_counts(Y_DV, top_TM)
    M = top_TM.shape[1]
    m, l = np.tril_indices(M, k=-1)  # pairs with l < m
    terms = np.log((co_TMM[:, m, l] + 1.0) / np.maximum(df_TM[:, l], 1.0))
    return terms.sum(axis=1)


def npmi(Y_DV: np.ndarray, top_TM: np.ndarray) -> np.ndarray:
    """Mean NPMI over word pairs of each topic's top words (T, M) -> (T,)."""
    df_TM, co_TMM, n_docs = _pair_counts(Y_DV, top_TM)
    i, j = np.triu_indices(top_TM.shape[1], k=1)
    co = co_TMM[:, i, j]
    p_ij = co / n_docs + EPS
    p_i, p_j = df_TM[:, i] / n_docs, df_TM[:, j] / n_docs
    inside = (co > 0) & (co < n_docs)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (np.log(p_ij) - np.log(p_i * p_j)) / -np.log(p_ij)
    return np.where(inside, value, np.where(co > 0, 1.0, -1.0)).mean(axis=1)


def topic_quality(Y_DV: np.ndarray, Phi: np.ndarray, n: int = TOP_WORDS) -> dict[str, float]:
    """Mean NPMI and UMass over topics and samples; ``Phi`` is (K, V) or samples (S, K, V)."""
    top_TM = top_words(np.asarray(Phi), n).reshape(-1, n)
    return {"npmi": float(np.mean(npmi(Y_DV, top_TM))),
            "umass": float(np.mean(umass(Y_DV, top_TM)))}


def align_topics(Phi_hat_KV: np.ndarray, Phi_true_KV: np.ndarray) -> np.ndarray:
    """Permutation ``p`` such that ``Phi_hat_KV[p]`` matches ``Phi_true_KV`` row by row.

    Hungarian matching (``scipy.optimize.linear_sum_assignment``) minimizing the L1 distance
    between topics normalized to sum to 1; K_hat >= K_true keeps the best K_true topics.
    """
    def normalized(P):
        return P / np.maximum(P.sum(axis=1, keepdims=True), np.finfo(float).tiny)

    from scipy.optimize import linear_sum_assignment  # only S2 aligns topics: imported there

    cost = np.abs(normalized(Phi_true_KV)[:, None, :] - normalized(Phi_hat_KV)[None]).sum(-1)
    return linear_sum_assignment(cost)[1]  # row indices come back sorted


def max_joint_phi(fit) -> np.ndarray:
    """Phi of the saved sample with the largest log joint (MCMC), else the point estimate."""
    if samples_key("phi") in fit and "log_joint" in fit and len(fit["log_joint"]):
        return np.asarray(fit[samples_key("phi")][int(np.argmax(fit["log_joint"]))], dtype=float)
    return np.asarray(fit["phi"], dtype=float)


def topic_error(Phi_hat_KV: np.ndarray, Phi_true_KV: np.ndarray) -> float:
    """Topic recovery error: mean over true topics of the L1 distance between each true topic
    and its Hungarian-aligned estimate, both normalized to sum to 1 (0: perfect, 2: disjoint)."""
    def normalized(P):
        P = np.asarray(P, dtype=float)
        return P / np.maximum(P.sum(axis=1, keepdims=True), np.finfo(float).tiny)

    aligned = normalized(Phi_hat_KV)[align_topics(Phi_hat_KV, Phi_true_KV)]
    return float(np.abs(aligned - normalized(Phi_true_KV)).sum(axis=1).mean())


def _conditional_pmf(t: np.ndarray, a: np.ndarray, mu_Sm: np.ndarray,
                     y_mW: np.ndarray) -> np.ndarray:
    """Mixture over samples of ``P(y | y~, mu) ∝ mu^y / y! alpha^|y~ - y|`` on grids y_mW."""
    return conditional.mixture_pmf(np.asarray(t, dtype=np.int64), np.asarray(a, dtype=float),
                                   np.asarray(mu_Sm, dtype=float),
                                   np.asarray(y_mW, dtype=np.int64))


def _support(t: np.ndarray, a: np.ndarray, mu_Sm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell range of y holding all but a negligible part of the conditional mass for
    every sampled mu (:func:`lppf.conditional.support`)."""
    return conditional.support(t, a, mu_Sm.min(axis=0), mu_Sm.max(axis=0))


def _as_cells(t, alpha):
    t = np.asarray(t, dtype=float)
    return t, np.broadcast_to(np.asarray(alpha, dtype=float), t.shape)


def posterior_y_pmf(y_tilde: np.ndarray, alpha: np.ndarray, mu_Sm: np.ndarray,
                    y_max: int | None = None) -> np.ndarray:
    """Posterior pmf of the true counts of m cells, averaged over S samples of their rates.

    ``P(y | y~, mu) ∝ mu^y / y! alpha^|y~ - y|`` (y >= 0) is the exact conditional of the true
    count once the mechanism's auxiliaries are marginalized; averaging it over posterior
    samples of mu gives the posterior of y. ``y_tilde``, ``alpha`` (m,), ``mu_Sm`` (S, m).
    Returns (m, y_max + 1) probabilities of y = 0..y_max (default: the largest support).
    """
    t, a = _as_cells(y_tilde, alpha)
    if y_max is None:
        y_max = int(_support(t, a, mu_Sm)[1].max(initial=0))
    y_mW = np.broadcast_to(np.arange(y_max + 1), (t.size, y_max + 1))
    return _conditional_pmf(t, a, mu_Sm, y_mW)


def posterior_y_interval(y_tilde: np.ndarray, alpha: np.ndarray, mu_Sm: np.ndarray,
                         level: float = 0.9, max_values: int = 2_000_000,
                         mechanism: str = "geometric"):
    """Equal-tailed ``level`` posterior intervals (lower, upper), each (m,), of the true counts.

    Each cell's pmf is evaluated on its own support (:func:`_support`), a chunk of cells of
    similar widths at a time (the narrowest first) so that at most about ``max_values`` grid
    values are held at once and narrow cells are not padded to the widest. ``alpha``: the
    parameter of the noise of ``mechanism`` (:mod:`lppf.noise_conditional` for the discrete
    Gaussian and Skellam noise).
    """
    t, a = _as_cells(y_tilde, alpha)
    if mechanism == "geometric":
        lo, hi = _support(t, a, mu_Sm)

        def pmf(part, y_mW):
            return _conditional_pmf(t[part], a[part], mu_Sm[:, part], y_mW)
    else:
        from lppf import noise_conditional as nc

        noise = nc.tables(mechanism, a[None, :], t.astype(np.int64)[None, :])
        code = noise.code[0]
        var = np.where(code >= 0, np.append(noise.var, 0.0)[code], 0.0)
        lo, hi = nc.support(t, var, mu_Sm.min(axis=0), mu_Sm.max(axis=0))

        def pmf(part, y_mW):
            return nc.mixture_pmf(t[part], code[part], mu_Sm[:, part], y_mW, noise)
    order = np.argsort(hi - lo, kind="stable")
    widths = (hi - lo)[order] + 1
    lower, upper = np.empty(t.size, np.int64), np.empty(t.size, np.int64)
    start = 0
    while start < t.size:  # the most cells whose count times the widest <= max_values
        fits = np.arange(1, t.size - start + 1) * widths[start:] <= max_values
        stop = start + max(int(fits.sum()), 1)
        part = order[start:stop]
        y_mW = lo[part, None] + np.arange(widths[stop - 1])[None, :]
        cdf = np.cumsum(pmf(part, y_mW), axis=1)
        lower[part] = lo[part] + (cdf < (1 - level) / 2).sum(axis=1)
        upper[part] = lo[part] + (cdf < (1 + level) / 2).sum(axis=1)
        start = stop
    return lower, upper


def interval_coverage(lower: np.ndarray, upper: np.ndarray, y_true: np.ndarray) -> float:
    """Fraction of cells with ``lower <= y_true <= upper``."""
    return float(np.mean((lower <= y_true) & (y_true <= upper)))


def rate_samples(model: str, samples: dict[str, np.ndarray], rows: np.ndarray,
                 cols: np.ndarray) -> np.ndarray:
    """mu of the cells (rows[n], cols[n]) for every sample, (S, N), from factor samples
    ``theta`` (S, D, K) and ``phi`` (S, K, V), or ``theta`` (S, V, C) and ``pi`` (S, C, C)."""
    theta = samples["theta"]
    if model == "pmf":
        return np.einsum("snk,skn->sn", theta[:, rows], samples["phi"][:, :, cols])
    return np.einsum("snc,scd,snd->sn", theta[:, rows], samples["pi"], theta[:, cols])


def _factor_samples(fit, names: tuple[str, str]) -> dict[str, np.ndarray] | None:
    """Factor samples; a factor held fixed (no samples saved) is repeated."""
    if not any(samples_key(k) in fit for k in names):
        return None
    n = max(len(fit[samples_key(k)]) for k in names if samples_key(k) in fit)
    return {k: fit[samples_key(k)] if samples_key(k) in fit
            else np.broadcast_to(fit[k], (n, *fit[k].shape)) for k in names}


def coverage(model: str, fit, private, Y: np.ndarray, cells: np.ndarray, n_cells: int,
             rng: np.random.Generator, level: float = 0.9) -> float:
    """Share of ``n_cells`` random cells among ``cells`` whose true count lies in its ``level``
    posterior interval (given the privatized ``Y_noisy`` and ``alpha``); NaN without samples."""
    samples = _factor_samples(fit, ("theta", "phi" if model == "pmf" else "pi"))
    if samples is None:
        return math.nan
    rows, cols = np.nonzero(cells)
    pick = rng.choice(rows.size, size=min(n_cells, rows.size), replace=False)
    rows, cols = rows[pick], cols[pick]
    alpha = np.broadcast_to(np.asarray(private["alpha"], dtype=float), Y.shape)[rows, cols]
    mu_Sm = rate_samples(model, samples, rows, cols)
    lower, upper = posterior_y_interval(private["Y_noisy"][rows, cols], alpha, mu_Sm, level,
                                        mechanism=private.get("mechanism", "geometric"))
    return interval_coverage(lower, upper, Y[rows, cols])


def evaluate_fit(model: str, fit, truth, mask: np.ndarray | None = None,
                 private=None, coherence: bool = False, coverage_cells: int = 500,
                 seed: int = 0) -> dict[str, float]:
    """Every metric of one fit against the truth (mappings of arrays, e.g. loaded ``.npz``).

    ``mae_y`` (mu_hat vs the true counts Y); with the true rates ``mu``: ``mae_mu`` and ``kl``;
    with the true ``phi`` (pmf): ``topic_l1`` (:func:`topic_error` of the max-joint sample);
    with ``mask`` (True = held out): ``heldout_mae`` and ``heldout_baseline_mae`` (the
    held-out MAE of predicting the mean observed count everywhere), ``heldout_deviance`` and
    ``heldout_baseline_deviance`` (mean Poisson deviance of mu_hat and of
    :func:`row_column_baseline` over the held-out cells); with ``coherence``:
    ``npmi`` and ``umass`` of every saved Phi sample; with ``private`` (``Y_noisy``,
    ``alpha``): ``coverage90`` over cells that were observed; MCMC fits: :func:`convergence`.
    Community models are evaluated off the diagonal.
    """
    Y, mu_hat = truth["Y"], np.asarray(fit["mu_hat"], dtype=float)
    cells = ~np.eye(*Y.shape, dtype=bool) if model == "community" else None
    out = {"mae_y": mae(mu_hat, Y, cells)}
    if "mu" in truth:
        out["mae_mu"] = mae(mu_hat, truth["mu"], cells)
        out["kl"] = poisson_kl(truth["mu"], mu_hat, cells)
    if model == "pmf" and "phi" in truth and ("phi" in fit or samples_key("phi") in fit):
        out["topic_l1"] = topic_error(max_joint_phi(fit), truth["phi"])
    observed = np.ones(Y.shape, bool) if cells is None else cells.copy()
    if mask is not None:
        out["heldout_mae"] = heldout_mae(mu_hat, Y, mask, cells)
        observed &= ~mask
        # what a fit that learned nothing about the held-out links would score
        out["heldout_baseline_mae"] = heldout_mae(np.full(Y.shape, Y[observed].mean()), Y,
                                                  mask, cells)
        held = np.asarray(mask, dtype=bool) & _cells(Y.shape, cells)
        out["heldout_deviance"] = poisson_deviance(mu_hat, Y, held)
        out["heldout_baseline_deviance"] = poisson_deviance(row_column_baseline(Y, observed),
                                                            Y, held)
    if coherence:
        phi = samples_key("phi")
        out.update(topic_quality(Y, fit[phi] if phi in fit else fit["phi"]))
    if private is not None:
        out["coverage90"] = coverage(model, fit, private, Y, observed, coverage_cells,
                                     np.random.default_rng(seed))
    if part_key("diagnostics", "rhat_loglik") in fit:
        out.update(convergence(fit))
    objective = part_key("extra", "objective")
    if objective in fit:  # CAVI: best minus worst final objective of restarts
        out["objective_spread"] = float(np.ptp(fit[objective]))
    return out


# the metrics each chain of an MCMC fit also gets (chain_metrics): those the claims read
CHAIN_METRICS = ("mae_y", "mae_mu", "kl", "topic_l1", "heldout_mae", "heldout_deviance",
                 "npmi", "umass", "coverage90")


def chain_key(metric: str, chain: int) -> str:
    """The tidy table's column of ``metric`` from chain ``chain`` alone, e.g. ``kl_chain2``."""
    return f"{metric}_chain{chain}"


def mean_rate(model: str, samples: dict[str, np.ndarray]) -> np.ndarray:
    """The mean over samples of mu: Theta_s Phi_s (pmf, samples ``theta`` (S, D, K) and
    ``phi`` (S, K, V)) or Theta_s Pi_s Theta_s^T (community, ``theta`` (S, V, C) and ``pi``
    (S, C, C)); (D, V) or (V, V), every cell."""
    theta = np.asarray(samples["theta"], dtype=float)
    if model == "pmf":
        from lppf.mcmc.pmf import mean_product  # its compiled kernels load on first use

        return mean_product(theta, np.asarray(samples["phi"], dtype=float))
    return np.einsum("svc,scd,swd->vw", theta, samples["pi"], theta, optimize=True) / len(theta)


def chain_view(model: str, fit, chain: int, n_chains: int) -> dict[str, np.ndarray]:
    """The arrays of an MCMC ``fit`` that chain ``chain`` of ``n_chains`` alone gives: its
    run of the saved samples (the pooled samples stack the chains in order, S each), their
    log joints, ``mu_hat`` their :func:`mean_rate`, and the point estimates of factors held
    fixed (no samples)."""
    names = FACTORS[model]
    samples = _factor_samples(fit, names)
    S = len(samples["theta"]) // n_chains
    run = slice(chain * S, (chain + 1) * S)
    view = {k: fit[k] for k in names if k in fit}
    view.update({samples_key(k): np.asarray(fit[samples_key(k)])[run] for k in names
                 if samples_key(k) in fit})
    if "log_joint" in fit:
        view["log_joint"] = np.asarray(fit["log_joint"])[run]
    view["mu_hat"] = mean_rate(model, {k: v[run] for k, v in samples.items()})
    return view


def chain_metrics(model: str, fit, truth, mask: np.ndarray | None = None, private=None,
                  coherence: bool = False, coverage_cells: int = 500,
                  seed: int = 0) -> dict[str, float]:
    """Each metric of :data:`CHAIN_METRICS` that :func:`evaluate_fit` gives, from each chain
    of an MCMC fit alone (:func:`chain_view`), under :func:`chain_key`; empty for a fit of one
    chain or without saved factor samples (CAVI). Chains that reach different modes give
    different values; a claim that holds with every chain's values holds whichever mode a
    chain found."""
    n_chains = int(part(fit, "extra").get("n_chains", 1))
    if n_chains < 2 or _factor_samples(fit, FACTORS[model]) is None:
        return {}
    out = {}
    for c in range(n_chains):
        values = evaluate_fit(model, chain_view(model, fit, c, n_chains), truth, mask, private,
                              coherence, coverage_cells, seed)
        out.update({chain_key(m, c): values[m] for m in CHAIN_METRICS if m in values})
    return out


# the tidy table's diagnostics of a fit's first sampling window, from its extra_window_*
FIRST_WINDOW = {"rhat_loglik": "window_rhat", "ess_bulk_loglik": "window_ess",
                "rhat_mu_max": "window_rhat_mu"}


def convergence(fit) -> dict[str, float]:
    """MCMC diagnostics of a fit (its ``diag_*`` arrays, :mod:`lppf.diagnostics`): split R-hat
    and bulk and tail ESS of the log-likelihood trace, the largest R-hat over the diagnosed
    cells of mu, the number of chains, ``extended`` (how often the chains ran on past their
    schedule; 0 for fits before that option), ``converged`` (1.0 when the fit meets the
    criterion of :func:`lppf.diagnostics.convergence_problem`, else 0.0) and the first
    three again for the schedule's own window, before any extension (``*_first``; NaN for
    fits that do not record it)."""
    from lppf.diagnostics import convergence_problem, worst_cell_rhat

    diagnostics = part(fit, "diagnostics")
    extra = part(fit, "extra")
    n_chains = int(extra.get("n_chains", 1))
    windows = {column: np.ravel(extra.get(name, [])) for column, name in FIRST_WINDOW.items()}
    first = {f"{column}_first": float(w[0]) if w.size else math.nan
             for column, w in windows.items()}
    return {"rhat_loglik": float(diagnostics["rhat_loglik"]),
            "ess_bulk_loglik": float(diagnostics["ess_bulk_loglik"]),
            "ess_tail_loglik": float(diagnostics.get("ess_tail_loglik", math.nan)),
            "rhat_mu_max": worst_cell_rhat(diagnostics),
            "n_chains": float(n_chains), "extended": float(extra.get("extended", 0)),
            "converged": float(convergence_problem(diagnostics, n_chains) is None), **first}
