"""Seconds per phase of a Gibbs iteration on the kinds of data the samplers must be fast on.

    python bench/bench_speed.py                              # every case, 2 threads
    python bench/bench_speed.py --cases mean50 --iterations 5
    python bench/bench_speed.py --authors /path/to/built/code   # also the authors' sampler

Cases (1000 x 1000, K = 50, factors ~ Gamma(shape, rate), y~ = y + 2Geo(alpha)):

* ``light``: shape 0.5, rate 3.5, alpha 0.5 (mean count 1, max ~12);
* ``heavy-a``, ``heavy-b``: shape 0.07, rate 0.286, alpha 0.5 (mean count 3, max in the
  hundreds), two seeds of the same generator;
* ``mean50``: shape 1, rate 1, alpha 0.5 (mean count 50: every cell is allocated);
* ``heavy-a-0.9``: ``heavy-a`` at alpha 0.9;
* ``heavy50``: shape 0.1, rate 0.1, alpha 0.5 (mean count 50, cells in the thousands, as
  in real e-mail networks).

For ``private`` and ``private-collapsed``, each phase of :func:`lppf.mcmc.pmf.gibbs_sweep`
(``counts``: mu = Theta Phi and the true counts; ``alloc``: the multinomial split of every
non-zero count; ``factors``: the gamma draws) and the sweep: the median wall seconds over
``--iterations`` sweeps after ``--warmup`` (numba compilation excluded, BLAS on one thread
as in the fits), the median CPU seconds summed over threads (robust to a busy machine), and
in brackets the floor estimate of each phase on an idle machine
(:func:`bench_kernels.floors`, with the allocation's units capped at the switch to
binomials, ``lppf.mcmc.pmf._UNITS_PER_K`` K per cell). ``--authors DIR`` adds the authors'
Cython sampler on the same privatized matrix (:func:`bench_kernels.bench_authors`) and
each sweep's speed-up over it. Compare ratios within one run.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kernels import bench_authors, floors, make_case

from lppf._numba import blas_single
from lppf._numba import threads as numba_threads
from lppf.mcmc.pmf import (
    _UNITS_PER_K,
    _observed_weights,
    allocate,
    initial_state,
    update_counts,
    update_factors,
)

RATE_A = 0.07 * math.sqrt(50 / 3)  # mean count K (shape / rate)^2 = 3
CASES = {"light": (0.5, 3.5, 0.5, 0), "heavy-a": (0.07, RATE_A, 0.5, 0),
         "heavy-b": (0.07, RATE_A, 0.5, 1), "mean50": (1.0, 1.0, 0.5, 0),
         "heavy-a-0.9": (0.07, RATE_A, 0.9, 0), "heavy50": (0.1, 0.1, 0.5, 0)}
METHODS = ("private", "private-collapsed")
PHASES = ("counts", "alloc", "factors", "sweep")


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def bench(data, method: str, k: int, n_iter: int, warmup: int) -> dict:
    """Median wall and CPU seconds per phase, and the count statistics of the floors."""
    rng = np.random.default_rng(1)
    state = initial_state(data, method, k, rng)
    mu = np.empty(data.Y.shape)
    W = _observed_weights(data.mask)
    wall: dict[str, list] = {p: [] for p in PHASES}
    cpu: dict[str, list] = {p: [] for p in PHASES}
    for it in range(warmup + n_iter):
        w0, c0, _ = _timed(lambda: update_counts(state, data, rng, mu))
        w1, c1, alloc = _timed(lambda: allocate(state, data, rng))
        w2, c2, _ = _timed(lambda a=alloc: update_factors(state, a[0], a[1], W, 0.1, 1.0,
                                                          data.fix, rng))
        if it >= warmup:
            for p, w, c in zip(PHASES, (w0, w1, w2, w0 + w1 + w2), (c0, c1, c2, c0 + c1 + c2),
                               strict=True):
                wall[p].append(w)
                cpu[p].append(c)
    y = state.Y[state.Y > 0]
    out = {"wall": {p: float(np.median(v)) for p, v in wall.items()},
           "cpu": {p: float(np.median(v)) for p, v in cpu.items()},
           "nnz": float(y.size), "units": float(np.minimum(y, _UNITS_PER_K * k).sum()),
           "max": int(y.max(initial=0))}
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--size", type=int, default=1000, help="rows = columns")
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--bandwidth", type=float, default=20.0, help="GB/s per thread")
    parser.add_argument("--ns-uniform", type=float, default=1.0, help="ns per uniform")
    parser.add_argument("--authors", default=None, help="directory of the built bppmf")
    parser.add_argument("--authors-python", default=sys.executable)
    args = parser.parse_args(argv)
    n, k = args.size, args.components
    print(f"{n} x {n}, K = {k}, {args.threads} threads, medians of {args.iterations} sweeps; "
          f"per phase: wall s / CPU s (floor s); load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':12} {'method':18} {'mean y':>6} {'max y':>6} "
          + " ".join(f"{p:>22}" for p in PHASES) + f" {'vs authors':>10}")
    for case in args.cases:
        shape, rate, alpha, seed = CASES[case]
        data, _ = make_case(case, seed, (shape, rate, alpha), n, k)
        with numba_threads(args.threads):
            authors = (bench_authors(args.authors, args.authors_python, data,
                                     args.iterations, args.threads, k)
                       if args.authors else math.nan)
            for method in args.methods:
                with blas_single():  # as in lppf.mcmc.fit_mcmc
                    res = bench(data, method, k, args.iterations, args.warmup)
                low = floors(res, method, args.threads, args.bandwidth, args.ns_uniform, n, k)
                mean_y = float(np.maximum(data.Y, 0).mean())
                cols = " ".join(f"{res['wall'][p]:7.4f}/{res['cpu'][p]:7.4f} ({low[p]:5.3f})"
                                for p in PHASES)
                print(f"{case:12} {method:18} {mean_y:6.1f} {res['max']:6d} {cols} "
                      f"{authors / res['wall']['sweep']:9.1f}x", flush=True)


if __name__ == "__main__":
    main()
