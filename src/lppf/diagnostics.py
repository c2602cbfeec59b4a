"""Convergence diagnostics of MCMC fits: ArviZ's numbers without importing ArviZ.

Split R-hat and bulk/tail effective sample sizes of

* the log-likelihood trace after burn-in, (n_chains, n_iter - burnin) draws;
* mu at ``N_CELLS`` cells drawn once (seed ``CELL_SEED``) among the observed cells, at
  every saved sample, (n_chains, S) draws per cell.

With one chain, its two halves are used as two chains (which are split again).

A fit meets the criterion of Vehtari et al. (2021) (:func:`convergence_problem` is None) when
it ran at least ``MIN_CHAINS`` chains, the R-hat of its log likelihood is at most
``RHAT_MAX``, the R-hat of every diagnosed cell at most ``RHAT_CELL_MAX`` and the bulk ESS of
its log likelihood at least ``ESS_MIN``.

:func:`rhat`, :func:`ess_bulk` and :func:`ess_tail` are ArviZ 0.x's ``rhat`` (method "rank")
and ``ess`` (methods "bulk" and "tail") of Vehtari et al. (2021), "Rank-normalization,
folding, and localization: an improved R-hat", ported to numpy and the standard library; a test
checks that they agree with ArviZ to 1e-10. Every MCMC fit computes them, and importing ArviZ
(with pandas, xarray, matplotlib and its numba functions compiled at import) takes longer
than a whole small ``lppf fit`` job, which the workflow runs hundreds of times. ArviZ itself
is imported only to export ``InferenceData`` (:func:`to_inference_data`).
"""

from __future__ import annotations

import warnings
from statistics import NormalDist

import numpy as np

N_CELLS = 16  # cells of mu whose chains are diagnosed
CELL_SEED = 0  # the cells are the same for every fit of the same shape and mask
MIN_CHAINS = 4  # the criterion: R-hat and ESS over at least 4 chains,
RHAT_MAX = 1.01  # split R-hat of the log likelihood at most this,
RHAT_CELL_MAX = 1.02  # of every diagnosed cell of mu at most this,
ESS_MIN = 400  # bulk ESS of the log likelihood at least this

KEYS = ("rhat_loglik", "ess_bulk_loglik", "ess_tail_loglik", "cells", "rhat_mu",
        "ess_bulk_mu", "ess_tail_mu")


def diagnostic_cells(mask: np.ndarray, n: int = N_CELLS) -> np.ndarray:
    """(m, 2) row and column indices of up to ``n`` observed cells, fixed by ``CELL_SEED``."""
    rows, cols = np.nonzero(~np.asarray(mask, dtype=bool))
    pick = np.random.default_rng(CELL_SEED).permutation(len(rows))[:n]
    pick.sort()
    return np.stack([rows[pick], cols[pick]], axis=1).astype(np.int64)


def _arviz():
    """Import ArviZ (0.x: ``InferenceData``) without its once-a-day refactoring notice."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
        import arviz

    return arviz


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalized ``x``: normal quantiles of the average ranks of all its values,
    offset by Blom's 3/8; same shape."""
    flat = x.ravel()
    order = np.argsort(flat, kind="mergesort")
    sorted_ = flat[order]
    new = np.r_[True, sorted_[1:] != sorted_[:-1]]
    dense = np.empty(flat.size, dtype=np.intp)
    dense[order] = np.cumsum(new)
    count = np.r_[np.nonzero(new)[0], flat.size]
    rank = 0.5 * (count[dense] + count[dense - 1] + 1)  # ties get their average rank
    quantile = np.vectorize(NormalDist().inv_cdf, otypes=[np.float64])
    return quantile((rank - 3 / 8) / (flat.size + 1 / 4)).reshape(x.shape)


def _split(x_RI: np.ndarray) -> np.ndarray:
    """(2R, I // 2): the first and last halves of every chain as chains of their own."""
    half = x_RI.shape[1] // 2
    return np.vstack([x_RI[:, :half], x_RI[:, x_RI.shape[1] - half:]])


