"""Hamiltonian Monte Carlo for the community model of fixed counts (``naive``, ``nonprivate``).

With the counts fixed, the posterior of the factors is smooth once the allocation is summed
out: in ``x = (log Theta_VC, log Pi_CC)``,

    log p(x | y) = sum_(ij observed) (y_ij log mu_ij - mu_ij - log y_ij!)
                   + sum (a0 x - b0 exp(x))  + const,

the prior ``Gamma(a0, b0)`` of every factor with the Jacobian of the log. Its gradient, with
``R_ij = y_ij / mu_ij - 1`` on observed cells (0 elsewhere), ``A = Theta Pi`` and
``B = Theta Pi^T``: ``d/d theta_ic = (R B + R^T A)_ic``, ``d/d pi_cd = (Theta^T R Theta)_cd``,
each times the factor (the chain rule of the log) plus ``a0 - b0 exp(x)``.

A transition is ``n_leapfrog`` leapfrog steps of a step size jittered by +-10% around ``eps``
with a diagonal metric, and the Metropolis test of the Hamiltonian: exact for any step size
and metric. Both are tuned during burn-in only (:class:`Adaptation`), so every sweep after it
applies one fixed kernel. The Gibbs sampler's data augmentation couples the factors to an
allocation that they nearly determine; this update moves them without it (docs/findings.md,
"The community model's fixed-count chains").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

N_LEAPFROG = 32  # leapfrog steps per transition
TARGET_ACCEPT = 0.8  # the step size's target of the mean acceptance probability
JITTER = 0.1  # the step size of a transition is eps times U(1 - JITTER, 1 + JITTER)
_X_MAX = 300.0  # log factors beyond this are rejected (exp overflows products of three)


@njit(cache=True, nogil=True)
def community_logp(x, Y, obs, a0, b0, V, C, grad, value=True):
    """``(log p(x | y) + const, log-likelihood of the counts without -log y!)`` at ``x``
    (V C + C C,) and its gradient into ``grad``; ``-inf`` when ``x`` leaves the range or a
    count gets a zero rate. The rates ``mu = A Theta^T`` and the gradient's sums are dense
    products (BLAS), the cells one pass; ``value=False`` skips the logarithms and returns 0
    for both (the leapfrog steps inside a trajectory)."""
    for n in range(x.shape[0]):
        if not abs(x[n]) <= _X_MAX:
            return -np.inf, -np.inf
    T = np.exp(x[:V * C]).reshape(V, C)
    P = np.exp(x[V * C:]).reshape(C, C)
    A = T @ P  # d mu_ij / d theta_jd = A_id
    B = T @ P.T  # d mu_ij / d theta_ic = B_jc
    M = A @ T.T
    R = np.zeros((V, V))  # y / mu - 1 on observed cells
    ll = 0.0
    for i in range(V):
        for j in range(V):
            if not obs[i, j]:
                continue
            mu, y = M[i, j], Y[i, j]
            if mu <= 0.0:
                if y > 0:
                    return -np.inf, -np.inf
                R[i, j] = -1.0
                continue
            if value:
                ll += (y * math.log(mu) if y > 0.0 else 0.0) - mu
            R[i, j] = y / mu - 1.0
    gT = R @ B + R.T @ A
    gP = T.T @ (R @ T)  # d / d pi_cd = (Theta^T R Theta)_cd
    lp = ll
    for n in range(x.shape[0]):
        e = math.exp(x[n])
        lp += a0 * x[n] - b0 * e
        grad[n] = a0 - b0 * e
    if not value:
        lp = ll = 0.0
    for i in range(V):
        for c in range(C):
            grad[i * C + c] += gT[i, c] * T[i, c]
    for c in range(C):
        for d in range(C):
            grad[V * C + c * C + d] += gP[c, d] * P[c, d]
    return lp, ll


@njit(cache=True, nogil=True)
def log_factorial_sum(Y, obs):
    """sum over observed cells of log y!"""
    total = 0.0
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            if obs[i, j]:
                total += math.lgamma(Y[i, j] + 1.0)
    return total


@njit(cache=True, nogil=True)
def transition(x, lp, grad, eps, inv_metric, n_leapfrog, Y, obs, a0, b0, V, C, normals, u):
    """One HMC transition from ``x`` (log density ``lp``, gradient ``grad``), momenta
    ``normals`` * sqrt(1 / inv_metric), Metropolis uniform ``u``: returns (x, lp, grad, ll,
    acceptance probability); ``ll`` nan when the state did not move."""
    p = normals / np.sqrt(inv_metric)
    x1 = x.copy()
    g1 = grad.copy()
    kinetic0 = 0.5 * np.sum(p * p * inv_metric)
    p1 = p + 0.5 * eps * g1
    lp1, ll1 = -np.inf, -np.inf
    for step in range(n_leapfrog):
        x1 += eps * inv_metric * p1
        lp1, ll1 = community_logp(x1, Y, obs, a0, b0, V, C, g1, step == n_leapfrog - 1)
        if not math.isfinite(lp1):
            break
        p1 += (eps if step < n_leapfrog - 1 else 0.5 * eps) * g1
    if not math.isfinite(lp1):
        return x, lp, grad, np.nan, 0.0
    log_ratio = lp1 - 0.5 * np.sum(p1 * p1 * inv_metric) - (lp - kinetic0)
    accept = 1.0 if log_ratio >= 0.0 else math.exp(log_ratio) if math.isfinite(log_ratio) else 0.0
    if u < accept:
        return x1, lp1, g1, ll1, accept
    return x, lp, grad, np.nan, accept


class Adaptation:
    """Tuning of the step size and the diagonal metric over a burn-in of ``burnin``
    transitions (Stan's schedule, scaled): the first 15% and the last 10% tune the step size
    alone; the windows between, each twice as long as the one before, estimate the
    posterior variance of ``x``, which becomes the inverse metric at the window's end
    (shrunk towards 1e-3, Stan's regularization). The step size: a stochastic approximation
    ``log eps += (accept - TARGET_ACCEPT) / sqrt(t)`` (``t`` the transitions since the last
    metric), which moves it by a bounded factor per transition however short the burn-in;
    once a metric is set, and after burn-in, the step size is the geometric mean of its
    values over the second half of the transitions since the last metric."""

    def __init__(self, burnin: int, eps: float):
        self.burnin, self.n = burnin, 0
        first, last = int(0.15 * burnin), int(0.1 * burnin)
        self.ends, end, size = [], first, max((burnin - first - last) // 7, 1)
        while burnin >= 20 and end + size <= burnin - last:
            if end + 3 * size > burnin - last:  # the last window runs to the final phase
                size = burnin - last - end
            end += size
            self.ends.append(end)
            size *= 2
        self.first = first
        self.log_eps, self.history = math.log(eps), []
        self.window: list[np.ndarray] = []

    def _settled(self) -> float:
        """The geometric mean of the step sizes over the second half of the history."""
        tail = self.history[len(self.history) // 2:]
        return math.exp(sum(tail) / len(tail)) if tail else math.exp(self.log_eps)

    def update(self, accept: float, x: np.ndarray, eps: float, inv_metric: np.ndarray
               ) -> tuple[float, np.ndarray]:
        """After one burn-in transition: the next (eps, inv_metric)."""
        self.n += 1
        self.log_eps += (accept - TARGET_ACCEPT) / math.sqrt(len(self.history) + 1.0)
        self.history.append(self.log_eps)
        if self.first < self.n <= (self.ends[-1] if self.ends else 0):
            self.window.append(x.copy())
        if self.n in self.ends:
            w = np.array(self.window)
            k = len(w)
            inv_metric = (k / (k + 5.0)) * w.var(axis=0) + 1e-3 * (5.0 / (k + 5.0))
            self.window = []
            self.log_eps, self.history = math.log(self._settled()), []
        if self.n >= self.burnin:
            return self._settled(), inv_metric
        return math.exp(self.log_eps), inv_metric


def initial_step(x, lp, grad, inv_metric, Y, obs, a0, b0, V, C) -> float:
    """A first step size: halved or doubled until one leapfrog step's acceptance
    probability crosses 1/2 (Stan's heuristic), from 0.1."""
    eps, g = 0.1, np.empty_like(grad)
    direction = 0
    for _ in range(50):
        p = 1.0 / np.sqrt(inv_metric)  # a fixed unit momentum per coordinate's scale
        p1 = p + 0.5 * eps * grad
        x1 = x + eps * inv_metric * p1
        lp1, _ = community_logp(x1, Y, obs, a0, b0, V, C, g)
        p1 = p1 + 0.5 * eps * g
        h = lp1 - 0.5 * np.sum(p1 * p1 * inv_metric) - (lp - 0.5 * np.sum(p * p * inv_metric))
        up = math.isfinite(h) and h > math.log(0.5)
        if direction == 0:
            direction = 1 if up else -1
        elif (direction == 1) != up:
            break
        eps = eps * 2.0 if direction == 1 else eps / 2.0
    return eps
