"""The MCMC driver shared by both models: schedule, chains, posterior means, timing.

A model supplies a :class:`Chain`: its state, one Gibbs sweep, the rate ``mu`` and the log
joint of the current state. A chain whose sweep never forms ``mu`` over every cell may leave
it to the end: the posterior mean then comes from the pooled factor samples in one product
(:meth:`Chain.mean_mu`). The driver runs ``n_chains`` independent chains at the same
time on the ``T`` numba threads it is given: ``min(n_chains, T)`` Python threads of
``T // min(n_chains, T)`` numba threads each (the kernels release the GIL). Chain ``c``
draws from the generator of ``SeedSequence(entropy).spawn(c + 1)[c]`` with ``entropy``
drawn once from the caller's generator, so chain c depends neither on how many chains run
nor on how many run at once, and (the kernels' chunks being reseeded) not on the threads.
Chain 0 is built first, alone and on every thread (a model may share its start with the
other chains); the others are built in their own threads. Each chain: ``n_iter`` sweeps
(the first ``burnin`` discarded), a sample saved every ``thin``-th sweep after burn-in.
The samples of all chains are pooled for the posterior means.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numba
import numpy as np

from lppf._numba import concurrent_kernels
from lppf._numba import threads as numba_threads
from lppf._progress import progress_bar
from lppf.diagnostics import (
    MIN_CHAINS,
    chain_diagnostics,
    convergence_problem,
    diagnostic_cells,
    worst_cell_rhat,
)
from lppf.results import FitResult


class Chain(Protocol):
    """One chain of a model's Gibbs sampler (its state lives in the object)."""

    def sweep(self) -> float:
        """One Gibbs iteration in place; the log likelihood of the observed cells."""

    def factors(self) -> dict[str, np.ndarray]:
        """The current factors by name (copied by the driver)."""

    def mu(self) -> np.ndarray | None:
        """The current rate (n_rows, n_cols), every cell; the chain may reuse the array
        (the driver copies what it keeps before the next sweep). None: the sweep did not
        form it, and the driver takes the rate at its cells from :meth:`mu_at` and the
        posterior mean from the factor samples."""

    def mu_at(self, cells: np.ndarray) -> np.ndarray:
        """The current rate at ``cells`` (m, 2) row and column indices, (m,); needed only
        when :meth:`mu` returns None."""

    def counts(self) -> np.ndarray | None:
        """The current true counts (private methods), else None; the chain may update
        them in place (the driver copies what it keeps)."""

    def log_joint(self, mu: np.ndarray | None = None) -> float:
        """log joint probability of the current state (``mu``: :meth:`mu`, if computed)."""

    def mean_mu(self, samples: dict[str, np.ndarray]) -> np.ndarray:
        """The posterior mean of the rate from the pooled factor samples (n_chains * S, ...);
        needed only when :meth:`mu` returns None."""


def n_saved(n_iter: int, burnin: int, thin: int) -> int:
    return (n_iter - burnin) // thin


def chain_rngs(rng: np.random.Generator, n_chains: int) -> list[np.random.Generator]:
    """Independent generators; the c-th does not depend on ``n_chains``."""
    entropy = int(rng.integers(2**63))
    children = np.random.SeedSequence(entropy).spawn(n_chains)
    return [np.random.default_rng(child) for child in children]


def _accumulate(total: np.ndarray | None, X: np.ndarray) -> np.ndarray:
    """``total + X`` in place in a float64 array of its own (``X`` is the chain's, which
    the next sweep overwrites)."""
    if total is None:
        return X.astype(np.float64)
    total += X
    return total


class SavedSamples:
    """What a chain keeps of ``S`` saved states: factors (S, ...) (written into ``factors``,
    e.g. the chain's rows of the pooled arrays, else allocated at the first save), log
    joints, mu at ``cells`` (S, m) and the sums of mu (None if the chain does not form mu)
    and of the true counts."""

    def __init__(self, S: int, cells: np.ndarray, factors: dict | None = None):
        self.cells, self.s, self.S = cells, 0, S
        self.factors: dict[str, np.ndarray] = factors or {}
        self.log_joint = np.empty(S)
        self.mu_cells = np.empty((S, len(cells)))
        self.mu_sum = self.y_sum = None

    def add(self, chain: Chain) -> None:
        """Save the chain's current state."""
        for name, value in chain.factors().items():
            if name not in self.factors:
                self.factors[name] = np.empty((self.S, *np.shape(value)), np.result_type(value))
            self.factors[name][self.s] = value
        mu = chain.mu()
        if mu is None:
            self.mu_cells[self.s] = chain.mu_at(self.cells)
        else:
            self.mu_sum = _accumulate(self.mu_sum, mu)
            self.mu_cells[self.s] = mu[self.cells[:, 0], self.cells[:, 1]]
        y = chain.counts()
        if y is not None:
            self.y_sum = _accumulate(self.y_sum, y)
        self.log_joint[self.s] = chain.log_joint(mu)
        self.s += 1


