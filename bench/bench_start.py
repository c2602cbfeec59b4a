"""A fit's fixed cost (the EM start) against its sweeps, per phase.

    python bench/bench_start.py                        # heavy-a and light, private, 2 threads
    python bench/bench_start.py --cases mean50 --iterations 7500 --burnin 2500

Each case (:mod:`bench_speed`'s, 1000 x 1000, K = 50) times, with the fits' thread and BLAS
settings: the NNDSVD start, one EM step (:func:`lppf.start.em`), the capped start of a fit of
``--iterations`` sweeps and ``--burnin`` burn-in (:func:`lppf.start.best_start` with
``n_iter``; its schedule from :func:`lppf.start.start_schedule`) and the median of
``--sweeps`` sweeps of a chain from it. Prints wall and CPU seconds, the start as a share of
the fit's sweeps (``start / (iterations x sweep)``, target <= 10%), and the uncapped
schedule's EM steps with its estimated CPU share (its steps at the capped start's CPU
seconds per step).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kernels import make_case
from bench_speed import CASES

from lppf import start as _start
from lppf._numba import blas_single
from lppf._numba import threads as numba_threads
from lppf.mcmc.pmf import PMFChain, make_state


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return np.array([time.perf_counter() - wall, time.process_time() - cpu]), out


def bench(data, method: str, k: int, n_iter: int, burnin: int, n_sweeps: int) -> dict:
    """Seconds (wall, CPU) of the phases and the schedules' EM steps."""
    out = {"nndsvd": _timed(lambda: _start.nndsvd_start(data, k))[0]}
    A, B = _start.nndsvd_start(data, k)
    out["em step"] = _timed(lambda: _start.em(data, method, A, B, 1))[0]
    out["start"], (A, B, _) = _timed(lambda: _start.best_start(
        data, method, k, burnin, np.random.default_rng(0), n_iter=n_iter))
    chain = PMFChain(data, make_state(data, method, A, B), 0.1, 1.0, np.random.default_rng(1))
    chain.sweep()
    sweeps = [_timed(chain.sweep)[0] for _ in range(n_sweeps)]
    out["sweep"] = np.median(sweeps, axis=0)
    R, s, refine = _start.start_schedule(data, k, burnin, n_iter)
    R0, s0, refine0 = _start.start_schedule(data, k, burnin, None)
    out["steps"] = _start.halving_steps(R, s) + refine, R
    out["steps uncapped"] = _start.halving_steps(R0, s0) + refine0, R0
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=["heavy-a", "light"])
    parser.add_argument("--method", default="private",
                        choices=("private", "private-collapsed", "naive"))
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--burnin", type=int, default=300)
    parser.add_argument("--sweeps", type=int, default=10)
    args = parser.parse_args(argv)
    k = args.components
    print(f"{args.method}, {args.size} x {args.size}, K = {k}, {args.threads} threads, "
          f"fit of {args.iterations} iterations ({args.burnin} burn-in); seconds wall / CPU")
    print("| case | NNDSVD | EM step | start (EM steps, restarts) | sweep | start share of "
          "fit (wall / CPU) | uncapped: EM steps, restarts, est. share (CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    with numba_threads(args.threads), blas_single():
        for case in args.cases:
            shape, rate, alpha, seed = CASES[case]
            data, _ = make_case(case, seed, (shape, rate, alpha), n=args.size, k=k)
            r = bench(data, args.method, k, args.iterations, args.burnin, args.sweeps)
            fit = args.iterations * r["sweep"]
            share = r["start"] / fit
            steps0, R0 = r["steps uncapped"]
            per_step = (r["start"][1] - r["nndsvd"][1]) / r["steps"][0]
            est = (r["nndsvd"][1] + steps0 * per_step) / fit[1]
            f = "{:.3f} / {:.3f}".format
            print(f"| {case} | {f(*r['nndsvd'])} | {f(*r['em step'])} | {f(*r['start'])} "
                  f"({r['steps'][0]}, {r['steps'][1]}) | {f(*r['sweep'])} | "
                  f"{share[0]:.1%} / {share[1]:.1%} | {steps0}, {R0}, {est:.0%} |")


if __name__ == "__main__":
    main()
