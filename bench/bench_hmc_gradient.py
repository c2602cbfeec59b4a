"""Microseconds per gradient of the community model's HMC target (``lppf.mcmc.hmc``), the cost
that a transition pays 33 times.

    python bench/bench_hmc_gradient.py [NETWORK] [--components 3 5] [--calls 2000]

NETWORK: a count matrix file of the workflow (default the default run's
``results/enron/network.npz``, E4's network); the gradient is taken at random log factors
(Gamma(1, 1) factors) with the diagonal held out, inside a trajectory (no logarithms), best of
five runs of ``--calls`` calls, one thread. Compare within one run on an otherwise idle
machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lppf._numba import blas_single
from lppf.io import load_npz
from lppf.mcmc import hmc


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("network", nargs="?", default="results/enron/network.npz")
    parser.add_argument("--components", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)
    Y = np.asarray(load_npz(args.network)["Y"], dtype=np.float64)
    V = len(Y)
    obs = ~np.eye(V, dtype=bool)
    Y = np.where(obs, np.maximum(Y, 0.0), 0.0)
    rng = np.random.default_rng(0)
    with blas_single():
        for C in args.components:
            x = np.log(rng.gamma(1.0, 1.0, V * C + C * C))
            grad = np.empty_like(x)
            hmc.community_logp(x, Y, obs, 1.0, 1.0, V, C, grad, False)  # compiles
            best = np.inf
            for _ in range(5):
                tic = time.perf_counter()
                for _ in range(args.calls):
                    hmc.community_logp(x, Y, obs, 1.0, 1.0, V, C, grad, False)
                best = min(best, (time.perf_counter() - tic) / args.calls)
            print(f"V = {V}, C = {C}: {best * 1e6:.1f} us per gradient", flush=True)


if __name__ == "__main__":
    main()
