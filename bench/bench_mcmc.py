"""Seconds per Gibbs iteration and memory of the MCMC samplers on synthetic data.

    python bench/bench_mcmc.py                       # every size, method, 1 and 2 threads
    python bench/bench_mcmc.py --sizes v1 --threads 2 --iterations 10

Sizes: ``network`` (161 x 161, C = 5, community model), ``enron`` (1000 x 1400, K = 25) and
``v1`` (1000 x 1000, K = 50). Data: factors ~ Gamma(0.5, rate 3.5 / sqrt(K / 50)) (mean
count about 1), privatized with alpha = 0.5. Each row reports the mean wall time of
``--iterations`` sweeps after ``--warmup`` sweeps (numba compilation excluded; BLAS on one
thread, as in the fits), the CPU seconds per sweep summed over threads (robust to a busy
machine), the wall time of the allocation step alone, the peak of Python-level allocations
during the sweeps (tracemalloc) and the sampler's state in bytes per cell (true counts, y~,
lambda+-, mu, accumulators of the posterior means, per-thread allocation totals). Numbers
depend on the machine's load: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numba
import numpy as np

from lppf import mechanisms, synthetic
from lppf._numba import blas_single
from lppf._numba import threads as numba_threads
from lppf.mcmc import fit_mcmc
from lppf.mcmc.pmf import allocate, gibbs_sweep, initial_state
from lppf.validation import METHODS, PRIVATE_METHODS, FitData

SIZES = {"network": ("community", 161, 161, 5), "enron": ("pmf", 1000, 1400, 25),
         "v1": ("pmf", 1000, 1000, 50)}
ALPHA = 0.5


def make_data(model: str, n_rows: int, n_cols: int, K: int, method: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    rate = 3.5 / np.sqrt(K / 50)
    if model == "pmf":
        truth = synthetic.pmf_truth(rng, n_rows, n_cols, K, 0.5, rate)
    else:
        truth = synthetic.community_truth(rng, n_rows, K, 0.5, rate)
    mask = np.zeros((n_rows, n_cols), bool)
    if model == "community":
        np.fill_diagonal(mask, True)
    if method == "nonprivate":
        return FitData(truth["Y"], np.zeros((1, 1)), mask)
    return FitData(mechanisms.privatize(truth["Y"], ALPHA, rng), np.full((1, 1), ALPHA), mask)


def state_bytes(state, data: FitData, K: int) -> int:
    """Bytes the PMF sampler keeps per fit: its state plus the fit driver's accumulators."""
    arrays = [state.Y, state.Ytil, state.lam_plus, state.lam_minus, data.mask]
    arrays += list(state.csr or ())
    total = sum(a.nbytes for a in arrays if a is not None)
    cells = data.Y.size
    total += 8 * cells  # posterior-mean accumulator of mu
    if state.method in PRIVATE_METHODS:
        total += 16 * cells  # mu work buffer and the accumulator of y
    if data.mask.any():
        total += 8 * cells  # 1 - mask as float64 for the rate products
    return total + 8 * numba.get_num_threads() * data.Y.shape[1] * K  # per-thread totals


def bench_pmf(data: FitData, method: str, K: int, n_iter: int, warmup: int):
    rng = np.random.default_rng(1)
    state = initial_state(data, method, K, rng)
    mu = np.empty(data.Y.shape) if method in PRIVATE_METHODS else None
    for _ in range(warmup):
        gibbs_sweep(state, data, 0.1, 1.0, rng, None, mu)
    tracemalloc.start()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n_iter):
        gibbs_sweep(state, data, 0.1, 1.0, rng, None, mu)
    seconds = (time.perf_counter() - start) / n_iter
    cpu = (time.process_time() - cpu) / n_iter
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    t0 = time.perf_counter()
    for _ in range(n_iter):
        allocate(state, data, rng)
    alloc = (time.perf_counter() - t0) / n_iter
    return seconds, cpu, alloc, peak, state_bytes(state, data, K)


def bench_community(data: FitData, method: str, C: int, n_iter: int, warmup: int):
    fit = fit_mcmc("community", data, method=method, n_components=C, a0=0.1, b0=1.0,
                   n_iter=warmup + n_iter, burnin=warmup, thin=n_iter,
                   rng=np.random.default_rng(1))
    nan = float("nan")
    return fit.elapsed["sampling"] / n_iter, nan, nan, nan, nan


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", choices=SIZES, default=list(SIZES))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"{'size':8} {'method':18} {'thr':>3} {'s/iter':>8} {'cpu s':>8} {'alloc s':>8} "
          f"{'peak MB':>8} {'B/cell':>7}")
    for size in args.sizes:
        model, n_rows, n_cols, K = SIZES[size]
        for method in args.methods:
            data = make_data(model, n_rows, n_cols, K, method)
            for n in args.threads:
                with numba_threads(n), blas_single():  # as in lppf.mcmc.fit_mcmc
                    try:
                        run = bench_pmf if model == "pmf" else bench_community
                        sec, cpu, alloc, peak, state = run(data, method, K, args.iterations,
                                                           args.warmup)
                    except (ImportError, AttributeError, NotImplementedError) as exc:
                        print(f"{size:8} {method:18} {n:3} skipped: {exc}")
                        continue
                print(f"{size:8} {method:18} {n:3} {sec:8.4f} {cpu:8.4f} {alloc:8.4f} "
                      f"{peak / 2**20:8.1f} {state / data.Y.size:7.1f}", flush=True)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max resident set size of the process: {maxrss:.0f} MB")


if __name__ == "__main__":
    main()
