"""Gamma factors, the CAVI iteration, convergence and restarts, shared by both models."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from lppf._numba import threads as numba_threads
from lppf._progress import progress_bar
from lppf.cavi._local import make_local
from lppf.expectations import (
    TINY,
    Moments,
    collapsed_local,
    gamma_elbo,
    gamma_moments,
    point_moments,
)
from lppf.results import FitResult
from lppf.validation import FitData

INIT_SHAPE = 2.0  # shape of the random initial q factors; their means are set from the data
EM_STEPS = 100  # EM steps of the observed data that give each restart its initial means
MEAN_FLOOR = 1e-10  # initial q means below this are lifted (the rates stay finite when squared)


class GammaModel:
    """Mean-field gamma factors q(x) = Gamma(shape, rate) with prior Gamma(a0, b0).

    Subclasses set ``names`` (factor names), ``slot_names`` and implement ``slots``,
    ``rate_sum``, ``alloc_stats``, ``update``, ``mean_mu``, ``var_mu`` and
    ``expected_rate_total``. Factors in ``fix`` are point masses and never updated.
    """

    names: tuple[str, ...] = ()
    slot_names: tuple[str, ...] = ()

    def __init__(self, shapes: dict[str, tuple[int, int]], scale: float, a0: float, b0: float,
                 fix: dict[str, np.ndarray], rng: np.random.Generator):
        self.a0, self.b0 = a0, b0
        self.fixed = {k: np.asarray(v, dtype=np.float64) for k, v in fix.items()}
        self.shape: dict[str, np.ndarray] = {}
        self.rate: dict[str, np.ndarray] = {}
        for name, dims in shapes.items():
            if name not in self.fixed:
                mean = scale * rng.uniform(0.5, 1.5, size=dims)
                self.shape[name] = np.full(dims, INIT_SHAPE)
                self.rate[name] = INIT_SHAPE / mean

    def moments(self) -> dict[str, Moments]:
        return {n: (point_moments(self.fixed[n]) if n in self.fixed
                    else gamma_moments(self.shape[n], self.rate[n])) for n in self.names}

    def set_factor(self, name: str, stats: np.ndarray, rate_sum: np.ndarray) -> None:
        """q(name) = Gamma(a0 + allocated counts, b0 + expected exposure)."""
        if name not in self.fixed:
            self.shape[name] = self.a0 + stats
            self.rate[name] = self.b0 + np.broadcast_to(rate_sum, stats.shape)

    def prior_elbo(self, m: dict[str, Moments]) -> float:
        return sum(gamma_elbo(self.shape[n], self.rate[n], self.a0, self.b0, m[n])
                   for n in self.shape)

    def variational(self) -> dict[str, np.ndarray]:
        out = {}
        for n in self.shape:
            out[f"{n}_shape"] = self.shape[n]
            out[f"{n}_rate"] = self.rate[n]
        return out


@dataclass
class Run:
    """One initialization run to convergence."""

    model: GammaModel
    local: object
    n_iter: int = 0
    converged: bool = False
    elbo: list[float] = field(default_factory=list)
    change: list[float] = field(default_factory=list)
    objective: float = -math.inf


def relative_change(new: np.ndarray, old: np.ndarray) -> float:
    """sum |new - old| / sum |old|."""
    return float(np.abs(new - old).sum() / max(float(np.abs(old).sum()), TINY))


def iterate(model: GammaModel, local, max_iter: int, tol: float, bar=None) -> Run:
    """local -> globals -> local ... until mu_hat and the ELBO (where computable) change by
    less than ``tol`` (relative) in one iteration; ``tol = 0`` runs exactly ``max_iter``."""
    run = Run(model, local)
    m = model.moments()
    mu = model.mean_mu(m)
    R = local.refresh(model, m, mu)
    elbo_old = math.nan
    for _ in range(max_iter):
        model.update(model.alloc_stats(R, m))
        m = model.moments()
        mu_new = model.mean_mu(m)
        R = local.refresh(model, m, mu_new)
        elbo = local.data_elbo(model, m) + model.prior_elbo(m)
        change = relative_change(mu_new, mu)
        run.elbo.append(elbo)
        run.change.append(change)
        run.n_iter += 1
        if bar is not None:
            bar.update()
            bar.set_postfix(change=f"{change:.2e}", elbo=f"{elbo:.6g}", refresh=False)
        elbo_steady = math.isnan(elbo) or abs(elbo - elbo_old) < tol * abs(elbo)
        mu, elbo_old = mu_new, elbo
        if change < tol and elbo_steady:
            run.converged = True
            break
    return run


def plugin_loglik(Y: np.ndarray, alpha: np.ndarray, mask: np.ndarray, mu: np.ndarray) -> float:
    """ln p(y~ | mu) summed over unmasked cells (y ~ Pois(mu), y~ = y + 2Geo(alpha))."""
    log_z = collapsed_local(Y, np.broadcast_to(alpha, Y.shape), mu, mask)[1]
    return log_z - float(mu[~mask].sum())


def em_start(model: GammaModel, data: FitData, method: str, n_components: int,
             rng: np.random.Generator) -> None:
    """Set the means of the free q factors (shape ``INIT_SHAPE``) to an EM fit of the
    observed data from a random start (:mod:`lppf.start`, ``EM_STEPS`` steps): from
    random starts CAVI settles in the same poor local optima as the Gibbs chains."""
    from lppf import start as _start

    kind = "pmf" if "phi" in model.names else "community"
    draw = _start.random_start if kind == "pmf" else _start.random_start_community
    A, B = draw(data, n_components, rng)
    _start.em(data, method, A, B, EM_STEPS, kind)
    for name, mean in zip(model.names, (A, B), strict=True):
        if name not in model.fixed:
            model.shape[name] = np.full(mean.shape, INIT_SHAPE)
            model.rate[name] = INIT_SHAPE / np.maximum(mean, MEAN_FLOOR)


def fit(model_cls, data: FitData, *, method: str, n_components: int, a0: float, b0: float,
        max_iter: int, tol: float, restarts: int, rng: np.random.Generator,
        threads: int | None, progress: bool) -> FitResult:
    """Run ``restarts`` random initializations and keep the best final objective: the ELBO,
    or for ``private`` (no tractable ELBO) the observed-data log likelihood at mu_hat.

    Every run starts from an EM fit of the observed data (:func:`em_start`, timed as
    "warmup"); from random starts CAVI often settles in poor local optima.
    Elapsed seconds are summed over restarts per phase ("warmup", "cavi").
    """
    Y = np.maximum(data.Y, 0) if method == "naive" else data.Y
    alpha = np.ascontiguousarray(data.alpha, dtype=np.float64)
    mask = model_cls.full_mask(data.mask)
    runs, seconds = [], {"warmup": 0.0, "cavi": 0.0}
    with numba_threads(threads), progress_bar(max_iter * restarts, progress,
                                              f"cavi {method}") as bar:
        for _ in range(restarts):
            start = time.perf_counter()
            model = model_cls(Y, mask, n_components, a0, b0, data.fix, rng)
            em_start(model, FitData(data.Y, alpha, mask, data.fix, data.mechanism), method,
                     n_components, rng)
            seconds["warmup"] += time.perf_counter() - start
            start = time.perf_counter()
            local = make_local(method, Y, alpha, mask, data.mechanism)
            run = iterate(model, local, max_iter, tol, bar)
            run.objective = (run.elbo[-1] if run.local.has_elbo else
                             plugin_loglik(data.Y, alpha, mask, model.mean_mu(model.moments())))
            runs.append(run)
            seconds["cavi"] += time.perf_counter() - start
    best = max(runs, key=lambda r: r.objective)
    return _result(best, runs, mask, seconds, 0)


def _result(run: Run, runs: list[Run], mask: np.ndarray, seconds: dict[str, float],
            warmup: int) -> FitResult:
    m = run.model.moments()
    mu_hat = run.model.mean_mu(m)
    y_hat = run.local.y_hat
    if y_hat is not None:
        y_hat = np.where(mask, mu_hat, y_hat)
    variational = run.model.variational()
    if hasattr(run.local, "variational"):
        variational.update(run.local.variational())
    return FitResult(
        mu_hat=mu_hat,
        factors={n: run.model.fixed.get(n, m[n].mean) for n in run.model.names},
        n_iter=run.n_iter,
        elapsed=seconds,
        y_hat=y_hat,
        trace={"elbo": np.asarray(run.elbo), "change": np.asarray(run.change)},
        variational=variational,
        extra={"converged": run.converged, "warmup_iter": warmup,
               "objective": [r.objective for r in runs],  # every restart, to show the spread
               "objective_kind": "elbo" if run.local.has_elbo else "loglik"},
    )
