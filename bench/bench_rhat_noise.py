"""How many saved draws per chain the cells' R-hat needs, for chains that mix perfectly.

A fit meets the criterion only if the R-hat of every one of its ``N_CELLS`` diagnosed cells
is at most ``RHAT_CELL_MAX`` (:mod:`lppf.diagnostics`). For 4 chains of independent normal
draws, prints the median worst R-hat over the cells and the share of fits whose worst cell
meets the bound, by saved draws per chain: the floor below which a fit misses the criterion
by chance however well it mixes. ``python bench/bench_rhat_noise.py [fits]``
"""

from __future__ import annotations

import sys

import numpy as np

from lppf.diagnostics import MIN_CHAINS, N_CELLS, RHAT_CELL_MAX, rhat

fits = int(sys.argv[1]) if len(sys.argv) > 1 else 100
rng = np.random.default_rng(0)
print(f"{'draws per chain':>16} {'median worst R-hat':>19} {'share <= ' + str(RHAT_CELL_MAX):>14}")
for draws in (10, 25, 50, 100, 150, 250, 400):
    worst = np.array([max(rhat(rng.normal(size=(MIN_CHAINS, draws))) for _ in range(N_CELLS))
                      for _ in range(fits)])
    print(f"{draws:>16} {np.median(worst):>19.4f} {np.mean(worst <= RHAT_CELL_MAX):>14.2f}")
