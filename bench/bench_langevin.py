"""The Langevin moves of ``private-collapsed`` against the plain Gibbs sweep (stdout).

``python bench/bench_langevin.py FILE MODEL K ITER BURNIN THIN A0 B0 [SEED] [FILE ...]``
(groups of 9 arguments, SEED included, after the first): for each privatized file, one fit
with ``sampler="gibbs"`` and one with ``"auto"`` (the moves when the noise hides most of the
counts), 4 chains from the same seed, one thread, one after the other in this process. Per
fit: R-hat and bulk ESS of the log likelihood, the worst diagnosed cell's R-hat and the
smallest cell ESS, seconds of the whole fit (start included), ESS of the log likelihood and
of the slowest cell per second, whether it meets the convergence criterion, and the moves'
acceptance.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from lppf.diagnostics import convergence_problem
from lppf.estimators import CommunityModel, PoissonMF
from lppf.io import load_npz

PARAMS = ("alpha", "sigma", "mu")  # the noise parameter a privatized file carries


def run(path: str, model: str, K: int, n_iter: int, burnin: int, thin: int, a0: float,
        b0: float, seed: int, sampler: str) -> str:
    z = load_npz(path)
    mechanism = str(z.get("mechanism", "geometric"))
    param = next(z[k] for k in PARAMS if k in z)
    cls = CommunityModel if model == "community" else PoissonMF
    est = cls(K, method="private-collapsed", a0=a0, b0=b0, max_iter=n_iter, burnin=burnin,
              thin=thin, n_chains=4, random_state=seed, threads=1, sampler=sampler,
              mechanism=mechanism)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(z["Y_noisy"], alpha=param)
    seconds = time.perf_counter() - t0
    diag, extra = est.result_.diagnostics, est.result_.extra
    ess, cell_ess = float(diag["ess_bulk_loglik"]), float(np.nanmin(diag["ess_bulk_mu"]))
    accept = extra.get("langevin_acceptance")
    return (f"{sampler:5s} rhat={float(diag['rhat_loglik']):.3f} ess={ess:.0f} "
            f"cell_rhat={float(np.nanmax(diag['rhat_mu'])):.3f} cell_ess={cell_ess:.0f} "
            f"seconds={seconds:.1f} ess/s={ess / seconds:.1f} cell_ess/s={cell_ess / seconds:.1f} "
            f"met={convergence_problem(diag, 4) is None} "
            f"acceptance={'-' if accept is None else np.round(accept, 2).tolist()}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 8:
        args.append("0")
    for i in range(0, len(args), 9):
        path, model, K, n_iter, burnin, thin, a0, b0, seed = args[i:i + 9]
        print(path, flush=True)
        for sampler in ("gibbs", "auto"):
            print("  " + run(path, model, int(K), int(n_iter), int(burnin), int(thin),
                             float(a0), float(b0), int(seed), sampler), flush=True)
