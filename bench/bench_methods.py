"""Mixing of methods and priors side by side on one privatized file (stdout, one line each).

``python bench/bench_methods.py FILE MODEL K ITER BURNIN A0,B0[;A0,B0...] METHOD[,METHOD...]
[SEED]``: 4 chains per fit from the same seed, one fit per method and prior, one process;
split R-hat of the log likelihood and of the worst diagnosed cell, bulk ESS of the log
likelihood, seconds of the whole fit (start included) and ESS per second. ``naive`` fits
``max(y~, 0)``; a ``Y`` file (true counts) fits ``nonprivate``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from lppf.diagnostics import convergence_problem
from lppf.estimators import CommunityModel, PoissonMF
from lppf.io import load_npz


def run(Y: np.ndarray, alpha, model: str, method: str, K: int, n_iter: int, burnin: int,
        a0: float, b0: float, seed: int, sampler: str = "auto") -> str:
    cls = CommunityModel if model == "community" else PoissonMF
    est = cls(K, method=method, a0=a0, b0=b0, max_iter=n_iter, burnin=burnin,
              thin=max(1, (n_iter - burnin) // 100), n_chains=4, random_state=seed, threads=1,
              sampler=sampler)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Y, alpha=None if method == "nonprivate" else alpha)
    seconds = time.perf_counter() - t0
    diag = est.result_.diagnostics
    ess = float(diag["ess_bulk_loglik"])
    met = convergence_problem(diag, 4) is None
    return (f"{method:18s} a0={a0:<4g} b0={b0:<4g} rhat_loglik={float(diag['rhat_loglik']):.3f} "
            f"rhat_cell={float(np.nanmax(diag['rhat_mu'])):.3f} ess={ess:.0f} "
            f"seconds={seconds:.1f} ess_per_s={ess / seconds:.2f} met={met}")


if __name__ == "__main__":
    path, model, K, n_iter, burnin, priors, methods = sys.argv[1:8]
    seed = int(sys.argv[8]) if len(sys.argv) > 8 else 0
    z = load_npz(path)
    Y = z["Y_noisy"] if "Y_noisy" in z else z["Y"]
    alpha = z.get("alpha")
    for prior in priors.split(";"):
        a0, b0 = (float(x) for x in prior.split(","))
        for method in methods.split(","):
            print(run(Y, alpha, model, method, int(K), int(n_iter), int(burnin), a0, b0, seed),
                  flush=True)
