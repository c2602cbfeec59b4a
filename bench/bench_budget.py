"""The least CPU time a run's MCMC fits could have met the convergence criterion in, at the
speed and mixing their chains showed (stdout).

    snakemake --cores 2                          # the default run, for its fits
    python bench/bench_budget.py results [--cores 2]

For every MCMC fit under ``RESULTS/*/fits``: the seconds its chains took (burn-in with the
start and any earlier windows, plus sampling; summed over chains), and a floor: its
schedule's burn-in sweeps at the fit's cost per chain-sweep, plus the sampling sweeps its last
window would have needed for a bulk ESS of the log likelihood of ``ESS_MIN``
(window x ESS_MIN / ESS, at the ESS per sweep that window showed), without the start. A fit
that missed the criterion counts with the seconds it took, which were not enough. The floor
ignores the cells' R-hat, which needs more draws than the log likelihood's ESS in most fits,
so it is a lower bound on the CPU time of any schedule for these chains. Per experiment and
in all; the last line divides the sums by ``--cores``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from lppf.diagnostics import ESS_MIN, convergence_problem


def fit_floor(results: Path, path: Path) -> dict:
    """Experiment, seconds, floor seconds and whether the fit met the criterion."""
    with np.load(path) as z:
        config = json.loads(str(z["config"]))
        chains = int(z["extra_n_chains"])
        window = z["trace_loglik"].shape[-1] - int(z["extra_burnin"])
        burnin, sampling = float(z["elapsed_burnin"]), float(z["elapsed_sampling"])
        diagnostics = {k: z[f"diag_{k}"] for k in ("rhat_loglik", "ess_bulk_loglik", "rhat_mu")}
    diagnostics["cells"] = np.zeros((len(diagnostics["rhat_mu"]), 2), np.int64)
    converged = convergence_problem(diagnostics, chains) is None
    per_sweep = sampling / (chains * window)
    needed = window * ESS_MIN / float(diagnostics["ess_bulk_loglik"])
    floor = (config["burnin"] + needed) * chains * per_sweep
    return {"experiment": path.relative_to(results).parts[0], "seconds": burnin + sampling,
            "floor": floor if converged else burnin + sampling, "converged": converged}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    files = sorted(args.results.glob("*/fits/**/*-mcmc*.npz"))
    if not files:
        raise SystemExit(f"{args.results}: no MCMC fit files under */fits")
    rows = pd.DataFrame([fit_floor(args.results, f) for f in files])
    table = rows.groupby("experiment").agg(fits=("seconds", "size"), converged=("converged", "sum"),
                                           seconds=("seconds", "sum"), floor=("floor", "sum"))
    table.loc["all"] = table.sum()
    print(table.round(0).astype(int).to_string())
    print(f"on {args.cores} cores: {table.loc['all', 'seconds'] / args.cores / 60:.1f} min of "
          f"fits as run, at least {table.loc['all', 'floor'] / args.cores / 60:.1f} min")


if __name__ == "__main__":
    main()
