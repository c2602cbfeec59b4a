"""Estimate the core-hours of a workflow configuration (default: config/paper.yaml).

Lists the fit jobs of a Snakemake dry run, measures on one thread, for each distinct (data
shape, model, K, method, inference) on synthetic counts of that shape, the seconds of one
iteration (Gibbs sweep or CAVI update) and of one EM step of an MCMC chain's start
(:mod:`lppf.start`), and prints core-hours per experiment: iterations x chains x seconds
per iteration + the start's EM steps (:func:`lppf.start.start_schedule` for the job's burn-in,
iterations and shape; once per fit, whose chains share it) x seconds per EM step.
Data shapes of the Enron matrices are those of the papers (overridable); fits dominate the
cost, the other jobs (preprocessing, evaluation, figures) are counted at a few seconds each.
Every private fit is timed with the geometric noise (M1's discrete Gaussian and Skellam
sweeps cost about 1.1 to 1.4 times as much, docs/findings.md).

    python bench/paper_cost.py [--configfile config/paper.yaml] [--iterations 3]
    python bench/paper_cost.py --configfile config/design.yaml --shape e1=120x120 ...
    python bench/paper_cost.py --chains 4 --extend 1   # the convergence criterion's schedules

``--chains N`` adds a second table: every MCMC fit with N chains instead of its configured
number, and ``--extend R`` each chain's R extensions counted as if all were run (each runs on
for twice the last sampling window: ``(iterations - burnin) (2^(R + 1) - 2)`` more sweeps),
the most an extended fit can cost. The seconds are measured once for both tables.

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

import numba
import numpy as np
import pandas as pd

from lppf import start as _start
from lppf.estimators import CommunityModel, PoissonMF
from lppf.fitting import DEFAULTS
from lppf.mechanisms import privatize
from lppf.validation import FitData, fit_data

FIT = re.compile(r"lppf fit \S+ results/\S*?/(?P<exp>[a-z0-9]+)/fits/\S+ --model (?P<model>\S+)"
                 r" --method (?P<method>\S+) --inference (?P<inference>\S+) --components "
                 r"(?P<K>\d+)(?P<options>[^\n]*)")
OPTION = {"iterations": re.compile(r"--iterations (\d+)"), "burnin": re.compile(r"--burnin (\d+)"),
          "chains": re.compile(r"--chains (\d+)")}
SHAPES = {"s1": (50, 50), "s2": (90, 15), "s3": (20, 20), "e1": (161, 161), "e2": (1000, 1400),
          "e3": (5000, 3000), "e4": (161, 161), "v1": (1000, 1000), "m1": (1000, 1400)}
OTHER_JOB_SECONDS = 5.0


def dry_run(configfile: str) -> tuple[pd.DataFrame, int]:
    """Fit jobs of the dry run (one row each: exp, model, method, inference, K, iterations,
    burnin, chains; options a job leaves out take lppf fit's defaults) and the number of jobs."""
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--configfile",
                          configfile], capture_output=True, text=True, check=True).stdout
    rows = []
    for m in FIT.finditer(out):
        row = m.groupdict()
        options = row.pop("options")
        for key, default in (("iterations", DEFAULTS["max_iter"]),
                             ("burnin", DEFAULTS["burnin"]), ("chains", DEFAULTS["n_chains"])):
            found = OPTION[key].search(options)
            row[key] = int(found.group(1)) if found else int(default)
        rows.append(row)
    fits = pd.DataFrame(rows)
    fits["K"] = fits["K"].astype(int)
    total = int(re.search(r"^total\s+(\d+)", out, re.MULTILINE).group(1))
    return fits, total


def _data(shape, model, K, method, seed):
    """Synthetic counts of ``shape`` with mean about 2, privatized at alpha 0.5 (private and
    naive methods)."""
    rng = np.random.default_rng(seed)
    rows, cols = shape
    Theta = rng.gamma(1.0, np.sqrt(2.0 / K), (rows, K))
    Phi = rng.gamma(1.0, np.sqrt(2.0 / K), (K, cols))
    Y = rng.poisson(Theta @ Phi)
    return (Y, None) if method == "nonprivate" else (privatize(Y, 0.5, rng=seed), 0.5)


def seconds_per_iteration(shape, model, K, method, inference, iterations, seed=0):
    """Wall seconds per Gibbs sweep or CAVI update on one thread: the slope between fits of
    ``iterations`` and ``3 * iterations`` iterations, so that per-fit set-up does not count
    (MCMC: one EM restart, measured apart by :func:`seconds_per_em_step`)."""
    Y, alpha = _data(shape, model, K, method, seed)
    cls = CommunityModel if model == "community" else PoissonMF

    def seconds(n):
        kwargs = {"max_iter": n, "tol": 0.0} if inference == "cavi" else {
            "max_iter": n, "burnin": 1, "thin": n - 1}
        est = cls(K, method=method, inference=inference, random_state=seed, threads=1, **kwargs)
        start = time.perf_counter()
        est.fit(Y, alpha=alpha)
        return time.perf_counter() - start

    restarts = _start.RESTARTS  # one EM restart: the start is timed on its own
    _start.RESTARTS = dict.fromkeys(restarts, 1)
    try:
        seconds(iterations)  # compile
        return max(seconds(3 * iterations) - seconds(iterations), 0.0) / (2 * iterations)
    finally:
        _start.RESTARTS = restarts


