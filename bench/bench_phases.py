"""Where the sweeps of one ``private-collapsed`` PMF fit go, phase by phase (stdout).

``python bench/bench_phases.py FILE [ITER] [K]``: one chain of ``ITER`` sweeps (default 300,
half of them burn-in, every 2nd saved) with K components (default 5) on the privatized file,
Gamma(1, 1) prior, one thread, after a first identical fit that compiles the kernels. Prints
the seconds of the whole fit (the EM start included) and of each phase of its sweeps, each
timed around its call: the Langevin moves (``lppf.mcmc.marginal.Moves``, where they run),
the count update, the allocation and the factor draws.
"""

from __future__ import annotations

import collections
import sys
import time
import warnings

from lppf.estimators import PoissonMF
from lppf.io import load_npz
from lppf.mcmc import marginal, pmf

PARAMS = ("alpha", "sigma", "mu")  # the noise parameter a privatized file carries
PHASES = {pmf: ("update_counts", "allocate", "update_factors"), marginal.Moves: ("__call__",)}


def _clock(f, name: str, seconds: collections.Counter):
    def wrapper(*args, **kwargs):
        tic = time.perf_counter()
        out = f(*args, **kwargs)
        seconds[name] += time.perf_counter() - tic
        return out
    return wrapper


def timed(seconds: collections.Counter) -> None:
    """Wrap each phase so that its seconds add up in ``seconds``."""
    for owner, names in PHASES.items():
        for name in names:
            setattr(owner, name, _clock(getattr(owner, name), name, seconds))


def fit(path: str, n_iter: int, k: int) -> float:
    z = load_npz(path)
    est = PoissonMF(k, method="private-collapsed", a0=1, b0=1, max_iter=n_iter,
                    burnin=n_iter // 2, thin=2, n_chains=1, random_state=1, threads=1,
                    mechanism=str(z.get("mechanism", "geometric")))
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(z["Y_noisy"], alpha=next(z[p] for p in PARAMS if p in z))
    return time.perf_counter() - tic


def main(argv: list[str]) -> None:
    path = argv[0]
    n_iter = int(argv[1]) if len(argv) > 1 else 300
    k = int(argv[2]) if len(argv) > 2 else 5
    seconds: collections.Counter = collections.Counter()
    timed(seconds)
    fit(path, n_iter, k)
    seconds.clear()
    total = fit(path, n_iter, k)
    names = {"__call__": "moves", "update_counts": "counts", "allocate": "allocation",
             "update_factors": "factors"}
    print(path)
    print(f"  fit {total:.2f} s; sweeps {sum(seconds.values()):.2f} s: "
          + ", ".join(f"{names[n]} {s:.2f}" for n, s in seconds.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
