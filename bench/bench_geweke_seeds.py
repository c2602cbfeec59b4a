"""The community model's Geweke test over many seeds: is a shift of its z-scores a bias of
the sampler, or of the z-score itself?

Each seed runs the test of ``tests/test_noise_gibbs.py`` (10,000 forward draws, 300 chains of
30 steps). Per statistic it prints the mean over seeds of the per-seed z-score, and the t of
the pooled differences ``mean forward - mean successive-conditional`` over seeds. The pooled
difference has mean 0 when the sampler is exact; the per-seed z need not: for a right-skewed
statistic the standard error grows with the chains' mean, which shifts z upwards.

    python bench/bench_geweke_seeds.py --seeds 400 560

It runs the installed (or ``PYTHONPATH``'s) ``lppf``: to try another allocation switch,
edit ``_UNITS_PER_C`` in a copy of ``src`` and put that copy first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from geweke import z_scores
from test_noise_gibbs import CM_NAMES, CM_PARAMS, cm_geweke_parts

from lppf.mcmc import community as cm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs=2, default=(400, 560), metavar=("FROM", "TO"))
    parser.add_argument("--mechanism", default="discrete-gaussian", choices=sorted(CM_PARAMS))
    args = parser.parse_args()
    fitted = CM_PARAMS[args.mechanism]
    P = np.array([cm_geweke_parts(args.mechanism, fitted, s) for s in range(*args.seeds)])
    d = P[:, 0] - P[:, 1]
    z = z_scores(np.moveaxis(P, 1, 0))
    pooled_t = d.mean(axis=0) / (d.std(axis=0, ddof=1) / np.sqrt(len(d)))
    print(f"lppf {cm.__file__}, _UNITS_PER_C {cm._UNITS_PER_C}, {args.mechanism}, "
          f"seeds {args.seeds[0]}-{args.seeds[1] - 1}")
    print(f"{'statistic':>14} {'mean z':>7} {'pooled t':>9}")
    for name, zm, t in zip(CM_NAMES, z.mean(axis=0), pooled_t, strict=True):
        print(f"{name:>14} {zm:7.2f} {t:9.2f}")
    print(f"seeds with max |z| >= 3.32: {int((np.abs(z).max(axis=1) >= 3.32).sum())} of {len(z)}")


if __name__ == "__main__":
    main()
