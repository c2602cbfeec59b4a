"""Seconds per Langevin move on random problems whose noise hides a heavy row of counts.

    python bench/bench_far_moves.py [--problems 300] [--seed 2]

Each problem: a community network (V 3..29 actors, C 1..3) or a PMF matrix (3..39 x 3..39,
K 1..4), Skellam, discrete Gaussian or geometric noise of random level, one actor's (row's)
counts raised by up to 3000, factors drawn over e^-6 .. e^3. Three calls of
:class:`lppf.mcmc.marginal.CommunityMoves` (:class:`~lppf.mcmc.marginal.Moves`) on every
factor; the line gives the slowest call and its problem, and the median. Proposals whose drift
moves a factor by e^20 or more are rejected unevaluated; without that bound, the walks of such
proposals' pmfs did not return within minutes on some of these problems. One thread.
"""

from __future__ import annotations

import argparse
import time
import types

import numpy as np

from lppf._numba import threads
from lppf.mcmc.marginal import CommunityMoves, Moves

MECHANISMS = ("skellam", "discrete-gaussian", "geometric")


def problem(rng: np.random.Generator, model: str, mechanism: str):
    """A random moves object and its factors (see the module docstring)."""
    level = (float(rng.uniform(0.3, 0.99)) if mechanism == "geometric"
             else float(np.exp(rng.uniform(np.log(0.1), np.log(500)))))
    heavy = int(np.exp(rng.uniform(0.0, np.log(3000.0))))
    if model == "community":
        V, C = int(rng.integers(3, 30)), int(rng.integers(1, 4))
        Y = np.rint(rng.normal(0.0, 10.0, (V, V))).astype(np.int64)
        i = rng.integers(V)
        Y[i, :] += heavy
        Y[:, i] += heavy
        p = types.SimpleNamespace(Ytil_VV=Y, alpha_VV=np.full((V, V), level),
                                  mechanism=mechanism, obs_VV=np.ones((V, V), bool),
                                  fix_theta=False, fix_pi=False)
        factors = np.exp(rng.uniform(-6, 3, (V, C))), np.exp(rng.uniform(-4, 2, (C, C)))
        return CommunityMoves(p), factors, (mechanism, f"{V} actors, C {C}", level, heavy)
    R, V, K = (int(x) for x in rng.integers((3, 3, 1), (40, 40, 5)))
    Y = np.rint(rng.normal(0.0, 10.0, (R, V))).astype(np.int64)
    Y[rng.integers(R), :] += heavy
    data = types.SimpleNamespace(Y=Y, alpha=np.full((R, V), level), mask=np.zeros((R, V), bool),
                                 mechanism=mechanism, fix={})
    factors = np.exp(rng.uniform(-6, 3, (R, K))), np.exp(rng.uniform(-4, 2, (K, V)))
    return Moves(data), factors, (mechanism, f"{R} x {V}, K {K}", level, heavy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    with threads(1):
        for model in ("community", "pmf"):
            for mechanism in MECHANISMS:  # compile first
                moves, (A, B), _ = problem(rng, model, mechanism)
                moves(A, B, 0.1, 0.1, np.random.default_rng(0))
            times, worst = [], None
            for n in range(args.problems):
                moves, (A, B), what = problem(rng, model, MECHANISMS[n % 3])
                for call in range(3):
                    start = time.perf_counter()
                    moves(A, B, 0.1, 0.1, np.random.default_rng([n, call]))
                    times.append(time.perf_counter() - start)
                    if times[-1] == max(times):
                        worst = what
            print(f"{model}: {args.problems} problems, slowest call {max(times):.4f} s "
                  f"({worst[0]}, {worst[1]}, level {worst[2]:.3g}, heavy row +{worst[3]}), "
                  f"median {np.median(times) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
