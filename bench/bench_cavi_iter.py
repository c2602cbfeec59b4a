"""Seconds per CAVI iteration, private-collapsed against the paper's private CAVI, per phase.

    python bench/bench_cavi_iter.py                       # light and heavy, 2 threads
    python bench/bench_cavi_iter.py --cases heavy --iterations 20

Cases (1000 x 1000, K = 50, PMF; alpha = 0.5 unless said): ``light``: factors ~ Gamma(0.5,
rate 3.5) (mean count about 1); ``heavy``: factors ~ Gamma(0.1, rate 0.4) (mean count about 3,
largest count about 300); ``heavy-0.9``: the same at alpha = 0.9; ``mean50``: factors ~
Gamma(1, 1) (mean count 50). Each method starts from the same EM fit of the privatized data (as
``lppf.cavi.fit_cavi`` does) and runs ``--warmup`` iterations (numba compilation excluded), then
``--iterations`` timed ones. Per phase, median wall seconds per iteration: ``products``
(the allocation statistics R G^T and R^T G, the dense rate sum G[theta] G[phi] and E[mu]),
``local`` (the per-cell kernel: the collapsed expectation or the Bessel-mode update),
``rest`` (gamma moments, ELBO, relative change), ``total`` and the CPU seconds summed over
threads (the steadier measure on a shared machine). The last column is the ratio
collapsed / private of the total wall and CPU seconds. Timings depend on the machine's load:
compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np

from lppf import mechanisms, synthetic
from lppf._numba import threads as numba_threads
from lppf.cavi import _loop
from lppf.cavi._local import LOCALS
from lppf.cavi.pmf import PMFCavi
from lppf.expectations import collapsed_local, private_local
from lppf.validation import FitData

CASES = {"light": (0.5, 3.5, 0.5), "heavy": (0.1, 0.4, 0.5), "heavy-0.9": (0.1, 0.4, 0.9),
         "mean50": (1.0, 1.0, 0.5)}  # factor shape, factor rate, alpha
METHODS = ("private", "private-collapsed")


def make_data(case: str, size: int, K: int, seed: int) -> tuple[FitData, dict]:
    rng = np.random.default_rng(seed)
    shape, rate, alpha = CASES[case]
    truth = synthetic.pmf_truth(rng, size, size, K, shape, rate)
    Y = mechanisms.privatize(truth["Y"], alpha, rng)
    return FitData(Y, np.full((1, 1), alpha), np.zeros(Y.shape, bool), {}), truth


def kernel(method, model, local, m) -> float:
    """Wall seconds of the per-cell local update alone, given the current factors ``m``."""
    S = np.maximum(model.rate_sum(model.slots(m), None), 1e-300)
    if method == "private":
        args = (local.Y, local.alpha, S, model.mean_mu(m), model.var_mu(m),
                local.shape_plus.copy(), local.shape_minus.copy(), local.mask)
        tic = time.perf_counter()
        private_local(*args)
    else:
        tic = time.perf_counter()
        collapsed_local(local.Y, local.alpha, S, local.mask)
    return time.perf_counter() - tic


def iteration(model, local, R, mu):
    """One CAVI iteration as ``lppf.cavi._loop.iterate`` runs it; returns (R, mu, phases)."""
    t0, cpu = time.perf_counter(), time.process_time()
    m = model.moments()
    stats = model.alloc_stats(R, m)
    t1 = time.perf_counter()
    model.update(stats)
    m = model.moments()
    t2 = time.perf_counter()
    mu_new = model.mean_mu(m)
    t3 = time.perf_counter()
    R = local.refresh(model, m, mu_new)
    t4 = time.perf_counter()
    local.data_elbo(model, m)
    model.prior_elbo(m)
    _loop.relative_change(mu_new, mu)
    t5 = time.perf_counter()
    return R, mu_new, {"alloc": t1 - t0, "refresh": t4 - t3, "mean_mu": t3 - t2,
                       "total": t5 - t0, "cpu": time.process_time() - cpu}


def start(data: FitData, K: int, seed: int) -> PMFCavi:
    """The factors both methods start from: an EM fit of the privatized counts."""
    rng = np.random.default_rng(seed + 1)
    model = PMFCavi(data.Y, data.mask, K, 0.1, 0.1, {}, rng)
    _loop.em_start(model, data, "private", K, rng)
    return model


def bench(method: str, data: FitData, model: PMFCavi, warmup: int, n_iter: int) -> dict:
    model = copy.deepcopy(model)
    local = LOCALS[method](data.Y, data.alpha, data.mask)
    m = model.moments()
    R, mu = local.refresh(model, m), model.mean_mu(m)
    for _ in range(warmup):
        R, mu, _ = iteration(model, local, R, mu)
    phases: dict[str, list[float]] = {}
    for _ in range(n_iter):
        R, mu, p = iteration(model, local, R, mu)
        m = model.moments()
        tic = time.perf_counter()
        model.rate_sum(model.slots(m), None)
        p["rate_sum"] = time.perf_counter() - tic
        p["local"] = kernel(method, model, local, m)
        for k, v in p.items():
            phases.setdefault(k, []).append(v)
    med = {k: statistics.median(v) for k, v in phases.items()}
    med["products"] = med["alloc"] + med["rate_sum"] + med["mean_mu"]
    med["rest"] = med["total"] - med["products"] - med["local"]
    return med


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    p.add_argument("--size", type=int, default=1000, help="rows = columns")
    p.add_argument("--components", type=int, default=50)
    p.add_argument("--iterations", type=int, default=15)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    print(f"# {args.size} x {args.size}, K = {args.components}, "
          f"threads = {args.threads}, median of {args.iterations} iterations (wall s)")
    print("| case | method | products | local | rest | total s/iter | CPU s/iter | "
          "collapsed / private (wall, CPU) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |", flush=True)
    with numba_threads(args.threads):
        for case in args.cases:
            data, truth = make_data(case, args.size, args.components, args.seed)
            model = start(data, args.components, args.seed)
            meds = {}
            for method in METHODS:
                med = meds[method] = bench(method, data, model, args.warmup, args.iterations)
                ratio = "" if method == "private" else (
                    f"{med['total'] / meds['private']['total']:.2f}, "
                    f"{med['cpu'] / meds['private']['cpu']:.2f}")
                Y = truth["Y"]
                print(f"| {case} (alpha {CASES[case][2]}, mean {Y.mean():.1f}, max {Y.max()}) | "
                      f"{method} | {med['products']:.3f} | {med['local']:.3f} | "
                      f"{med['rest']:.3f} | {med['total']:.3f} | {med['cpu']:.3f} | {ratio} |",
                      flush=True)


if __name__ == "__main__":
    main()
