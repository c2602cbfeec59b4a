"""Seconds per chain-sweep of the default run's small fits, where a sweep's fixed costs
(kernel calls, temporaries, seeds) weigh more than its cells.

    snakemake --cores 2                      # the default run, for its data
    python bench/bench_small.py              # every case, from results/
    python bench/bench_small.py --results /path/to/results --cases s3-naive e4-nonprivate

Each case fits one replicate's data as the workflow does (4 chains on one thread,
``--iterations`` sweeps, a quarter of them burn-in, a sample saved every 5th) ``--repeats``
times and prints the best sampling seconds per chain-sweep and a digest of the result
(``mu_hat`` and the log-likelihood trace), which shows whether a change kept the draws.
Compare within one run on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from lppf.mcmc.community import fit_community_mcmc
from lppf.mcmc.pmf import fit_pmf_mcmc
from lppf.validation import FitData

# name -> (model, data file under results/, method, components, a0, b0), the default config's
CASES = {
    "s2-naive": ("pmf", "s2/privatized/base/beta-0.8/rep0.npz", "naive", 3, 1.0, 1.0),
    "s2-private": ("pmf", "s2/privatized/base/beta-0.8/rep0.npz", "private-collapsed", 3,
                   1.0, 1.0),
    "s3-naive": ("community", "s3/privatized/base/epsmean-0.75/rep0.npz", "naive", 5,
                 0.2, 0.5),
    "s3-private": ("community", "s3/privatized/base/epsmean-0.75/rep0.npz",
                   "private-collapsed", 5, 0.2, 0.5),
    "e1-naive": ("community", "e1/privatized/e0-1.5/alpha-0.9/rep0.npz", "naive", 5, 1.0, 1.0),
    "e1-private": ("community", "e1/privatized/e0-1.5/alpha-0.9/rep0.npz",
                   "private-collapsed", 5, 1.0, 1.0),
    "e4-nonprivate": ("community", "enron/network.npz", "nonprivate", 5, 1.0, 1.0),
    "e4-private": ("community", "e4/privatized/base/epsn-0.25/rep0.npz", "private-collapsed",
                   5, 1.0, 1.0),
}


def load(results: Path, model: str, path: str, method: str) -> FitData:
    d = np.load(results / path)
    if method == "nonprivate":
        Y, alpha = d["Y"], np.zeros(())
    else:
        Y, alpha = d["Y_noisy"], np.asarray(d["alpha"], float)
    mask = np.eye(len(Y), dtype=bool) if model == "community" else np.zeros(Y.shape, bool)
    return FitData(Y.astype(np.int64), alpha, mask)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    n, burnin = args.iterations, args.iterations // 4
    print(f"{'case':15s} {'shape':>9s} {'ms/chain-sweep':>15s}  digest")
    for name in args.cases:
        model, path, method, k, a0, b0 = CASES[name]
        data = load(args.results, model, path, method)
        fit = fit_pmf_mcmc if model == "pmf" else fit_community_mcmc
        best = np.inf
        for _ in range(args.repeats):
            res = fit(data, method=method, n_components=k, a0=a0, b0=b0, n_iter=n,
                      burnin=burnin, thin=5, rng=np.random.default_rng(5), threads=1,
                      n_chains=4)
            best = min(best, res.elapsed["sampling"] / (4 * (n - burnin)))
        digest = hashlib.sha1(res.mu_hat.tobytes() + res.trace["loglik"].tobytes())
        shape = "x".join(map(str, data.Y.shape))
        print(f"{name:15s} {shape:>9s} {best * 1e3:15.4f}  {digest.hexdigest()[:12]}",
              flush=True)


if __name__ == "__main__":
    main()
