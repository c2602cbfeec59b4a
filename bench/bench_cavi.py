"""CAVI versus private MCMC on a synthetic 1000 x 1000 matrix with K = 50 (experiment V1).

Data: Theta_DK, Phi_KV ~ Gamma(shape, rate) (defaults 0.2, 1: mean rate 2 per cell),
Y ~ Pois(Theta Phi), y~ = y + 2Geo(alpha) with alpha = exp(-eps/N) per cell and eps/N = 1
(each cell is one observation of l1 norm N). Every CAVI method runs to convergence (relative
change of mu_hat below --tol); private MCMC runs --mcmc-burnin + --mcmc-samples iterations.
Prints a table: wall time, iterations (CAVI: including the naive warm-up of the private
methods), wall and CPU seconds per iteration (CPU time summed over threads: the better
measure on a shared machine) and MAE of mu_hat vs the true mu.

    python bench/bench_cavi.py --threads 2                      # full comparison
    python bench/bench_cavi.py --mcmc-burnin 200 --mcmc-samples 100   # shorter MCMC
    python bench/bench_cavi.py --no-mcmc --size 300 --components 20   # CAVI only, smaller
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from lppf.cavi import fit_cavi
from lppf.validation import FitData

METHODS = ("nonprivate", "naive", "private", "private-collapsed")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1000, help="rows = columns")
    p.add_argument("--components", type=int, default=50)
    p.add_argument("--gamma-shape", type=float, default=0.2)
    p.add_argument("--gamma-rate", type=float, default=1.0)
    p.add_argument("--eps-per-n", type=float, default=1.0, help="alpha = exp(-eps/N)")
    p.add_argument("--a0", type=float, default=0.1)
    p.add_argument("--b0", type=float, default=0.1)
    p.add_argument("--max-iter", type=int, default=500)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS,
                   help="CAVI methods to run (none: MCMC only)")
    p.add_argument("--no-mcmc", action="store_true")
    p.add_argument("--mcmc-burnin", type=int, default=5000)
    p.add_argument("--mcmc-samples", type=int, default=2500)
    p.add_argument("--mcmc-thin", type=int, default=25)
    return p.parse_args(argv)


def synthetic(args) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(args.seed)
    n, k = args.size, args.components
    scale = 1.0 / args.gamma_rate
    mu = rng.gamma(args.gamma_shape, scale, (n, k)) @ rng.gamma(args.gamma_shape, scale, (k, n))
    Y = rng.poisson(mu)
    alpha = math.exp(-args.eps_per_n)
    noisy = Y + rng.geometric(1 - alpha, Y.shape) - rng.geometric(1 - alpha, Y.shape)
    return mu, Y, noisy, alpha


def run_cavi(method, Y, alpha, args) -> dict:
    data = FitData(Y, np.full((1, 1), 0.0 if method == "nonprivate" else alpha),
                   np.zeros(Y.shape, bool), {})
    start, cpu = time.perf_counter(), time.process_time()
    res = fit_cavi("pmf", data, method=method, n_components=args.components, a0=args.a0,
                   b0=args.b0, max_iter=args.max_iter, tol=args.tol, restarts=1,
                   rng=np.random.default_rng(args.seed + 1), threads=args.threads)
    return {"mu_hat": res.mu_hat, "seconds": time.perf_counter() - start,
            "cpu": time.process_time() - cpu, "iterations": res.n_iter + res.extra["warmup_iter"]}


def run_mcmc(Y, alpha, args) -> dict | None:
    try:
        from lppf.mcmc import fit_mcmc
    except ImportError:
        return None
    data = FitData(Y, np.full((1, 1), alpha), np.zeros(Y.shape, bool), {})
    n_iter = args.mcmc_burnin + args.mcmc_samples
    start, cpu = time.perf_counter(), time.process_time()
    res = fit_mcmc("pmf", data, method="private", n_components=args.components, a0=args.a0,
                   b0=args.b0, n_iter=n_iter, burnin=args.mcmc_burnin, thin=args.mcmc_thin,
                   rng=np.random.default_rng(args.seed + 1), threads=args.threads,
                   progress=True)
    return {"mu_hat": res.mu_hat, "seconds": time.perf_counter() - start,
            "cpu": time.process_time() - cpu, "iterations": n_iter}


def main(argv=None) -> None:
    args = parse_args(argv)
    mu, Y, noisy, alpha = synthetic(args)
    print(f"# {args.size} x {args.size}, K = {args.components}, alpha = {alpha:.4f}, "
          f"mean mu = {mu.mean():.3f}, threads = {args.threads}")
    print("| inference | method | wall s | iterations | s/iter | CPU s/iter | MAE(mu_hat, mu) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |", flush=True)
    for method in args.methods:
        report("cavi", method, run_cavi(method, Y if method == "nonprivate" else noisy, alpha,
                                        args), mu)
    if not args.no_mcmc:
        out = run_mcmc(noisy, alpha, args)
        if out is None:
            print("# lppf.mcmc.fit_mcmc not available: MCMC row skipped")
        else:
            report("mcmc", "private", out, mu)


def report(inference: str, method: str, out: dict, mu: np.ndarray) -> None:
    mae = np.abs(out["mu_hat"] - mu).mean()
    print(f"| {inference} | {method} | {out['seconds']:.1f} | {out['iterations']} | "
          f"{out['seconds'] / out['iterations']:.3f} | {out['cpu'] / out['iterations']:.3f} | "
          f"{mae:.3f} |", flush=True)


if __name__ == "__main__":
    main()
