"""Seconds per phase of one PMF Gibbs iteration (1000 x 1000, K = 50), medians over sweeps.

    python bench/bench_kernels.py                          # light, heavy, v1; 2 threads
    python bench/bench_kernels.py --cases light --iterations 20
    python bench/bench_kernels.py --authors /path/to/built/code   # also the authors' sampler
    python bench/bench_kernels.py --case mine 0.3 1.2 0.7 --cases mine --size 500 --components 20

Cases (y~ = y + 2Geo(alpha)):

* ``light``: theta, phi ~ Gamma(0.5, rate 3.5), alpha 0.5 (mean count 1, max ~12);
* ``heavy``: theta, phi ~ Gamma(0.1, rate 0.4), alpha 0.5 (mean count 3, max ~300);
* ``v1``: theta, phi ~ Gamma(1, rate 5), alpha e^-1 (mean count 2; experiment V1);
* ``--case NAME SHAPE RATE ALPHA`` adds a case of its own (name it in ``--cases``), and
  ``--size``, ``--components`` change the matrix (size x size) and K.

Phases of :func:`lppf.mcmc.pmf.gibbs_sweep`: ``counts`` (mu = Theta Phi and the true
counts given y~, private methods), ``alloc`` (the multinomial split of every non-zero count,
with the row and column totals), ``factors`` (the gamma draws of Theta and Phi), ``sweep``
(the three together) and ``joint`` (what a saved sample adds to a chain: the posterior
sums, the log joint and, for ``naive``, its share of the product of the saved factors,
:func:`saved_cost`). Each is the median wall time over
``--iterations`` sweeps after ``--warmup`` sweeps (numba compilation excluded), with BLAS
on one thread as in the fits. The floors in brackets are the estimates of :func:`floors`
(memory traffic at ``--bandwidth`` GB/s per thread, ``--ns-uniform`` ns per uniform draw);
a second table prints each phase as a multiple of its floor. The defaults come from a 2-core
x86-64 machine with a 32 MB L3 (2026): one thread added 8 MB arrays at about 100 GB/s and
64 MB ones at 47, BLAS formed Theta Phi at 63 GFlop/s, a xoshiro uniform took 0.6 ns. The
machine may be shared: medians, and compare ratios within one run.

``--authors DIR`` runs the authors' Cython sampler (``bppmf.BPPMF``, built in DIR; its
python with ``--authors-python``) in a subprocess with the same number of OpenMP threads on
the same privatized matrix and prints the ratio of its seconds per iteration to each sweep.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from lppf import mechanisms, synthetic
from lppf._numba import blas_single
from lppf._numba import threads as numba_threads
from lppf.diagnostics import diagnostic_cells
from lppf.mcmc._driver import SavedSamples
from lppf.mcmc.pmf import (
    PMFChain,
    _observed_weights,
    allocate,
    initial_state,
    mean_product,
    update_counts,
    update_factors,
)
from lppf.validation import FitData

CASES = {"light": (0.5, 3.5, 0.5), "heavy": (0.1, 0.4, 0.5), "v1": (1.0, 5.0, math.exp(-1))}
METHODS = ("private", "private-collapsed", "naive")
N, K = 1000, 50


def make_case(case: str, seed: int = 0, params: tuple | None = None, n: int = N,
              k: int = K) -> tuple[FitData, np.ndarray]:
    """(privatized data, true counts) of a case (``params``: its shape, rate and alpha if
    not one of ``CASES``), n x n with k components."""
    shape, rate, alpha = params or CASES[case]
    rng = np.random.default_rng(seed)
    truth = synthetic.pmf_truth(rng, n, n, k, shape, rate)
    Ytil = mechanisms.privatize(truth["Y"], alpha, rng)
    return FitData(Ytil, np.full((1, 1), alpha), np.zeros((n, n), bool)), truth["Y"]


def _timed(fn):
    tic = time.perf_counter()
    out = fn()
    return time.perf_counter() - tic, out


def bench_method(data: FitData, method: str, n_iter: int, warmup: int, k: int = K) -> dict:
    """Median seconds per phase of ``method`` on ``data`` with ``k`` components, and the
    mean non-zero count."""
    rng = np.random.default_rng(1)
    state = initial_state(data, method, k, rng)
    mu = np.empty(data.Y.shape)
    W = _observed_weights(data.mask)
    times: dict[str, list] = {p: [] for p in ("counts", "alloc", "factors", "sweep")}
    nnz = []
    for it in range(warmup + n_iter):
        t_counts, _ = _timed(lambda: update_counts(state, data, rng, mu))
        t_alloc, alloc = _timed(lambda: allocate(state, data, rng))
        t_fac, _ = _timed(lambda a=alloc: update_factors(state, a[0], a[1], W, 0.1, 1.0,
                                                         data.fix, rng))
        if it >= warmup:
            for p, t in zip(("counts", "alloc", "factors"), (t_counts, t_alloc, t_fac),
                            strict=True):
                times[p].append(t)
            times["sweep"].append(t_counts + t_alloc + t_fac)
            nnz.append(np.count_nonzero(state.Y) if state.csr is None else len(state.csr[2]))
    out = {p: float(np.median(v)) for p, v in times.items()}
    out["joint"] = saved_cost(data, method, n_iter, warmup, k)
    out["nnz"] = float(np.median(nnz))
    out["units"] = float(state.Y.sum() if state.csr is None else state.csr[2].sum())
    return out


def saved_cost(data: FitData, method: str, n_iter: int, warmup: int, k: int = K) -> float:
    """Median seconds a saved sample adds to a chain (:class:`lppf.mcmc.pmf.PMFChain`, the
    driver's :class:`lppf.mcmc._driver.SavedSamples`): (save + the sweep after it) minus
    the sweep before it, so that work a save moves into the next sweep counts too, plus
    the share of one sample in work left to the end of the chain (``naive``: the posterior
    mean of Theta Phi, :func:`lppf.mcmc.pmf.mean_product`)."""
    chain = PMFChain(data, initial_state(data, method, k, np.random.default_rng(2)), 0.1, 1.0,
                     np.random.default_rng(3))
    saved = SavedSamples(warmup + n_iter, diagnostic_cells(data.mask))
    extra = []
    for it in range(warmup + n_iter):
        t_before, _ = _timed(chain.sweep)
        t_save, _ = _timed(lambda: saved.add(chain))
        t_after, _ = _timed(chain.sweep)
        if it >= warmup:
            extra.append(t_save + t_after - t_before)
    at_end = 0.0
    if saved.mu_sum is None:
        theta, phi = np.stack(saved.factors["theta"]), np.stack(saved.factors["phi"])
        at_end, _ = _timed(lambda: mean_product(theta, phi))
    return float(np.median(extra)) + at_end / saved.s


def floors(res: dict, method: str, n_threads: int, bandwidth: float, ns_uniform: float,
           n: int = N, k: int = K) -> dict:
    """Estimated lower bounds (seconds) per phase on an idle machine.

    * alloc, per non-zero cell: K multiply-adds theta_dk phi_vk (~0.2 ns each, one row of
      Theta and one of Phi_VK from cache), ~5 ns to bring a row of Phi_VK and one of the
      column totals from L2, and per unit of count one uniform plus a two-level search
      (``ns_uniform`` + 3 ns); plus reading the counts (4 B/cell), over ``n_threads``.
    * counts: the product Theta Phi (2 D V K flops at 60 GFlop/s, BLAS on one thread) plus,
      per cell, 20 B (collapsed: y~, mu, y) or 36 B (private: also lambda+-) of traffic and
      ~10 ns (collapsed: one uniform and a short walk) or ~30 ns (private: a Bessel, a
      binomial and two gamma draws with two logs) of work, over ``n_threads``.
    * factors: (D + V) K gamma draws at ~15 ns, over ``n_threads``.
    * joint: per cell, adding mu and the counts into the posterior sums and reading the
      counts, y~ and the mask for the noise term of the log joint (about 60 B; the Poisson
      term comes from the allocation); naive: its share of the product of the saved
      factors at the end (2 D V K flops per sample at 60 GFlop/s per thread), which its
      sweep never forms."""
    cells, K = n * n, k
    gb = bandwidth * 1e9 * n_threads
    product = 2 * cells * K / 60e9
    per_unit = (ns_uniform + 3.0) * 1e-9
    alloc = (K * 0.2e-9 + 5e-9 + res["units"] / max(res["nnz"], 1) * per_unit) \
        * res["nnz"] / n_threads + 4 * cells / gb
    counts = 0.0
    if method != "naive":
        traffic, work = (36, 30e-9) if method == "private" else (20, 10e-9)
        counts = product + traffic * cells / gb + work * cells / n_threads
    factors = 2 * n * K * 15e-9 / n_threads
    joint = product / n_threads if method == "naive" else 60 * cells / gb
    return {"counts": counts, "alloc": alloc, "factors": factors, "joint": joint,
            "sweep": counts + alloc + factors}


_AUTHORS = """
import sys, time, types
import numpy as np
sys.path.insert(0, sys.argv[1])
sys.modules.setdefault("pp_plot", types.SimpleNamespace(pp_plot=None))  # plots, tests only
from bppmf import BPPMF
Ytil = np.load(sys.argv[2]).astype(np.int32)
alpha, n_iter, K = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
model = BPPMF(D=Ytil.shape[0], V=Ytil.shape[1], K=K, a=0.1, b=1.0, seed=1)
model.fit(data=Ytil, priv=np.full(Ytil.shape, alpha), mask=None, num_itns=3, verbose=False,
          initialize=True)
times = []
for _ in range(n_iter):
    tic = time.perf_counter()
    model.update(1, 0, {})
    times.append(time.perf_counter() - tic)
print(np.median(times))
"""


def bench_authors(path: str, python: str, data: FitData, n_iter: int, n_threads: int,
                  k: int = K) -> float:
    """Median seconds per iteration of the authors' ``BPPMF`` (built in ``path``, run by
    ``python`` with ``n_threads`` OpenMP threads) on the privatized matrix."""
    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "ytil.npy")
        np.save(file, data.Y)
        env = {**os.environ, "OMP_NUM_THREADS": str(n_threads)}
        out = subprocess.run([python, "-c", _AUTHORS, path, file, str(float(data.alpha.flat[0])),
                              str(n_iter), str(k)], env=env, check=True, capture_output=True,
                             text=True)
    return float(out.stdout.split()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--case", nargs=4, action="append", default=[],
                        metavar=("NAME", "SHAPE", "RATE", "ALPHA"),
                        help="a case of its own: factors ~ Gamma(SHAPE, rate RATE), ALPHA")
    parser.add_argument("--size", type=int, default=N, help="rows = columns")
    parser.add_argument("--components", type=int, default=K)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--bandwidth", type=float, default=20.0, help="GB/s per thread")
    parser.add_argument("--ns-uniform", type=float, default=1.0, help="ns per uniform")
    parser.add_argument("--authors", default=None, help="directory of the built bppmf")
    parser.add_argument("--authors-python", default=sys.executable,
                        help="python that imports the authors' bppmf")
    args = parser.parse_args(argv)
    cases = {**CASES, **{name: tuple(map(float, p)) for name, *p in args.case}}
    unknown = [c for c in args.cases if c not in cases]
    if unknown:
        parser.error(f"unknown case(s) {unknown}: choose from {sorted(cases)} or add --case")
    n, k = args.size, args.components
    phases = ("counts", "alloc", "factors", "sweep", "joint")
    above = []
    print(f"{args.threads} threads, medians of {args.iterations} sweeps; seconds "
          f"(floor estimate in brackets); joint/sweep = cost of a saved sample")
    print(f"{'case':6} {'method':18} {'nnz':>7} " + " ".join(f"{p:>16}" for p in phases)
          + f" {'joint/sweep':>11} {'vs authors':>10}")
    for case in args.cases:
        data, _ = make_case(case, params=cases[case], n=n, k=k)
        with numba_threads(args.threads):
            authors = (bench_authors(args.authors, args.authors_python, data,
                                     args.iterations, args.threads, k)
                       if args.authors else float("nan"))
            if args.authors:
                print(f"{case:6} {'authors private':18} {'':>7} "
                      + " ".join(f"{'':>16}" for _ in phases[:3])
                      + f" {authors:16.4f}", flush=True)
            for method in args.methods:
                with blas_single():  # as in lppf.mcmc.fit_mcmc
                    res = bench_method(data, method, args.iterations, args.warmup, k)
                low = floors(res, method, args.threads, args.bandwidth, args.ns_uniform, n, k)
                cols = " ".join(f"{res[p]:8.4f} [{low[p]:5.3f}]" for p in phases)
                print(f"{case:6} {method:18} {res['nnz']:7.0f} {cols} "
                      f"{res['joint'] / res['sweep']:11.2f} "
                      f"{authors / res['sweep']:9.1f}x", flush=True)
                above.append((case, method, {p: res[p] / low[p] if low[p] else float("nan")
                                             for p in phases}))
    print("\ntimes the floor estimate")
    print(f"{'case':6} {'method':18} " + " ".join(f"{p:>8}" for p in phases))
    for case, method, ratio in above:
        print(f"{case:6} {method:18} " + " ".join(f"{ratio[p]:8.1f}" for p in phases))


if __name__ == "__main__":
    main()