def _rhat_basic(x_RI: np.ndarray) -> float:
    """Gelman-Rubin R-hat: sqrt((I - 1) / I + B / (I w)), B = I var(chain means),
    w = mean of the chain variances."""
    n = x_RI.shape[1]
    between = n * np.var(x_RI.mean(axis=1), ddof=1)
    within = np.mean(np.var(x_RI, axis=1, ddof=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sqrt((between / within + n - 1) / n))


def _autocov(x_RI: np.ndarray) -> np.ndarray:
    """(R, I) autocovariance of every chain at lags 0..I-1 (biased, divided by I), by FFT
    over the chain zero-padded to a power of two >= 2I (so the circular products are the
    linear ones)."""
    n = x_RI.shape[1]
    m = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(x_RI - x_RI.mean(axis=1, keepdims=True), n=m, axis=1)
    f *= np.conjugate(f)
    return np.fft.irfft(f, n=m, axis=1)[:, :n] / n


def _ess_basic(x_RI: np.ndarray) -> float:
    """Effective sample size of (R, I) draws: R I / tau, tau from the multi-chain
    autocorrelations truncated by Geyer's initial positive and monotone sequences."""
    x_RI = np.asarray(x_RI, dtype=np.float64)
    if np.max(x_RI) - np.min(x_RI) < np.finfo(float).resolution:
        return float(x_RI.size)
    n_chain, n = x_RI.shape
    acov = _autocov(x_RI)
    mean_var = np.mean(acov[:, 0]) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if n_chain > 1:
        var_plus += np.var(x_RI.mean(axis=1), ddof=1)
    rho = np.zeros(n)
    rho_even, rho_odd = 1.0, 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    rho[0], rho[1] = rho_even, rho_odd
    t = 1
    while t < n - 3 and rho_even + rho_odd > 0.0:  # initial positive sequence
        rho_even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        rho_odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if rho_even + rho_odd >= 0:
            rho[t + 1], rho[t + 2] = rho_even, rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:  # initial monotone sequence
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2.0
        t += 2
    size = n_chain * n
    tau = -1.0 + 2.0 * np.sum(rho[:max_t + 1]) + np.sum(rho[max_t + 1:max_t + 2])
    tau = max(tau, 1 / np.log10(size))
    return float("nan") if np.isnan(rho).any() else float(size / tau)


def _valid(x_RI: np.ndarray, min_chains: int) -> bool:
    return (not np.isnan(x_RI).any() and x_RI.shape[0] >= min_chains
            and x_RI.shape[1] >= 4)


def rhat(x_RI: np.ndarray) -> float:
    """Rank-normalized split R-hat of (chains, draws) ``x_RI``: the larger of the split
    R-hat of the rank-normalized draws (bulk) and of the rank-normalized distances to the
    median (tail). NaN with NaN draws, fewer than 2 chains or 4 draws."""
    x_RI = np.asarray(x_RI, dtype=np.float64)
    if not _valid(x_RI, min_chains=2):
        return float("nan")
    split = _split(x_RI)
    folded = np.abs(split - np.median(split))
    return max(_rhat_basic(_z_scale(split)), _rhat_basic(_z_scale(folded)))


def ess_bulk(x_RI: np.ndarray) -> float:
    """Bulk effective sample size: the ESS of the rank-normalized split chains."""
    x_RI = np.asarray(x_RI, dtype=np.float64)
    if not _valid(x_RI, min_chains=1):
        return float("nan")
    return _ess_basic(_z_scale(_split(x_RI)))


def ess_tail(x_RI: np.ndarray) -> float:
    """Tail effective sample size: the smaller ESS of the split indicators ``x <= q`` for
    the 5% and 95% quantiles q (type 7, numpy's default)."""
    x_RI = np.asarray(x_RI, dtype=np.float64)
    if not _valid(x_RI, min_chains=1):
        return float("nan")
    return min(_ess_basic(_split(x_RI <= np.quantile(x_RI, p))) for p in (0.05, 0.95))


def _stats(draws: np.ndarray) -> dict[str, np.ndarray]:
    """rhat, ess_bulk, ess_tail of (chain, draw, ...) draws, one value per trailing index."""
    cells = draws.reshape(*draws.shape[:2], -1)
    out = {}
    for name, stat in (("rhat", rhat), ("ess_bulk", ess_bulk), ("ess_tail", ess_tail)):
        values = [stat(cells[:, :, i]) for i in range(cells.shape[2])]
        out[name] = np.array(values, dtype=np.float64).reshape(draws.shape[2:])
    return out


def chain_diagnostics(loglik_CI: np.ndarray, mu_CSM: np.ndarray, cells: np.ndarray
                      ) -> dict[str, np.ndarray]:
    """Diagnostics of the post-burn-in log likelihood ``loglik_CI`` (chains, iterations) and
    of mu at ``cells`` (m, 2), ``mu_CSM`` (chains, saved samples, m). Keys: ``KEYS``;
    ``*_loglik`` are scalars, ``*_mu`` have one value per cell (NaN when too few draws)."""
    out: dict[str, np.ndarray] = {"cells": cells}
    for name, draws in (("loglik", loglik_CI), ("mu", mu_CSM)):
        if draws.shape[0] == 1:  # one chain: its two halves (R-hat needs >= 2 chains)
            half = draws.shape[1] // 2
            draws = np.stack([draws[0, :half], draws[0, half:2 * half]])
        if draws.shape[1] < 4:  # at least 4 draws per chain
            stats = {k: np.full(draws.shape[2:], np.nan) for k in ("rhat", "ess_bulk",
                                                                   "ess_tail")}
        else:
            stats = _stats(draws)
        for k, v in stats.items():
            out[f"{k}_{name}"] = v
    return out


def worst_rhat(diagnostics: dict[str, np.ndarray]) -> float:
    """The largest R-hat of the log likelihood and of mu (NaN ignored; NaN if none)."""
    values = np.concatenate([np.ravel(diagnostics.get("rhat_loglik", [])),
                             np.ravel(diagnostics.get("rhat_mu", []))])
    values = values[np.isfinite(values)]
    return float(values.max()) if len(values) else float("nan")


def worst_cell_rhat(diagnostics: dict[str, np.ndarray]) -> float:
    """The largest R-hat over the diagnosed cells of mu (NaN ignored; NaN if none is finite)."""
    rhat_mu = np.asarray(diagnostics["rhat_mu"], dtype=float)
    return float(np.nanmax(rhat_mu)) if np.isfinite(rhat_mu).any() else float("nan")


def convergence_problem(diagnostics: dict[str, np.ndarray], n_chains: int) -> str | None:
    """The first diagnostic of an MCMC fit that misses the criterion, as one phrase naming
    it, its value and (for mu) the cell; None when the fit meets it. NaN misses."""
    if n_chains < MIN_CHAINS:
        return f"{n_chains} chain{'s' * (n_chains != 1)} < {MIN_CHAINS} (R-hat needs chains)"
    r = float(diagnostics["rhat_loglik"])
    if not r <= RHAT_MAX:
        return f"R-hat of the log likelihood {r:.3f} > {RHAT_MAX}"
    rhat_mu = np.asarray(diagnostics["rhat_mu"], dtype=float)
    if len(rhat_mu):
        i = int(np.argmax(np.where(np.isnan(rhat_mu), np.inf, rhat_mu)))
        if not rhat_mu[i] <= RHAT_CELL_MAX:
            row, col = np.asarray(diagnostics["cells"])[i]
            return (f"R-hat of mu at cell (row {row}, column {col}) {rhat_mu[i]:.3f} > "
                    f"{RHAT_CELL_MAX}")
    ess = float(diagnostics["ess_bulk_loglik"])
    if not ess >= ESS_MIN:
        return f"bulk ESS of the log likelihood {ess:.0f} < {ESS_MIN}"
    return None


def warning_line(diagnostics: dict[str, np.ndarray], n_chains: int) -> str | None:
    """A one-line warning when the fit misses the criterion (:func:`convergence_problem`),
    else None."""
    problem = convergence_problem(diagnostics, n_chains)
    if problem is None:
        return None
    return (f"warning: not converged: {problem} (criterion: >= {MIN_CHAINS} chains, "
            f"R-hat <= {RHAT_MAX}, cells <= {RHAT_CELL_MAX}, bulk ESS >= {ESS_MIN}); "
            "run longer or more chains")


def to_inference_data(samples: dict[str, np.ndarray], loglik_CI: np.ndarray,
                      mu_CSM: np.ndarray, n_chains: int):
    """An ``arviz.InferenceData``: posterior factors and mu at the diagnosed cells
    (chain, draw, ...), the post-burn-in log likelihood in ``sample_stats``."""
    az = _arviz()
    posterior = {k: v.reshape(n_chains, -1, *v.shape[1:]) for k, v in samples.items()}
    posterior["mu_cells"] = mu_CSM
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        return az.from_dict(posterior=posterior, sample_stats={"loglik": loglik_CI})
