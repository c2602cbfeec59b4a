"""Seconds per Gibbs iteration of private-collapsed under each mechanism, at equal noise
variance, and the cost of secure noise.

    python bench/bench_noise.py                      # enron size, variances 2 and 20
    python bench/bench_noise.py --rows 300 --cols 400 --components 10 --variances 8

Data: PMF factors ~ Gamma(0.5, rate 3.5 / sqrt(K / 50)) (mean count about 1), privatized with
each mechanism at the parameter whose noise has the given variance
(:func:`lppf.privacy.param_for_variance`). Each row: the mean wall time of ``--iterations``
sweeps after ``--warmup`` sweeps (compilation excluded; BLAS on one thread) and of the
true-count update alone, and its ratio to the geometric mechanism's. Then the seconds per
million cells of secure noise (operating-system randomness) of each mechanism. Numbers depend
on the machine's load: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lppf import mechanisms, synthetic
from lppf._numba import blas_single, chunk_seeds
from lppf._numba import threads as numba_threads
from lppf.mcmc.counts import sample_counts_collapsed, sample_counts_tables
from lppf.mcmc.pmf import gibbs_sweep, initial_state
from lppf.privacy import param_for_variance
from lppf.validation import NOISE_PARAMS, FitData


def timed(fn, warmup: int, n: int) -> float:
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def sweep_times(Y, K, mechanism, variance, args) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    param = param_for_variance(mechanism, variance)
    Ytil = mechanisms.privatize(Y, rng=rng, mechanism=mechanism,
                                **{NOISE_PARAMS[mechanism]: param})
    data = FitData(Ytil, np.full((1, 1), param), np.zeros(Y.shape, bool), mechanism=mechanism)
    state = initial_state(data, "private-collapsed", K, rng)
    sweep = timed(lambda: gibbs_sweep(state, data, 0.1, 1.0, rng), args.warmup,
                  args.iterations)
    mu = state.Theta @ state.Phi

    def counts():
        seeds = chunk_seeds(rng, Y.shape[0])
        if state.noise is None:
            sample_counts_collapsed(state.Ytil, data.alpha, mu, data.mask, state.Y, seeds)
        else:
            sample_counts_tables(state.Ytil, state.noise, mu, data.mask, state.Y, seeds)
    return sweep, timed(counts, args.warmup, args.iterations)


def secure_cost(variance: float, cells: int = 200_000) -> None:
    Y = np.zeros((1, cells), dtype=np.int64)
    for mechanism in mechanisms.MECHANISMS:
        param = param_for_variance(mechanism, variance)
        start = time.perf_counter()
        _, info = mechanisms.privatize(Y, mechanism=mechanism, return_info=True,
                                       **{NOISE_PARAMS[mechanism]: param})
        seconds = (time.perf_counter() - start) / cells * 1e6
        print(f"secure {mechanism:18s} variance {variance:g}: {seconds:8.3f} s per million "
              f"cells ({info['sampler']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--cols", type=int, default=1400)
    parser.add_argument("--components", type=int, default=25)
    parser.add_argument("--variances", type=float, nargs="+", default=[2.0, 20.0])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    K = args.components
    truth = synthetic.pmf_truth(np.random.default_rng(0), args.rows, args.cols, K, 0.5,
                                3.5 / np.sqrt(K / 50))
    print(f"{args.rows} x {args.cols}, K = {K}; seconds per sweep (counts update alone)")
    with numba_threads(args.threads), blas_single():
        for variance in args.variances:
            base = None
            for mechanism in mechanisms.MECHANISMS:
                sweep, counts = sweep_times(truth["Y"], K, mechanism, variance, args)
                base = base or (sweep, counts)
                print(f"variance {variance:5g} {mechanism:18s} sweep {sweep:8.4f} s "
                      f"({sweep / base[0]:4.2f}x)  counts {counts:8.4f} s "
                      f"({counts / base[1]:4.2f}x)")
    for variance in args.variances:
        secure_cost(variance)


if __name__ == "__main__":
    main()
