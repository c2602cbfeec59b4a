"""CAVI for Poisson matrix factorization: Y_DV ~ Pois(Theta_DK Phi_KV), gamma priors."""

from __future__ import annotations

import math

import numpy as np

from lppf.cavi._loop import GammaModel, fit
from lppf.expectations import Moments, cell_dot
from lppf.results import FitResult
from lppf.validation import FitData


class PMFCavi(GammaModel):
    """q(theta_dk), q(phi_kv) gamma. S_dv = sum_k G[theta_dk] G[phi_kv]."""

    names = ("theta", "phi")
    slot_names = ("theta", "phi")

    def __init__(self, Y: np.ndarray, mask: np.ndarray, n_components: int, a0: float, b0: float,
                 fix: dict[str, np.ndarray], rng: np.random.Generator):
        n_rows, n_cols = Y.shape
        self.obs = None if not mask.any() else (~mask).astype(np.float64)
        scale = math.sqrt(max(float(np.mean(Y[~mask])), 1e-3) / n_components)
        super().__init__({"theta": (n_rows, n_components), "phi": (n_components, n_cols)},
                         scale, a0, b0, fix, rng)

    @staticmethod
    def full_mask(mask: np.ndarray) -> np.ndarray:
        return np.asarray(mask, dtype=bool)

    def slots(self, m: dict[str, Moments]) -> tuple[np.ndarray, ...]:
        return m["theta"].gmean, m["phi"].gmean

    @staticmethod
    def rate_sum(slots, cells) -> np.ndarray:
        """sum_k A_dk B_kv for slots (A_DK, B_KV), dense or at ``cells = (rows, cols)``."""
        A_DK, B_KV = slots
        if cells is None:
            return A_DK @ B_KV
        return cell_dot(np.ascontiguousarray(A_DK), np.ascontiguousarray(B_KV.T), *cells)

    def alloc_stats(self, R, m: dict[str, Moments]) -> dict[str, np.ndarray]:
        """sum_v E[y_dvk] = G[theta_dk] (R G[phi]^T)_dk and sum_d E[y_dvk] likewise."""
        G_DK, G_KV = m["theta"].gmean, m["phi"].gmean
        return {"theta": G_DK * (R @ G_KV.T), "phi": G_KV * (R.T @ G_DK).T}

    def _exposure_theta(self, E_KV: np.ndarray) -> np.ndarray:
        return E_KV.sum(axis=1) if self.obs is None else self.obs @ E_KV.T

    def _exposure_phi(self, E_DK: np.ndarray) -> np.ndarray:
        return E_DK.sum(axis=0)[:, None] if self.obs is None else E_DK.T @ self.obs

    def update(self, stats: dict[str, np.ndarray]) -> None:
        """theta given the allocation and E[phi], then phi given the allocation and new E[theta]."""
        self.update_theta(stats)
        self.update_phi(stats)

    def update_theta(self, stats: dict[str, np.ndarray]) -> None:
        self.set_factor("theta", stats["theta"], self._exposure_theta(self.moments()["phi"].mean))

    def update_phi(self, stats: dict[str, np.ndarray]) -> None:
        self.set_factor("phi", stats["phi"], self._exposure_phi(self.moments()["theta"].mean))

    def mean_mu(self, m: dict[str, Moments]) -> np.ndarray:
        return m["theta"].mean @ m["phi"].mean

    def var_mu(self, m: dict[str, Moments]) -> np.ndarray:
        """Var[sum_k theta_dk phi_kv] = V[theta] (V[phi] + E[phi]^2) + E[theta]^2 V[phi]."""
        t, p = m["theta"], m["phi"]
        return t.var @ (p.var + p.mean**2) + t.mean**2 @ p.var

    def expected_rate_total(self, m: dict[str, Moments]) -> float:
        """sum over unmasked cells of E[mu_dv]."""
        return float(np.sum(m["theta"].mean * self._exposure_theta(m["phi"].mean)))


def fit_pmf_cavi(data: FitData, *, method: str, n_components: int, a0: float, b0: float,
                 max_iter: int, tol: float, restarts: int, rng: np.random.Generator,
                 threads: int | None = None, progress: bool = False) -> FitResult:
    """CAVI for PMF; see :func:`lppf.cavi.fit_cavi`."""
    return fit(PMFCavi, data, method=method, n_components=n_components, a0=a0, b0=b0,
               max_iter=max_iter, tol=tol, restarts=restarts, rng=rng, threads=threads,
               progress=progress)
