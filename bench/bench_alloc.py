"""CPU nanoseconds to split one count y over K components, unit by unit or by binomials.

    python bench/bench_alloc.py                     # K = 50, y from 10 to 20,000
    python bench/bench_alloc.py --components 20 --counts 50 200 1000

The two ways :func:`lppf.mcmc.pmf._allocate_cell` splits a count: one uniform and a
two-level search per unit (cost grows with y) and K conditional binomials
(:func:`lppf.draws.multinomial`, inversion or BTPE; cost bounded whatever y). Weights are
products of two Gamma(1, 1) rows, as a cell of the mean-count-50 case. One thread, CPU time
(robust to a busy machine), best of ``--repeats``; the ratio column locates the switch
``_UNITS_PER_K`` of the PMF sampler.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from lppf._numba import rng_state, uniform
from lppf.draws import multinomial
from lppf.mcmc.pmf import _BLOCK, _UNITS_PER_K, _draw_component


@njit(cache=True)
def per_unit(y, W, reps, seed):
    """Split y over each row of W (padded to a multiple of _BLOCK) ``reps`` times."""
    rs = rng_state(seed)
    K = W.shape[1]
    bcum, icum, acc = np.empty(K // _BLOCK + 1), np.empty(K), np.zeros(K, np.int64)
    for r in range(reps):
        row = W[r % W.shape[0]]
        total = 0.0
        bcum[0] = 0.0
        for b in range(len(bcum) - 1):
            s = 0.0
            for k in range(b * _BLOCK, (b + 1) * _BLOCK):
                s += row[k]
                icum[k] = s
            total += s
            bcum[b + 1] = total
        for _ in range(y):
            acc[_draw_component(uniform(rs) * total, bcum, icum, K)] += 1
    return acc


@njit(cache=True)
def binomials(y, W, reps, seed):
    """As :func:`per_unit` by conditional binomials."""
    rs = rng_state(seed)
    K = W.shape[1]
    n, suffix, acc = np.empty(K, np.int64), np.empty(K), np.zeros(K, np.int64)
    for r in range(reps):
        multinomial(y, W[r % W.shape[0]], n, suffix, rs)
        acc += n
    return acc


def cpu_ns(fn, y, W, units, repeats):
    reps = max(200, units // y)
    best = np.inf
    for _ in range(repeats):
        tic = time.process_time()
        fn(y, W, reps, 1)
        best = min(best, time.process_time() - tic)
    return best / reps * 1e9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--counts", type=int, nargs="+",
                        default=[10, 25, 50, 100, 200, 400, 800, 1600, 5000, 20000])
    parser.add_argument("--units", type=int, default=2_000_000, help="units per timing")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    K = args.components
    rng = np.random.default_rng(0)
    W = rng.gamma(1.0, 1.0, (64, K)) * rng.gamma(1.0, 1.0, (64, K))
    padded = np.zeros((64, -(-K // _BLOCK) * _BLOCK))
    padded[:, :K] = W
    per_unit(3, padded, 2, 1), binomials(3, W, 2, 1)  # compile
    print(f"K = {K}, one thread, CPU ns per cell (switch at y = {_UNITS_PER_K} K = "
          f"{_UNITS_PER_K * K})")
    print(f"{'y':>6} {'per unit':>10} {'binomials':>10} {'ratio':>6}")
    for y in args.counts:
        a = cpu_ns(per_unit, y, padded, args.units, args.repeats)
        b = cpu_ns(binomials, y, W, args.units, args.repeats)
        print(f"{y:6d} {a:10.0f} {b:10.0f} {a / b:6.2f}", flush=True)


if __name__ == "__main__":
    main()
