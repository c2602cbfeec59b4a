"""The community model's fixed-count fits, HMC against the Gibbs sweep, side by side on the
default run's data (stdout, one line each).

``python bench/bench_hmc.py [RESULTS] [SEED]`` (RESULTS: a default run's ``results``): for
E4's network (C 3 and 5), E4's privatized network (naive), an E1 truth and privatized matrix
and an S3 truth and privatized matrix, with the prior, iterations and burn-in of each
experiment in ``config/config.yaml`` (100 saved draws per chain, no extension), one fit per
sampler (4 chains, one thread, one process, both samplers compiled first): split R-hat of the
log likelihood and of the worst diagnosed cell, bulk ESS of the log likelihood, seconds of
the whole fit (start included), ESS per second and whether the fit meets the convergence
criterion. The lines are the settings ``sampler="gibbs"`` and ``"hmc"``; the default,
``"auto"``, takes HMC on every case but S3 (prior shape 0.2,
:func:`lppf.mcmc.community.uses_hmc`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench_methods import run

from lppf.io import load_npz

# (name, file under RESULTS, method, C, iterations, burn-in, a0, b0)
CASES = [
    ("E4 network", "enron/network.npz", "nonprivate", 3, 2000, 500, 1.0, 1.0),
    ("E4 network", "enron/network.npz", "nonprivate", 5, 2000, 500, 1.0, 1.0),
    ("E4 eps/N 0.25", "e4/privatized/base/epsn-0.25/rep0.npz", "naive", 3, 2000, 500, 1.0, 1.0),
    ("E1 e0 1.5", "e1/truth/e0-1.5/rep0.npz", "nonprivate", 5, 1500, 300, 1.0, 1.0),
    ("E1 alpha 0.1", "e1/privatized/e0-0.75/alpha-0.1/rep0.npz", "naive", 5, 1500, 300, 1.0,
     1.0),
    ("S3 truth", "s3/truth/base/rep0.npz", "nonprivate", 5, 3300, 300, 0.2, 0.5),
    ("S3 eps 0.75", "s3/privatized/base/epsmean-0.75/rep0.npz", "naive", 5, 3300, 300, 0.2,
     0.5),
]


def main() -> None:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    warm = load_npz(results / CASES[0][1])["Y"][:12, :12]  # compile both samplers first
    for sampler in ("gibbs", "hmc"):
        run(warm, None, "community", "nonprivate", 2, 40, 20, 1.0, 1.0, seed, sampler)
    for name, path, method, C, n_iter, burnin, a0, b0 in CASES:
        z = load_npz(results / path)
        Y = z["Y_noisy"] if "Y_noisy" in z else z["Y"]
        for sampler in ("gibbs", "hmc"):
            line = run(Y, z.get("alpha"), "community", method, C, n_iter, burnin, a0, b0, seed,
                       sampler)
            print(f"{name:14s} C={C} {sampler:5s} {line}", flush=True)


if __name__ == "__main__":
    main()
