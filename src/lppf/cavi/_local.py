"""Local (per-cell) factors of CAVI, one class per method.

A model exposes ``slots(m)`` (the G[.] arrays whose multilinear product is
S = sum_k G[mu_k]), ``rate_sum(m, cells)`` (S evaluated from those arrays, dense or at
``(rows, cols)``), ``mean_mu(m)`` and ``var_mu(m)``. ``refresh(model, m, mean_mu=None)``
makes the local factors optimal given the current global ones and returns R with E[y_nk] =
R_n G[mu_nk], dense (n_rows, n_cols) or sparse; ``mean_mu``, E[mu] under ``m`` when the
caller has it, spares the paper's local step a product.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy import special

from lppf import cells, noise_conditional
from lppf.expectations import TINY, collapsed_refresh, private_local

DENSE_FRACTION = 0.1  # share of non-zero cells above which observed counts are handled densely


class _Local:
    """Shared state: which G[.] the allocation was computed with, for stale ELBO terms."""

    has_elbo = True
    cells: tuple[np.ndarray, np.ndarray] | None = None

    def __init__(self, Y: np.ndarray, alpha: np.ndarray, mask: np.ndarray):
        self.Y, self.mask = Y, mask
        self.alpha = np.broadcast_to(alpha, Y.shape)
        self.slots_u: tuple[np.ndarray, ...] = ()
        self.S_u = np.empty(0)
        self.Ey = np.empty(0)
        self.loglik = math.nan
        self.y_hat: np.ndarray | None = None

    def correction(self, model, m) -> float:
        """sum_n E[y_n] sum_k pi_nk (E ln G-terms - ln G_u-terms): zero when fresh."""
        total = np.zeros_like(self.S_u)
        names = model.slot_names
        for j, (name, g_u) in enumerate(zip(names, self.slots_u, strict=True)):
            delta = m[name].elog - np.log(g_u)
            slots = list(self.slots_u)
            slots[j] = g_u * delta
            total += model.rate_sum(slots, self.cells)
        return float(np.sum(self.Ey * total / np.maximum(self.S_u, TINY)))

    def data_elbo(self, model, m, stale: bool = False) -> float:
        """E_q[ln p(y~, y_k | factors)] - E_q[ln q(local)]; ``stale`` adds the correction for
        global factors updated since the last refresh."""
        if not self.has_elbo:
            return math.nan
        value = self.loglik - model.expected_rate_total(m)
        return value + self.correction(model, m) if stale else value


class CountsLocal(_Local):
    """Observed counts (nonprivate, naive). Sparse data: only the non-zero unmasked cells are
    allocated; above ``DENSE_FRACTION`` non-zero cells dense matrix products are faster."""

    def __init__(self, Y: np.ndarray, alpha: np.ndarray, mask: np.ndarray):
        super().__init__(Y, alpha, mask)
        counted = (Y > 0) & ~mask
        if counted.mean() > DENSE_FRACTION:
            self.y = np.where(counted, Y, 0).astype(np.float64)
        else:
            rows, cols = np.nonzero(counted)
            self.cells = (rows.astype(np.int64), cols.astype(np.int64))
            self.y = Y[rows, cols].astype(np.float64)
        self.Ey = self.y
        self.log_fact = float(special.gammaln(self.y + 1.0).sum())

    def refresh(self, model, m, mean_mu=None):
        self.slots_u = model.slots(m)
        self.S_u = np.maximum(model.rate_sum(self.slots_u, self.cells), TINY)
        self.loglik = float(np.sum(self.y * np.log(self.S_u))) - self.log_fact
        R = self.y / self.S_u
        return R if self.cells is None else sp.csr_array((R, self.cells), shape=self.Y.shape)


class CollapsedLocal(_Local):
    """Exact optimal q(y) ∝ S^y / y! alpha^|y~ - y| (private-collapsed), every unmasked cell."""

    def refresh(self, model, m, mean_mu=None):
        self.slots_u = model.slots(m)
        self.S_u = model.rate_sum(self.slots_u, None)  # floored where used
        self.Ey, R, self.loglik = collapsed_refresh(self.Y, self.alpha, self.S_u, self.mask)
        self.y_hat = self.Ey
        return R


class NoiseLocal(_Local):
    """Exact optimal q(y) ∝ S^y / y! p(y~ - y) (private-collapsed) under the discrete Gaussian
    or Skellam noise of ``noise`` (:class:`lppf.noise_conditional.Tables`), every unmasked
    cell: E[y] and ln Z by :func:`lppf.cells.local`."""

    def __init__(self, Y: np.ndarray, alpha: np.ndarray, mask: np.ndarray,
                 noise: noise_conditional.Tables):
        super().__init__(Y, alpha, mask)
        self.noise = noise

    def refresh(self, model, m, mean_mu=None):
        self.slots_u = model.slots(m)
        self.S_u = model.rate_sum(self.slots_u, None)  # floored where used
        self.Ey, R, self.loglik = cells.local(self.Y, self.noise, self.S_u, self.mask)
        self.y_hat = self.Ey
        return R


class BesselLocal(_Local):
    """The paper's scheme (private): mode spike for m, lambda+- factors; no tractable ELBO."""

    has_elbo = False

    def __init__(self, Y: np.ndarray, alpha: np.ndarray, mask: np.ndarray):
        super().__init__(Y, alpha, mask)
        # q keeps rate 1/alpha; start at the prior mean alpha / (1 - alpha)
        prior_shape = 1.0 / (1.0 - self.alpha)
        self.shape_plus = prior_shape.copy()
        self.shape_minus = prior_shape.copy()

    def refresh(self, model, m, mean_mu=None):
        self.slots_u = model.slots(m)
        self.S_u = np.maximum(model.rate_sum(self.slots_u, None), TINY)
        mean_mu = model.mean_mu(m) if mean_mu is None else mean_mu
        R, self.Ey = private_local(self.Y, self.alpha, self.S_u, mean_mu, model.var_mu(m),
                                   self.shape_plus, self.shape_minus, self.mask)
        self.y_hat = self.Ey
        return R

    def variational(self) -> dict[str, np.ndarray]:
        alpha = self.alpha
        rate = np.divide(1.0, alpha, out=np.full(self.Y.shape, np.inf), where=alpha > 0)
        return {"lambda_plus_shape": self.shape_plus, "lambda_plus_rate": rate,
                "lambda_minus_shape": self.shape_minus, "lambda_minus_rate": rate.copy()}


LOCALS = {"nonprivate": CountsLocal, "naive": CountsLocal,
          "private-collapsed": CollapsedLocal, "private": BesselLocal}


def make_local(method: str, Y: np.ndarray, alpha: np.ndarray, mask: np.ndarray,
               mechanism: str = "geometric") -> _Local:
    """The local factors of ``method`` (:data:`LOCALS`; :class:`NoiseLocal` for
    private-collapsed under the discrete Gaussian or Skellam noise)."""
    if method == "private-collapsed" and mechanism != "geometric":
        return NoiseLocal(Y, alpha, mask, noise_conditional.tables(mechanism, alpha, Y))
    return LOCALS[method](Y, alpha, mask)