class Stopped(Exception):
    """A chain stopped because another failed or the fit was interrupted."""


def run_chain(chain: Chain, n_iter: int, burnin: int, thin: int, cells: np.ndarray,
              bar, factors: dict | None = None, stop: threading.Event | None = None) -> dict:
    """Run one chain; return its saved factors (S, ...) (written into ``factors`` if given),
    log joints (S,), loglik trace, sums of mu and of the true counts over saved samples, mu
    at ``cells`` (S, m) and seconds per phase. Raises :class:`Stopped` before a sweep once
    ``stop`` is set."""
    saved = SavedSamples(n_saved(n_iter, burnin, thin), cells, factors)
    loglik = np.empty(n_iter)
    elapsed = {"burnin": 0.0, "sampling": 0.0}
    start = time.perf_counter()
    for it in range(n_iter):
        if stop is not None and stop.is_set():
            raise Stopped
        loglik[it] = chain.sweep()
        if it + 1 == burnin:
            elapsed["burnin"] = time.perf_counter() - start
        if it >= burnin and (it + 1 - burnin) % thin == 0:
            saved.add(chain)
        bar.update()
    elapsed["sampling"] = time.perf_counter() - start - elapsed["burnin"]
    return {"samples": saved.factors, "log_joint": saved.log_joint, "loglik": loglik,
            "mu_sum": saved.mu_sum, "y_sum": saved.y_sum, "elapsed": elapsed,
            "mu_cells": saved.mu_cells}


