"""Start-up of ``lppf fit`` against importing its dependencies.

    python bench/bench_startup.py [--runs 7]

Prints the median wall time of ``python -c "import numpy, scipy.sparse, numba"``, of the same
import plus the first call of a trivial cached numba function (numba's one-time set-up of its
compiler, which any process that runs a compiled function pays: the floor of a fit), and of
``lppf fit`` on a privatized 20 x 30 matrix (K = 3, 20 iterations: the run is start-up), and
their ratios to the import. The numba caches are warmed by one untimed run of each first.
Then the median breakdown of the same fit inside one process (each phase's time on top of the
previous ones) and the heavy packages it imported. Timings on a shared machine are noisy:
compare medians from one run of this script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BASELINE = [sys.executable, "-c", "import numpy, scipy.sparse, numba"]
TRIVIAL = """from numba import njit


@njit(cache=True)
def one(x):
    return x + 1
"""
HEAVY = ("sklearn", "arviz", "pandas", "xarray", "matplotlib", "scipy.stats", "tqdm")
PHASES = """
import sys, time, json
t = [time.perf_counter()]
import numpy, scipy.sparse, numba
t.append(time.perf_counter())
from lppf.cli import build_parser
build_parser(("fit",))
t.append(time.perf_counter())
import lppf.mcmc.pmf
t.append(time.perf_counter())
from lppf.cli import main
main(sys.argv[1:])
t.append(time.perf_counter())
print(json.dumps({"times": [b - a for a, b in zip(t, t[1:])],
                  "heavy": [m for m in HEAVY if m in sys.modules]}))
"""
NAMES = ("import numpy, scipy.sparse, numba", "lppf fit's parser (lppf.cli, lppf.fitting)",
         "the backend module (lppf.mcmc.pmf)", "the fit: kernels loaded, run, diagnostics, save")


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        rng = np.random.default_rng(0)
        Y = rng.poisson(1.0, (20, 30))
        np.savez(d / "private.npz", Y_noisy=Y + rng.integers(-2, 3, Y.shape),
                 alpha=np.array(0.5))
        fit = [sys.executable, "-m", "lppf", "fit", str(d / "private.npz"), str(d / "fit.npz"),
               "--components", "3", "--iterations", "20", "--burnin", "10", "--thin", "10",
               "--seed", "0", "--quiet"]
        (d / "trivial.py").write_text(TRIVIAL)
        floor = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                 "import numpy, scipy.sparse, numba, trivial; trivial.one(1)", str(d)]
        _wall(fit)  # warm the numba caches
        _wall(floor)
        base, numba_floor, lppf = [], [], []
        for _ in range(args.runs):  # interleaved, so that load changes hit all alike
            base.append(_wall(BASELINE))
            numba_floor.append(_wall(floor))
            lppf.append(_wall(fit))
        phases = [_phases(fit[3:]) for _ in range(args.runs)]
    b, n, f = (statistics.median(x) for x in (base, numba_floor, lppf))
    print(f"import numpy, scipy.sparse, numba: {b:.3f} s (median of {args.runs})")
    print(f"  and a first numba call (the floor): {n:.3f} s, ratio {n / b:.2f}")
    print(f"lppf fit 20 x 30, K=3, 20 iterations: {f:.3f} s (median of {args.runs})")
    print(f"ratio: {f / b:.2f} (target <= 1.5)")
    print(f"in one process (median of {args.runs}):")
    for i, name in enumerate(NAMES):
        print(f"  {statistics.median(p['times'][i] for p in phases):6.3f} s  {name}")
    print(f"  heavy packages imported: {', '.join(phases[0]['heavy']) or 'none'}")


def _phases(fit_args: list[str]) -> dict:
    """The in-process breakdown of one ``lppf fit`` run (a fresh interpreter)."""
    code = f"HEAVY = {HEAVY!r}\n" + PHASES
    out = subprocess.run([sys.executable, "-c", code, *fit_args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
