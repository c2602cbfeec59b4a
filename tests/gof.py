"""Chi-square goodness of fit of integer draws against an exact pmf (scipy's convention)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def chisquare_pvalue(draws: np.ndarray, lo: int, pmf: np.ndarray, min_expected: float = 5.0,
                     ) -> float:
    """p-value of integer ``draws`` against ``pmf`` on the consecutive values ``lo, lo + 1,
    ...`` (it must hold all but a negligible mass). Neighbouring values are merged into bins
    of at least ``min_expected`` expected draws; draws outside the support count in the end
    bins."""
    draws = np.asarray(draws).ravel()
    expected = draws.size * np.asarray(pmf, dtype=np.float64)
    bins, b, acc = np.empty(expected.size, dtype=np.int64), 0, 0.0
    for i, e in enumerate(expected):
        bins[i], acc = b, acc + e
        if acc >= min_expected:
            b, acc = b + 1, 0.0
    if 0 < acc < min_expected:
        bins[bins == b] = b - 1
    exp_b = np.bincount(bins, expected)
    obs_b = np.bincount(bins[np.clip(draws - lo, 0, expected.size - 1)], minlength=exp_b.size)
    assert exp_b.size >= 2 and exp_b.min() >= min_expected, "too few draws for the support"
    return float(stats.chisquare(obs_b, exp_b * draws.size / exp_b.sum()).pvalue)