def run_chains(make_chain: Callable[[np.random.Generator], tuple[Chain, dict]], *,
               n_chains: int, n_iter: int, burnin: int, thin: int, rng: np.random.Generator,
               mask: np.ndarray, progress: bool, desc: str, extend: int = 0) -> FitResult:
    """Run ``n_chains`` chains built by ``make_chain(rng) -> (chain, start info)`` and pool them.

    ``mu_hat`` and ``y_hat`` (private methods; held-out cells get ``mu_hat``) are means over
    the saved samples of all chains (:meth:`Chain.mean_mu` for chains whose :meth:`Chain.mu`
    is None); ``samples`` (n_chains * S, ...) stacks the chains in
    order; ``trace["loglik"]`` is (n_iter,) for one chain, (n_chains, n_iter) for several;
    ``elapsed`` sums the seconds of ``burnin`` (the starts included) and ``sampling`` over
    chains (chains that run at the same time overlap: the sum is not wall time); ``extra``
    holds the start information of each chain (``start_*``, one row per chain when there
    are several), ``n_chains``, the schedule run (``burnin``, ``thin``, ``extended``) and
    the diagnostics of every window run (``window_rhat``, ``window_ess``,
    ``window_rhat_mu``: the schedule's, then each extension's; :func:`_window_record`);
    ``diagnostics`` R-hat and ESS (:func:`lppf.diagnostics.chain_diagnostics`) and
    ``mu_cells`` (n_chains, S, m), mu at the diagnosed cells.

    Extension, a warm-up sized by the diagnostics: while the chains (at least ``MIN_CHAINS``)
    miss the convergence criterion (:func:`lppf.diagnostics.convergence_problem`), up to
    ``extend`` times, every chain runs on for twice the last sampling window with twice the
    thinning (the same S saved samples), and all sweeps before count as burn-in: the k-th
    extension ends after ``n_iter + (n_iter - burnin) (2^(k+1) - 2)`` sweeps. Only the last
    window's samples are kept and diagnosed; a fit that meets the criterion stops there.
    """
    S = n_saved(n_iter, burnin, thin)
    if S < 1:
        raise ValueError(f"no sample to save: n_iter - burnin = {n_iter - burnin} < thin = {thin}")
    cells = diagnostic_cells(mask)
    rngs = chain_rngs(rng, n_chains)

    stop = threading.Event()  # set when a chain fails or the fit is interrupted

    def one(c: int, per_chain: int, chain_info, schedule) -> tuple[dict, dict, Chain]:
        if stop.is_set():
            raise Stopped
        with numba_threads(per_chain):  # numba's thread count is per (Python) thread
            tic = time.perf_counter()
            chain, info = chain_info or make_chain(rngs[c])
            made = time.perf_counter() - tic
            rows = {k: v[c * S:(c + 1) * S] for k, v in samples.items()}
            run = run_chain(chain, *schedule, cells, bar, rows, stop)
        run["elapsed"]["burnin"] += made
        return run, info, chain

    def run_all(chain_infos, schedule) -> list[tuple[dict, dict, Chain]]:
        workers = min(n_chains, numba.get_num_threads()) if concurrent_kernels() else 1
        per_chain = numba.get_num_threads() // workers
        jobs = [(c, per_chain, chain_infos[c], schedule) for c in range(n_chains)]
        if workers == 1:
            return [one(*job) for job in jobs]
        with ThreadPoolExecutor(workers) as pool:
            try:
                return list(pool.map(lambda job: one(*job), jobs))
            except BaseException:  # Ctrl-C or a failed chain: the others stop too
                stop.set()
                pool.shutdown(wait=False, cancel_futures=True)
                raise

    with progress_bar(n_iter * n_chains, progress, desc) as bar:
        tic = time.perf_counter()
        first = make_chain(rngs[0])  # alone and first: a model may share chain 0's start
        made = time.perf_counter() - tic
        samples = {k: np.empty((n_chains * S, *np.shape(v)), np.result_type(v))
                   for k, v in first[0].factors().items()}  # the pooled samples, filled in place
        out = run_all([first] + [None] * (n_chains - 1), (n_iter, burnin, thin))
        out[0][0]["elapsed"]["burnin"] += made
        starts = [i for _, i, _ in out]
        traces = [[r["loglik"]] for r, _, _ in out]
        spent = sum(r["elapsed"]["burnin"] for r, _, _ in out)  # with the rounds before the last
        window, step, extended = n_iter - burnin, thin, 0
        diagnostics = _diagnose(out, burnin, cells)
        windows = [diagnostics]
        while (extended < extend and n_chains >= MIN_CHAINS
               and convergence_problem(diagnostics, n_chains) is not None):
            extended += 1
            window, step = 2 * window, 2 * step
            spent += sum(r["elapsed"]["sampling"] for r, _, _ in out)
            bar.grow(window * n_chains)
            out = run_all([(c, i) for _, i, c in out], (window, 0, step))
            for trace, (r, _, _) in zip(traces, out, strict=True):
                trace.append(r["loglik"])
            diagnostics = _diagnose(out, 0, cells)
            windows.append(diagnostics)
    runs, chain = [r for r, _, _ in out], out[-1][2]
    loglik = np.stack([np.concatenate(t) for t in traces])
    total = S * n_chains
    if runs[0]["mu_sum"] is None:
        if not hasattr(chain, "mean_mu"):
            raise TypeError("run_chains: the chains form no mu and have no mean_mu")
        mu_hat = chain.mean_mu(samples)
    else:
        mu_hat = sum(r["mu_sum"] for r in runs) / total
    y_hat = None
    if runs[0]["y_sum"] is not None:
        y_hat = np.where(mask, mu_hat, sum(r["y_sum"] for r in runs) / total)
    extra = {f"start_{k}": (np.asarray(starts[0][k]) if n_chains == 1 else
                                 np.stack([np.asarray(s[k]) for s in starts]))
             for k in starts[0]}
    n_total = loglik.shape[1]
    extra.update(n_chains=n_chains, burnin=n_total - window, thin=step, extended=extended,
                 **_window_record(windows))
    elapsed = {"burnin": spent, "sampling": sum(r["elapsed"]["sampling"] for r in runs)}
    return FitResult(
        mu_hat=mu_hat,
        factors={k: v.mean(axis=0) for k, v in samples.items()},
        n_iter=n_total, elapsed=elapsed, y_hat=y_hat, samples=samples,
        log_joint=np.concatenate([r["log_joint"] for r in runs]),
        trace={"loglik": loglik[0] if n_chains == 1 else loglik}, extra=extra,
        diagnostics=diagnostics,
    )


def _window_record(windows: list[dict]) -> dict[str, np.ndarray]:
    """Per sampling window run (the schedule's, then each extension's): the R-hat, bulk ESS
    of the log likelihood and the worst R-hat of the diagnosed cells (NaN without one)."""
    return {"window_rhat": np.array([float(d["rhat_loglik"]) for d in windows]),
            "window_ess": np.array([float(d["ess_bulk_loglik"]) for d in windows]),
            "window_rhat_mu": np.array([worst_cell_rhat(d) for d in windows])}


def _diagnose(out: list[tuple[dict, dict, Chain]], burnin: int, cells: np.ndarray) -> dict:
    """:func:`lppf.diagnostics.chain_diagnostics` of the chains' last runs ``out`` (their
    log likelihood after ``burnin``) with ``mu_cells`` (n_chains, S, m)."""
    mu_cells = np.stack([r["mu_cells"] for r, _, _ in out])
    loglik = np.stack([r["loglik"][burnin:] for r, _, _ in out])
    return {**chain_diagnostics(loglik, mu_cells, cells), "mu_cells": mu_cells}
