"""Convergence of the MCMC fits of a workflow run, per experiment and method (stdout table).

For every ``results/<exp>/fits/**/*mcmc*.npz``: chains, split R-hat of the log likelihood and
the worst diagnosed cell, bulk ESS of the log likelihood, ESS per post-burn-in sweep of one
chain, ESS per second of the fit, and whether it meets the criterion
(:func:`lppf.diagnostics.convergence_problem`). ``python bench/bench_convergence.py [results]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from lppf.diagnostics import convergence_problem


def row(path: Path) -> dict:
    with np.load(path) as z:
        cfg = json.loads(str(z["config"]))
        diag = {k[5:]: z[k] for k in z.files if k.startswith("diag_")}
        chains = int(z["extra_n_chains"])
        sweeps = chains * (int(cfg["max_iter"]) - int(cfg["burnin"]))
        ess = float(diag["ess_bulk_loglik"])
        return {"experiment": path.relative_to(root).parts[0], "method": cfg["method"],
                "fix": "fix" in path.name, "chains": chains,
                "rhat_loglik": float(diag["rhat_loglik"]),
                "rhat_cell": float(np.nanmax(diag["rhat_mu"])), "ess": ess,
                "ess_per_sweep": ess / sweeps, "seconds": float(z["elapsed_seconds"]),
                "ess_per_s": ess / float(z["elapsed_seconds"]),
                "met": convergence_problem(diag, chains) is None}


root = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
df = pd.DataFrame([row(p) for p in sorted(root.glob("*/fits/**/*mcmc*.npz"))])
table = df.groupby(["experiment", "method", "fix"]).agg(
    fits=("met", "size"), met=("met", "sum"), chains=("chains", "median"),
    rhat_loglik=("rhat_loglik", "median"), rhat_cell=("rhat_cell", "median"),
    ess=("ess", "median"), ess_per_sweep=("ess_per_sweep", "median"),
    seconds=("seconds", "median"), ess_per_s=("ess_per_s", "median"))
print(table.to_string(float_format=lambda x: f"{x:.3g}"))
print(f"\n{int(df['met'].sum())} of {len(df)} MCMC fits meet the criterion; "
      f"R-hat(loglik) > 1.01 in {int((df['rhat_loglik'] > 1.01).sum())}, "
      f"worst cell > 1.02 in {int((df['rhat_cell'] > 1.02).sum())}, "
      f"ESS < 400 in {int((df['ess'] < 400).sum())}")
