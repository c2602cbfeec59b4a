"""Start-up of ``lppf fit`` against importing its dependencies.

    python bench/bench_startup.py [--runs 7]

Prints the median wall time of ``python -c "import numpy, scipy.sparse, numba"`` and of
``lppf fit`` on a privatized 20 x 30 matrix (K = 3, 20 iterations: the run is start-up), and
their ratio. The numba cache is warmed by one untimed fit first. Timings on a shared machine
are noisy: compare medians from one run of this script.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BASELINE = [sys.executable, "-c", "import numpy, scipy.sparse, numba"]


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
        _wall(fit)  # warm the numba cache
        base, lppf = [], []
        for _ in range(args.runs):  # interleaved, so that load changes hit both alike
            base.append(_wall(BASELINE))
            lppf.append(_wall(fit))
    b, f = statistics.median(base), statistics.median(lppf)
    print(f"import numpy, scipy.sparse, numba: {b:.3f} s (median of {args.runs})")
    print(f"lppf fit 20 x 30, K=3, 20 iterations: {f:.3f} s (median of {args.runs})")
    print(f"ratio: {f / b:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
