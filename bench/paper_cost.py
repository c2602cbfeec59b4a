"""Estimate the core-hours of a workflow configuration (default: config/paper.yaml).

Lists the fit jobs of a Snakemake dry run, measures seconds per iteration (one thread) of
each distinct (data shape, model, K, method, inference) on synthetic counts of that shape,
and prints core-hours per experiment: measured seconds per iteration x iterations. Data
shapes of the Enron matrices are those of the papers (overridable); fits dominate the cost,
the other jobs (preprocessing, evaluation, figures) are counted at a few seconds each.

    python bench/paper_cost.py [--configfile config/paper.yaml] [--iterations 3]
    python bench/paper_cost.py --configfile config/design.yaml --shape e1=120x120 ...

``--shape EXP=ROWSxCOLS`` (repeatable) replaces an experiment's data shape, e.g. the
synthetic maildir's matrices of config/design.yaml. Core-hours / cores is the wall time of the
fits on that many cores when they keep every core busy.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pandas as pd

from lppf.estimators import CommunityModel, PoissonMF
from lppf.mechanisms import privatize

FIT = re.compile(r"lppf fit \S+ results/\S*?/(?P<exp>[a-z0-9]+)/fits/\S+ --model (?P<model>\S+)"
                 r" --method (?P<method>\S+) --inference (?P<inference>\S+) --components "
                 r"(?P<K>\d+).*?--iterations (?P<iterations>\d+)")
SHAPES = {"s1": (50, 50), "s2": (90, 15), "s3": (20, 20), "e1": (161, 161), "e2": (1000, 1400),
          "e3": (5000, 3000), "e4": (161, 161), "v1": (1000, 1000)}
OTHER_JOB_SECONDS = 5.0


def dry_run(configfile: str) -> tuple[pd.DataFrame, int]:
    """Fit jobs of the dry run (one row each) and the total number of jobs."""
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--configfile",
                          configfile], capture_output=True, text=True, check=True).stdout
    fits = pd.DataFrame([m.groupdict() for m in FIT.finditer(out)])
    fits[["K", "iterations"]] = fits[["K", "iterations"]].astype(int)
    total = int(re.search(r"^total\s+(\d+)", out, re.MULTILINE).group(1))
    return fits, total


def seconds_per_iteration(shape, model, K, method, inference, iterations, seed=0):
    """Wall seconds per iteration on one thread, synthetic counts with mean about 2: the slope
    between fits of ``iterations`` and ``3 * iterations`` iterations, so that per-fit set-up
    (initialization, outputs) does not count."""
    rng = np.random.default_rng(seed)
    rows, cols = shape
    Theta = rng.gamma(1.0, np.sqrt(2.0 / K), (rows, K))
    Phi = rng.gamma(1.0, np.sqrt(2.0 / K), (K, cols))
    Y = rng.poisson(Theta @ Phi)
    data = Y if method == "nonprivate" else privatize(Y, 0.5, rng=seed)
    alpha = None if method == "nonprivate" else 0.5
    cls = CommunityModel if model == "community" else PoissonMF

    def seconds(n):
        # one saved sample and no naive warm-up (burnin 1): the cost of the sweeps
        kwargs = {"max_iter": n, "tol": 0.0} if inference == "cavi" else {
            "max_iter": n, "burnin": 1, "thin": n - 1}
        est = cls(K, method=method, inference=inference, random_state=seed, threads=1, **kwargs)
        start = time.perf_counter()
        est.fit(data, alpha=alpha)
        return time.perf_counter() - start

    seconds(iterations)  # compile
    return max(seconds(3 * iterations) - seconds(iterations), 0.0) / (2 * iterations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", default="config/paper.yaml")
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--shape", action="append", default=[], metavar="EXP=ROWSxCOLS")
    parser.add_argument("--other-job-seconds", type=float, default=OTHER_JOB_SECONDS)
    args = parser.parse_args()
    shapes = dict(SHAPES)
    for text in args.shape:
        exp, _, size = text.partition("=")
        shapes[exp] = tuple(int(n) for n in size.split("x"))
    fits, n_jobs = dry_run(args.configfile)
    keys = ["exp", "model", "K", "method", "inference"]
    rates = {}
    for key, _ in fits.groupby(keys):
        exp, model, K, method, inference = key
        shape = shapes[exp]
        rates[key] = seconds_per_iteration(shape, model, K, method, inference, args.iterations)
    fits["core_hours"] = [rates[tuple(r[k] for k in keys)] * r["iterations"] / 3600
                          for _, r in fits.iterrows()]
    table = fits.groupby("exp").agg(fits=("core_hours", "size"),
                                    core_hours=("core_hours", "sum"))
    # every job, fits included, pays the start-up of one lppf process
    other = n_jobs * args.other_job_seconds / 3600
    print(table.round(1).to_string())
    print(f"fit jobs: {len(fits)}, all jobs: {n_jobs}; fits: {table.core_hours.sum():.2f} "
          f"core-hours, start-up and other jobs: about {other:.1f} core-hours")
    print(Counter(fits["method"]))


if __name__ == "__main__":
    main()
