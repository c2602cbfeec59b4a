"""The Bessel draw of the private count update, on the parameters it meets in a fit.

    python bench/bench_bessel.py [--size 300] [--sweeps 10] [--repeats 7]

Runs ``--sweeps`` sweeps of the ``private`` sampler on the light and heavy-tailed cases of
``bench_kernels.py`` (``--size`` x ``--size``, K = 50) and collects each cell's
``(nu, a) = (|y~|, 2 sqrt((mu + lam+) lam-))``. Then, single-threaded and compiled, the
median nanoseconds per draw of ``bessel_sample_nb`` on all cells, on the mode-0 cells
(``(a/2)^2 < nu + 1``) and on the others, of the former mode-0 draw (the normalizing series
summed, then inversion) on the mode-0 cells, and of a uniform (the xoshiro stream); and the
ratios. Medians of ``--repeats`` runs in one process: compare ratios, not absolute times, on
a loaded machine.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).parent))
import bench_kernels

from lppf._numba import rng_state, threads, uniform
from lppf.distributions import _chop_down, _series_sum, bessel_sample_nb
from lppf.mcmc.pmf import allocate, initial_state, update_counts, update_factors


@njit
def _series_mode_zero(nu, a, rs):
    """The former mode-0 draw: accept 0 against a bound, else invert against the series."""
    q = 0.25 * a * a
    u = uniform(rs)
    t1 = q / (nu + 1.0)
    if u * (1.0 + t1 / (1.0 - 0.5 * q / (nu + 2.0))) < 1.0:
        return 0
    return _chop_down(u * _series_sum(nu, q, 0.0), 0.0, 1.0, nu, q, 0.0, math.inf)


@njit
def _draw_all(nu, a, seed, kind):
    rs = rng_state(seed)
    total = 0.0
    for i in range(nu.size):
        if kind == 0:
            total += bessel_sample_nb(nu[i], a[i], rs)
        elif kind == 1:
            total += _series_mode_zero(nu[i], a[i], rs)
        else:
            total += uniform(rs)
    return total


def cell_parameters(case: str, size: int, sweeps: int) -> tuple[np.ndarray, np.ndarray]:
    """(nu, a) of every cell after ``sweeps`` sweeps of the private sampler on ``case``."""
    bench_kernels.N = size
    data, _ = bench_kernels.make_case(case)
    rng = np.random.default_rng(1)
    state = initial_state(data, "private", bench_kernels.K, rng)
    mu = np.empty(data.Y.shape)
    for _ in range(sweeps):
        update_counts(state, data, rng, mu)
        Y_DK, Y_KV, _ = allocate(state, data, rng)
        update_factors(state, Y_DK, Y_KV, None, 0.1, 1.0, data.fix, rng)
    mu = state.Theta @ state.Phi
    nu = np.abs(state.Ytil).astype(np.float64).ravel()
    return nu, (2.0 * np.sqrt((mu + state.lam_plus) * state.lam_minus)).ravel()


def ns_per_draw(nu: np.ndarray, a: np.ndarray, kind: int, repeats: int) -> float:
    _draw_all(nu[:2], a[:2], 0, kind)  # compile
    times = []
    for r in range(repeats):
        tic = time.perf_counter()
        _draw_all(nu, a, r, kind)
        times.append(time.perf_counter() - tic)
    return float(np.median(times)) / max(nu.size, 1) * 1e9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=300)
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    for case in ("light", "heavy"):
        with threads(2):
            nu, a = cell_parameters(case, args.size, args.sweeps)
        zero = 0.25 * a * a < nu + 1.0
        groups = {"all": np.ones(nu.size, bool), "mode 0": zero, "mode > 0": ~zero}
        with threads(1):
            ns_u = ns_per_draw(nu, a, 2, args.repeats)
            print(f"{case}: {nu.size} cells, {zero.mean():.0%} with mode 0; "
                  f"a uniform {ns_u:.1f} ns")
            for name, sel in groups.items():
                n_, a_ = np.ascontiguousarray(nu[sel]), np.ascontiguousarray(a[sel])
                ns = ns_per_draw(n_, a_, 0, args.repeats)
                print(f"  {name:9s} bessel_sample_nb {ns:6.1f} ns/draw ({ns / ns_u:4.1f} uniforms)")
                if name == "mode 0":
                    old = ns_per_draw(n_, a_, 1, args.repeats)
                    print(f"  {name:9s} series draw      {old:6.1f} ns/draw ({old / ns_u:4.1f} "
                          f"uniforms); ratio series / bessel_sample_nb {old / ns:.2f}")


if __name__ == "__main__":
    main()
