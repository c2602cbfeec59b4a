"""Log densities of the samplers' states, as numba kernels (no scipy: a private MCMC fit
loads none).

The complete-data log likelihood of true and privatized counts (:func:`count_loglik`,
``log Pois(y; mu) + log 2Geo(y~ - y; alpha)``), the gamma log prior
(:func:`gamma_logpdf_sum`) and the scalar ``log y!`` and Poisson log pmf of the kernels.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from lppf._numba import CHUNK, at, at_most, chunk_partials, n_chunks, total

_LGAMMA = np.array([math.lgamma(y + 1.0) for y in range(1024)])  # log y! for small y


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


@njit(cache=True, parallel=True, nogil=True)
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
