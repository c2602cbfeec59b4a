"""Wall time of several chains of one fit: run in turn on every thread, or at the same time.

    python bench/bench_chains.py                         # light and heavy-a, 2 chains, 2 threads
    python bench/bench_chains.py --cases mean50 --chains 4 --iterations 20

Each case (:mod:`bench_speed`'s cases, 1000 x 1000, K = 50 by default) runs
:func:`lppf.mcmc._driver.run_chains` on ``--chains`` PMF chains from a random start
(:func:`lppf.mcmc.pmf.initial_state`: the start is not timed), ``--iterations`` sweeps each
with a sample saved every 5th, in two ways with the same ``--threads`` numba threads:
``in turn`` (one chain after another, each on every thread, as before the driver ran chains
at the same time) and ``at once`` (the driver's default: each chain in its own Python
thread on its share of the threads). Prints the best of ``--repeats`` wall seconds per
chain-sweep, the ratio, and the median CPU seconds of the process per chain-sweep (what
the chains cost on a busy machine, where wall time shows little of the overlap); the
pooled results of the two ways are checked to be identical.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kernels import make_case
from bench_speed import CASES

from lppf._numba import blas_single
from lppf._numba import threads as numba_threads
from lppf.mcmc import _driver
from lppf.mcmc.pmf import PMFChain, initial_state


def one_run(data, method: str, k: int, n_chains: int, n_iter: int, at_once: bool):
    """(wall seconds, CPU seconds of the process, FitResult) of ``n_chains`` chains of
    ``n_iter`` sweeps."""

    def make_chain(rng):
        return PMFChain(data, initial_state(data, method, k, rng), 0.1, 1.0, rng), {}

    with mock.patch.object(_driver, "concurrent_kernels", lambda: at_once), blas_single():
        tic, cpu = time.perf_counter(), time.process_time()
        fit = _driver.run_chains(make_chain, n_chains=n_chains, n_iter=n_iter, burnin=0,
                                 thin=5, rng=np.random.default_rng(0), mask=data.mask,
                                 progress=False, desc="")
        return time.perf_counter() - tic, time.process_time() - cpu, fit


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=["light", "heavy-a"])
    parser.add_argument("--method", default="private",
                        choices=("private", "private-collapsed", "naive"))
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    k, n = args.components, args.chains * args.iterations
    print(f"{args.method}, {args.chains} chains x {args.iterations} sweeps, "
          f"{args.threads} threads, {args.size} x {args.size}, K = {k}")
    print("| case | in turn s/sweep | at once s/sweep | speed-up | CPU s/sweep in turn | "
          "at once |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with numba_threads(args.threads):
        for case in args.cases:
            shape, rate, alpha, seed = CASES[case]
            data, _ = make_case(case, seed, (shape, rate, alpha), n=args.size, k=k)
            one_run(data, args.method, k, args.chains, 5, True)  # compile
            best, cpu, fits = {True: np.inf, False: np.inf}, {True: [], False: []}, {}
            for _ in range(args.repeats):
                for at_once in (False, True):
                    wall, used, fits[at_once] = one_run(data, args.method, k, args.chains,
                                                  args.iterations, at_once)
                    best[at_once] = min(best[at_once], wall / n)
                    cpu[at_once].append(used / n)
            np.testing.assert_array_equal(fits[True].mu_hat, fits[False].mu_hat)
            print(f"| {case} | {best[False]:.4f} | {best[True]:.4f} | "
                  f"{best[False] / best[True]:.2f}x | {np.median(cpu[False]):.4f} | "
                  f"{np.median(cpu[True]):.4f} |")


if __name__ == "__main__":
    main()
