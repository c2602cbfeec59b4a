"""CPU nanoseconds to split one count y over K components, unit by unit or by binomials.

    python bench/bench_alloc.py                     # K = 50, y from 10 to 20,000
    python bench/bench_alloc.py --components 20 --counts 50 200 1000
    python bench/bench_alloc.py --model community --components 5 --counts 5 10 20 40 80

The two ways :func:`lppf.mcmc.pmf._allocate_cell` splits a count: one uniform and a
two-level search per unit (cost grows with y) and K conditional binomials
(:func:`lppf.draws.multinomial`, inversion or BTPE; cost bounded whatever y). Weights are
products of two Gamma(1, 1) rows, as a cell of the mean-count-50 case. One thread, CPU time
(robust to a busy machine), best of ``--repeats``; the ratio column locates the switch
``_UNITS_PER_K`` of the PMF sampler. ``--model community``: the same for a cell of the
community model split over C x C role pairs (:func:`lppf.mcmc.community._allocate_cell`:
2 uniforms and two linear searches over C per unit against C + C^2 binomials), weights
from Gamma(1, 1) factors; the ratio column locates ``_UNITS_PER_C``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from lppf._numba import rng_state, uniform
from lppf.draws import multinomial
from lppf.mcmc.community import (
    _UNITS_PER_C,
    _sender_weights,
    _split_binomials,
    _split_units,
)
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


@njit(cache=True)
def community_units(y, W, reps, seed):
    """Split y over the C x C role pairs of the cells (theta_i, Q) in W, ``reps`` times, unit
    by unit. W (n, C + 1, C): row 0 theta_i, rows 1.. the receiver's cumulative weights Q."""
    rs = rng_state(seed)
    C = W.shape[2]
    F = np.empty((2, C))
    send, recv, pair = np.zeros(C, np.int64), np.zeros(C, np.int64), np.zeros((C, C), np.int64)
    for r in range(reps):
        cell = W[r % W.shape[0]]
        mu = _sender_weights(cell[0], cell[1:], F[0], F[1])
        _split_units(y, cell[1:], F[1], mu, send, recv, pair, rs)
    return pair


@njit(cache=True)
def community_binomials(y, W, reps, seed):
    """As :func:`community_units` by conditional binomials."""
    rs = rng_state(seed)
    C = W.shape[2]
    F, N = np.empty((2, C)), np.empty((2, C), np.int64)
    send, recv, pair = np.zeros(C, np.int64), np.zeros(C, np.int64), np.zeros((C, C), np.int64)
    for r in range(reps):
        cell = W[r % W.shape[0]]
        _sender_weights(cell[0], cell[1:], F[0], F[1])
        _split_binomials(y, cell[1:], F, N, send, recv, pair, rs)
    return pair


def community_cells(C: int, rng: np.random.Generator) -> np.ndarray:
    """(64, C + 1, C): theta_i and Q = cumsum_d(pi_cd theta_jd) of 64 cells."""
    theta_i, theta_j = rng.gamma(1.0, 1.0, (2, 64, C))
    Pi = rng.gamma(1.0, 1.0, (C, C))
    Q = np.cumsum(Pi[None] * theta_j[:, None, :], axis=2)
    return np.concatenate([theta_i[:, None, :], Q], axis=1)


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
    parser.add_argument("--model", choices=("pmf", "community"), default="pmf")
    parser.add_argument("--components", type=int, default=None,
                        help="K (default 50) or C (default 5)")
    parser.add_argument("--counts", type=int, nargs="+", default=None,
                        help="default: 10 to 20,000 (pmf), 2 to 400 (community)")
    parser.add_argument("--units", type=int, default=2_000_000, help="units per timing")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    if args.model == "community":
        C = args.components or 5
        counts = args.counts or [2, 5, 10, 20, 40, 80, 160, 400]
        W = community_cells(C, rng)
        community_units(3, W, 2, 1), community_binomials(3, W, 2, 1)  # compile
        print(f"community, C = {C}, one thread, CPU ns per cell (switch at y = "
              f"{_UNITS_PER_C} C = {_UNITS_PER_C * C})")
        table(community_units, community_binomials, W, W, counts, args)
        return
    K = args.components or 50
    counts = args.counts or [10, 25, 50, 100, 200, 400, 800, 1600, 5000, 20000]
    W = rng.gamma(1.0, 1.0, (64, K)) * rng.gamma(1.0, 1.0, (64, K))
    padded = np.zeros((64, -(-K // _BLOCK) * _BLOCK))
    padded[:, :K] = W
    per_unit(3, padded, 2, 1), binomials(3, W, 2, 1)  # compile
    print(f"K = {K}, one thread, CPU ns per cell (switch at y = {_UNITS_PER_K} K = "
          f"{_UNITS_PER_K * K})")
    table(per_unit, binomials, padded, W, counts, args)


def table(units, binomials, W_units, W_binomials, counts, args) -> None:
    print(f"{'y':>6} {'per unit':>10} {'binomials':>10} {'ratio':>6}")
    for y in counts:
        a = cpu_ns(units, y, W_units, args.units, args.repeats)
        b = cpu_ns(binomials, y, W_binomials, args.units, args.repeats)
        print(f"{y:6d} {a:10.0f} {b:10.0f} {a / b:6.2f}", flush=True)


if __name__ == "__main__":
    main()
