"""Throughput of the Bessel sampler kernel and of the geometric mechanism.

    python bench/bench_foundation.py [--draws 2000000] [--repeats 3]

Prints draws per second of ``bessel_sample_nb`` in a compiled single-threaded loop (compile
time excluded) and cells per second of ``privatize`` on a 1000 x 1000 matrix, seeded and
secure (by inversion, and by OpenDP when installed). Times are process CPU times (best of
``--repeats``), which are less disturbed than wall-clock times by other load on the machine.
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager

import numpy as np
from numba import njit

from lppf import mechanisms
from lppf._numba import rng_state
from lppf.distributions import bessel_mean, bessel_sample_nb, bessel_var
from lppf.mechanisms import privatize

GRID = [(0.0, 0.1), (1.0, 0.5), (3.0, 2.0), (0.0, 5.0), (10.0, 10.0), (0.0, 18.0),
        (0.0, 100.0), (1000.0, 10.0), (40.0, 400.0), (2.0, 1e4), (0.0, 1e5)]


@njit(cache=True)
def _draw_many(nu, a, n, seed):
    rs = rng_state(seed)
    total = 0
    for _ in range(n):
        total += bessel_sample_nb(nu, a, rs)
    return total


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    _draw_many(1.0, 1.0, 10, 0)  # compile
    print(f"{'nu':>8} {'a':>8} {'draws/s':>12} {'ns/draw':>8} {'z(mean)':>8}")
    for nu, a in GRID:
        n = args.draws
        sec = best_time(lambda nu=nu, a=a, n=n: _draw_many(nu, a, n, 1), args.repeats)
        z = (_draw_many(nu, a, n, 2) / n - bessel_mean(nu, a)) / np.sqrt(bessel_var(nu, a) / n)
        print(f"{nu:8g} {a:8g} {n / sec:12.3g} {1e9 * sec / n:8.1f} {z:8.2f}")

    Y = np.random.default_rng(0).poisson(1.0, size=(1000, 1000))
    print(f"\n{'privatize 1000 x 1000':<36} {'cells/s':>12}")
    for label, kwargs in [("seeded, scalar alpha", {"rng": 0}),
                          ("seeded, per-row alpha", {"rng": 0, "per_row": True}),
                          ("secure inversion, scalar alpha", {"opendp": False}),
                          ("secure inversion, per-row alpha", {"opendp": False, "per_row": True}),
                          ("secure OpenDP, scalar alpha", {"opendp": True}),
                          ("secure OpenDP, per-row alpha", {"opendp": True, "per_row": True})]:
        alpha = np.linspace(0.1, 0.9, 1000) if kwargs.pop("per_row", False) else 0.5
        opendp = kwargs.pop("opendp", None)
        if opendp and mechanisms._opendp() is None:
            print(f"{label:<36} {'(OpenDP not installed: lppf[secure])':>12}")
            continue
        sampler = mechanisms._opendp if opendp is not False else (lambda: None)
        with _sampler(sampler):
            sec = best_time(lambda alpha=alpha, kw=kwargs: privatize(Y, alpha, **kw),
                            args.repeats)
        print(f"{label:<36} {Y.size / sec:12.3g}")


@contextmanager
def _sampler(choose):
    """Secure noise from the sampler ``choose`` returns (None: inversion)."""
    saved = mechanisms._opendp
    mechanisms._opendp = choose
    try:
        yield
    finally:
        mechanisms._opendp = saved

if __name__ == "__main__":
    main()
