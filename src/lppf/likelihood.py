"""Log likelihood of privatized counts: ``y ~ Pois(mu)``, ``y~ = y + tau``, ``tau ~ 2Geo(alpha)``.

``p(y~ | mu) = sum_{y >= 0} Pois(y; mu) c alpha^|y~ - y|``, ``c = (1 - alpha)/(1 + alpha)``.
With ``t = y~`` the sum splits into two truncated Poisson pieces:

* ``y <= t``: ``Pois(y; mu) alpha^(t - y) = alpha^t e^(mu/alpha - mu) Pois(y; mu/alpha)``,
  summing to ``alpha^t e^(mu/alpha - mu) P(Y <= t)``, ``Y ~ Pois(mu/alpha)``;
* ``y > t``: ``Pois(y; mu) alpha^(y - t) = alpha^-t e^(mu alpha - mu) Pois(y; mu alpha)``,
  summing to ``alpha^-t e^(mu alpha - mu) P(Y > t)``, ``Y ~ Pois(mu alpha)``;

both evaluated in log space (``scipy.stats.poisson.logcdf``/``logsf``) and added with
``logaddexp``. ``alpha = 0`` is the Poisson log pmf.

Also the log densities of the samplers' states, as numba kernels: the complete-data log
likelihood of true and privatized counts (:func:`count_loglik`, ``log Pois(y; mu) +
log 2Geo(y~ - y; alpha)``) and the gamma log prior (:func:`gamma_logpdf_sum`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange
from scipy import stats

from lppf._numba import CHUNK, at, at_most, chunk_partials, n_chunks, total

_LGAMMA = np.array([math.lgamma(y + 1.0) for y in range(1024)])  # log y! for small y


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


# ---------------------------------------------------------------- numba kernels


@njit(cache=True, inline="always")
def log_factorial(y):
    """log y! (table for small y)."""
    return _LGAMMA[y] if y < len(_LGAMMA) else math.lgamma(y + 1.0)


@njit(cache=True, inline="always")
def poisson_logpmf(y, mu):
    """log Pois(y; mu) = y log mu - mu - log y! (mu = 0: 0 for y = 0, else -inf)."""
    if y == 0:
        return -mu
    if mu <= 0.0:
        return -math.inf
    return y * math.log(mu) - mu - log_factorial(y)


@njit(cache=True, parallel=True)
def _count_loglik_chunks(Y, mu, mask, Ytil, log_alpha, log_norm, poisson, out_X):
    D, V = Y.shape
    per_column = log_alpha.shape[1] > 1
    for c in prange(len(out_X)):
        acc = 0.0
        for i in range(c * CHUNK, min((c + 1) * CHUNK, D)):
            if per_column:
                for j in range(V):
                    if not mask[i, j]:
                        if poisson:
                            acc += poisson_logpmf(Y[i, j], mu[i, j])
                        acc += at(log_norm, i, j)
                        d = abs(Ytil[i, j] - Y[i, j])
                        if d != 0:
                            acc += d * at(log_alpha, i, j)
                continue
            # one alpha for the row: sum the Poisson terms and |y~ - y| over the row first
            pois, tau, n_obs = 0.0, 0, 0
            for j in range(V):
                if not mask[i, j]:
                    y = Y[i, j]
                    if poisson:
                        pois += poisson_logpmf(y, mu[i, j])
                    tau += abs(Ytil[i, j] - y)
                    n_obs += 1
            acc += pois + n_obs * at(log_norm, i, 0)
            if tau != 0:
                acc += tau * at(log_alpha, i, 0)
        out_X[c] = acc


def count_loglik(Y: np.ndarray, mu: np.ndarray | None, mask: np.ndarray,
                 Ytil: np.ndarray | None = None, alpha: np.ndarray | None = None) -> float:
    """``sum over unmasked cells of log Pois(y; mu) + log 2Geo(y~ - y; alpha)``.

    ``Y``, ``Ytil`` (D, V) integers, ``mu`` (D, V), ``mask`` (D, V) bool (True: skipped),
    ``alpha`` broadcastable 2-d in [0, 1); ``Ytil = None``: the Poisson term only,
    ``mu = None``: the noise term only. The noise term is
    ``log((1 - alpha)/(1 + alpha)) + |y~ - y| log alpha`` (alpha = 0: 0 if y~ = y, else
    -inf), as :func:`lppf.mechanisms.noise_logpmf`. Partial sums per fixed chunk of rows
    (:func:`lppf._numba.chunk_partials`): the same result for any thread count."""
    if Ytil is None:
        Ytil, alpha = Y, np.zeros((1, 1))
    alpha = np.asarray(alpha, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_alpha = np.log(alpha)
    log_norm = np.log1p(-alpha) - np.log1p(alpha)
    out_X = chunk_partials(n_chunks(len(Y)))
    poisson = mu is not None
    with at_most(len(out_X)):
        _count_loglik_chunks(Y, mu if poisson else np.zeros((1, 1)), mask, Ytil, log_alpha,
                             log_norm, poisson, out_X)
    return float(total(out_X))


def gamma_logpdf_sum(X: np.ndarray, shape: float, rate: float) -> float:
    """``sum log Gamma(x; shape, rate)`` over the entries of ``X`` (x > 0)."""
    const = shape * math.log(rate) - math.lgamma(shape)
    return float((shape - 1.0) * np.log(X).sum() - rate * X.sum() + X.size * const)
