"""Geweke's "getting it right" test as an assertion, reusable for any sampler.

The forward simulator draws (parameters, latents, data) from the joint. The successive-
conditional simulator alternates one sweep of the sampler (latents | data) with fresh data
(data | latents). If the sampler is right, both leave the joint invariant, so every test
statistic has the same mean under both. Each chain starts from an independent forward draw
(so it starts in stationarity and needs no burn-in) and contributes the mean of the statistics
over its steps: chain means are independent, which accounts for autocorrelation. The z-test
uses a Bonferroni threshold over the statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats


def geweke_parts(forward: Callable[[np.random.Generator], Any],
                 step: Callable[[Any, np.random.Generator], Any],
                 statistics: Callable[[Any], np.ndarray], *, n_forward: int, n_chains: int,
                 n_steps: int, seed: int) -> np.ndarray:
    """(4, n_statistics): the forward mean, the successive-conditional mean and their squared
    standard errors. ``step`` may update the state in place; it must return the new state."""
    rng = np.random.default_rng(seed)
    F = np.array([statistics(forward(rng)) for _ in range(n_forward)])
    G = np.empty((n_chains, F.shape[1]))
    for c in range(n_chains):
        state = forward(rng)
        total = np.zeros(F.shape[1])
        for _ in range(n_steps):
            state = step(state, rng)
            total += statistics(state)
        G[c] = total / n_steps
    return np.stack([F.mean(axis=0), G.mean(axis=0), F.var(axis=0, ddof=1) / n_forward,
                     G.var(axis=0, ddof=1) / n_chains])


def z_scores(parts: np.ndarray) -> np.ndarray:
    """(mean forward - mean successive-conditional) / standard error from
    :func:`geweke_parts`, one per statistic."""
    f, g, vf, vg = parts
    return (f - g) / np.sqrt(vf + vg)


def geweke_z(forward: Callable[[np.random.Generator], Any],
             step: Callable[[Any, np.random.Generator], Any],
             statistics: Callable[[Any], np.ndarray], **kwargs) -> np.ndarray:
    """:func:`z_scores` of :func:`geweke_parts` (same arguments)."""
    return z_scores(geweke_parts(forward, step, statistics, **kwargs))


def assert_geweke(z: np.ndarray, names: Sequence[str], level: float = 0.01) -> None:
    """Fail if any |z| exceeds the two-sided Bonferroni threshold at family-wise ``level``."""
    threshold = stats.norm.isf(level / (2 * len(z)))
    report = ", ".join(f"{n}={v:+.2f}" for n, v in zip(names, z, strict=True))
    assert np.all(np.isfinite(z)), report
    assert np.max(np.abs(z)) < threshold, f"|z| >= {threshold:.2f}: {report}"