def seconds_per_em_step(shape, model, K, method, steps, seed=0):
    """Wall seconds of one EM step of an MCMC chain's start (E step over every cell, INNER
    multiplicative M-step updates, the over-relaxation's check), one thread."""
    Y, alpha = _data(shape, model, K, method, seed)
    data = fit_data(model, method, Y, alpha, None, n_components=K)
    rng = np.random.default_rng(seed)
    draw = _start.random_start if model == "pmf" else _start.random_start_community
    A, B = draw(data, K, rng)
    _start.em(data, method, A, B, 1, model)  # compile
    start = time.perf_counter()
    _start.em(data, method, A, B, steps, model)
    return (time.perf_counter() - start) / steps


def _em_steps(model: str, burnin: int, iterations: int, shape: tuple, K: int) -> int:
    """EM steps of one chain's start for this schedule and data shape
    (:func:`lppf.start.start_schedule`, capped by the chain's iterations)."""
    data = FitData(np.zeros(shape), np.full((1, 1), 0.5), np.zeros(shape, bool))
    restarts, steps, refine = _start.start_schedule(data, int(K), int(burnin), int(iterations),
                                                    model)
    return _start.halving_steps(restarts, steps) + refine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", default="config/paper.yaml")
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--shape", action="append", default=[], metavar="EXP=ROWSxCOLS")
    parser.add_argument("--other-job-seconds", type=float, default=OTHER_JOB_SECONDS)
    parser.add_argument("--chains", type=int, default=None,
                        help="chains of every MCMC fit (default: as configured)")
    parser.add_argument("--extend", type=int, default=0,
                        help="extensions counted for every MCMC chain, all run (worst case)")
    args = parser.parse_args()
    numba.set_num_threads(1)
    shapes = dict(SHAPES)
    for text in args.shape:
        exp, _, size = text.partition("=")
        shapes[exp] = tuple(int(n) for n in size.split("x"))
    fits, n_jobs = dry_run(args.configfile)
    keys = ["exp", "model", "K", "method", "inference"]
    sweep, em_step = {}, {}
    for key, _ in fits.groupby(keys):
        exp, model, K, method, inference = key
        sweep[key] = seconds_per_iteration(shapes[exp], model, K, method, inference,
                                           args.iterations)
        em_step[key] = (seconds_per_em_step(shapes[exp], model, K, method, args.iterations)
                        if inference == "mcmc" else 0.0)
    fits["sweep_s"] = [sweep[tuple(r[k] for k in keys)] for _, r in fits.iterrows()]
    # the chains of a fit share one start (lppf.mcmc.community.SHARED_START for the network),
    # capped by the configured iterations
    fits["start_hours"] = [em_step[tuple(r[k] for k in keys)]
                           * _em_steps(r["model"], r["burnin"], r["iterations"],
                                       shapes[r["exp"]], r["K"]) / 3600
                           for _, r in fits.iterrows()]
    # every job, fits included, pays the start-up of one lppf process
    other = n_jobs * args.other_job_seconds / 3600
    print(f"As configured ({args.configfile}):")
    report(fits, None, 0, n_jobs, other)
    if args.chains is not None or args.extend:
        print(f"\nEvery MCMC fit with {args.chains or 'its'} chains and {args.extend} "
              "extension(s), all run:")
        report(fits, args.chains, args.extend, n_jobs, other)
    print("seconds per iteration / per EM step, one thread:")
    for key in sweep:
        print(f"  {' '.join(map(str, key))} {shapes[key[0]][0]}x{shapes[key[0]][1]}: "
              f"{sweep[key]:.4f} / {em_step[key]:.4f}")


def report(fits: pd.DataFrame, chains: int | None, extend: int, n_jobs: int,
           other: float) -> None:
    """Print core-hours per experiment with every MCMC fit run by ``chains`` chains (None: as
    configured) of its iterations plus ``extend`` extensions (``(iterations - burnin)
    (2^(extend + 1) - 2)`` more sweeps each)."""
    mcmc = fits["inference"] == "mcmc"
    n_chains = fits["chains"].where(~mcmc | (chains is None), chains)
    sweeps = fits["iterations"] + mcmc * (fits["iterations"] - fits["burnin"]) * (
        2 ** (extend + 1) - 2)
    hours = fits.assign(sweep_hours=fits["sweep_s"] * sweeps * n_chains / 3600)
    hours["core_hours"] = hours["sweep_hours"] + hours["start_hours"]
    table = hours.groupby("exp").agg(fits=("core_hours", "size"),
                                     sweeps=("sweep_hours", "sum"),
                                     starts=("start_hours", "sum"),
                                     core_hours=("core_hours", "sum"))
    print(table.round(2).to_string())
    print(f"fit jobs: {len(fits)}, all jobs: {n_jobs}; fits: {table.core_hours.sum():.2f} "
          f"core-hours ({table.starts.sum():.2f} of them EM starts), start-up and other "
          f"jobs: about {other:.1f} core-hours")


if __name__ == "__main__":
    main()
