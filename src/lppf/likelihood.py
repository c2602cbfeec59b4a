"""Log likelihood of privatized counts: ``y ~ Pois(mu)``, ``y~ = y + tau``, ``tau ~ 2Geo(alpha)``.

``p(y~ | mu) = sum_{y >= 0} Pois(y; mu) c alpha^|y~ - y|``, ``c = (1 - alpha)/(1 + alpha)``.
With ``t = y~`` the sum splits into two truncated Poisson pieces:

* ``y <= t``: ``Pois(y; mu) alpha^(t - y) = alpha^t e^(mu/alpha - mu) Pois(y; mu/alpha)``,
  summing to ``alpha^t e^(mu/alpha - mu) P(Y <= t)``, ``Y ~ Pois(mu/alpha)``;
* ``y > t``: ``Pois(y; mu) alpha^(y - t) = alpha^-t e^(mu alpha - mu) Pois(y; mu alpha)``,
  summing to ``alpha^-t e^(mu alpha - mu) P(Y > t)``, ``Y ~ Pois(mu alpha)``;

both evaluated in log space (``scipy.stats.poisson.logcdf``/``logsf``) and added with
``logaddexp``. ``alpha = 0`` is the Poisson log pmf.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def _series(first: np.ndarray, ratio, bound: np.ndarray) -> np.ndarray:
    """log sum_{j>=0} prod_{i<j} ratio(i) per cell: ``ratio(i)`` (cells, i) is below
    ``bound`` < 1, so the terms fall geometrically; summed until they drop below e^-40 of the
    first (at most ``first`` terms, the sum's length where finite, and 10^5)."""
    with np.errstate(divide="ignore"):
        n_terms = np.ceil(-40.0 / np.log(np.minimum(bound, 1.0 - 1e-9)))
    n_terms = int(min(np.max(np.minimum(n_terms, first)), 10**5))
    ratios = ratio(np.arange(max(n_terms - 1, 0)))
    terms = np.cumprod(ratios, axis=1).sum(axis=1)
    return np.log1p(terms)


def _log_lower(t: np.ndarray, mu: np.ndarray, a: np.ndarray) -> np.ndarray:
    """log sum_{y=0..t} Pois(y; mu) a^(t - y) for t >= 0, a > 0.

    ``t log a + mu/a - mu + log P(Y <= t)``, ``Y ~ Pois(mu/a)``. Where that tail underflows
    (mu/a >> t) the sum is ``Pois(t; mu) sum_j prod_{i<j} (t - i) a / mu`` (j = 0..t).
    """
    lam = mu / a
    out = t * np.log(a) + lam - mu + stats.poisson.logcdf(t, lam)
    deep = ~np.isfinite(out)
    if deep.any():
        t, mu, lam = t[deep], mu[deep], lam[deep]
        out[deep] = stats.poisson.logpmf(t, mu) + _series(
            t + 1, lambda i: np.clip(t[:, None] - i, 0.0, None) / lam[:, None],
            np.maximum(t, 1.0) / lam)
    return out


def _log_upper(t: np.ndarray, mu: np.ndarray, a: np.ndarray) -> np.ndarray:
    """log sum_{y>t} Pois(y; mu) a^(y - t) for a > 0.

    ``-t log a + mu a - mu + log P(Y > t)``, ``Y ~ Pois(mu a)``. Where that tail underflows
    (mu a << t) the sum is ``a Pois(t+1; mu) sum_j prod_{i<j} mu a / (t + 2 + i)``.
    """
    lam = mu * a
    out = -t * np.log(a) + lam - mu + stats.poisson.logsf(t, lam)
    deep = np.isneginf(out) & (mu > 0)
    if deep.any():
        t, mu, a, lam = t[deep], mu[deep], a[deep], lam[deep]
        out[deep] = stats.poisson.logpmf(t + 1, mu) + np.log(a) + _series(
            np.full(t.shape, np.inf), lambda i: lam[:, None] / (t[:, None] + 2 + i),
            lam / (t + 2))
    return out


def privatized_logpmf(y_noisy, mu, alpha) -> np.ndarray:
    """log p(y~ | mu) of privatized counts, broadcast over ``y_noisy`` (integers, may be
    negative), ``mu >= 0`` and ``alpha`` in [0, 1)."""
    t, mu, alpha = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                         for x in (y_noisy, mu, alpha)))
    shape = t.shape
    t, mu, alpha = t.ravel(), mu.ravel(), alpha.ravel()
    out = np.asarray(stats.poisson.logpmf(t, mu), dtype=np.float64)  # alpha = 0
    noisy = alpha > 0
    t, mu, a = t[noisy], mu[noisy], alpha[noisy]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lower = np.full(t.shape, -np.inf)
        pos = t >= 0
        lower[pos] = _log_lower(t[pos], mu[pos], a[pos])
        upper = _log_upper(t, mu, a)
        out[noisy] = np.log1p(-a) - np.log1p(a) + np.logaddexp(lower, upper)
    return out.reshape(shape)[()]


__all__ = ["privatized_logpmf"]
