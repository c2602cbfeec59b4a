"""CAVI for the overlapping community model: Y_VV ~ Pois(mu), mu_ij = theta_i^T Pi theta_j.

The diagonal is always held out. q(theta_i) and q(theta_j) are coupled through the exposure
E[theta_i]^T E[Pi] E[theta_j], so the theta update is a sweep over actors one after another
(each actor's C entries at once), with running sums of the other actors' means.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lppf.cavi._loop import GammaModel, fit
from lppf.expectations import Moments, cell_dot
from lppf.results import FitResult
from lppf.validation import FitData


@njit(cache=True)
def _theta_sweep(shape, mean, Pi, obs, U, W, b0, rate, actors):
    """Coordinate ascent over ``actors`` in order for q(theta_i) = Gamma(shape_i, rate_i),

    rate_ic = b0 + sum_d Pi_cd U_id + sum_d Pi_dc W_id with U_i = sum_j obs_ij E[theta_j] and
    W_i = sum_j obs_ji E[theta_j] kept current as each actor's mean changes (obs_ii = 0).
    """
    n_actors, n_comm = mean.shape
    delta = np.empty(n_comm)
    for i in actors:
        for c in range(n_comm):
            acc = b0
            for d in range(n_comm):
                acc += Pi[c, d] * U[i, d] + Pi[d, c] * W[i, d]
            rate[i, c] = acc
        for c in range(n_comm):
            new = shape[i, c] / rate[i, c]
            delta[c] = new - mean[i, c]
            mean[i, c] = new
        for j in range(n_actors):
            if obs[j, i]:
                U[j, :] += delta
            if obs[i, j]:
                W[j, :] += delta


class CommunityCavi(GammaModel):
    """q(theta_ic), q(pi_cd) gamma. S_ij = sum_cd G[theta_ic] G[pi_cd] G[theta_jd]."""

    names = ("theta", "pi")
    slot_names = ("theta", "pi", "theta")

    def __init__(self, Y: np.ndarray, mask: np.ndarray, n_components: int, a0: float, b0: float,
                 fix: dict[str, np.ndarray], rng: np.random.Generator):
        n_actors = Y.shape[0]
        self.obs = ~mask
        self.obs_f = self.obs.astype(np.float64)
        scale = (max(float(np.mean(Y[self.obs])), 1e-3) / n_components**2) ** (1 / 3)
        super().__init__({"theta": (n_actors, n_components), "pi": (n_components, n_components)},
                         scale, a0, b0, fix, rng)

    @staticmethod
    def full_mask(mask: np.ndarray) -> np.ndarray:
        mask = np.array(mask, dtype=bool)
        np.fill_diagonal(mask, True)
        return mask

    def slots(self, m: dict[str, Moments]) -> tuple[np.ndarray, ...]:
        return m["theta"].gmean, m["pi"].gmean, m["theta"].gmean

    @staticmethod
    def rate_sum(slots, cells) -> np.ndarray:
        """sum_cd A_ic P_cd B_jd for slots (A_VC, P_CC, B_VC), dense or at ``cells``."""
        A_VC, P_CC, B_VC = slots
        AP_VC = A_VC @ P_CC
        if cells is None:
            return AP_VC @ B_VC.T
        return cell_dot(np.ascontiguousarray(AP_VC), np.ascontiguousarray(B_VC), *cells)

    def alloc_stats(self, R, m: dict[str, Moments]) -> dict[str, np.ndarray]:
        """Allocated counts of theta_ic (as sender and as receiver) and of pi_cd."""
        G_VC, G_CC = m["theta"].gmean, m["pi"].gmean
        theta = G_VC * (R @ (G_VC @ G_CC.T) + R.T @ (G_VC @ G_CC))
        return {"theta": theta, "pi": G_CC * (G_VC.T @ (R @ G_VC))}

    def update(self, stats: dict[str, np.ndarray]) -> None:
        """theta actor by actor, then pi given the new E[theta]."""
        self.update_theta(stats)
        self.update_pi(stats)

    def update_theta(self, stats: dict[str, np.ndarray], actors: np.ndarray | None = None) -> None:
        """Sequential updates of q(theta_i) for i in ``actors`` (default: all, in order)."""
        if "theta" in self.fixed:
            return
        m = self.moments()
        actors = np.arange(len(m["theta"].mean)) if actors is None else np.asarray(actors)
        mean = m["theta"].mean.copy()
        shape, rate = self.shape["theta"].copy(), self.rate["theta"].copy()
        shape[actors] = self.a0 + stats["theta"][actors]
        _theta_sweep(shape, mean, m["pi"].mean, self.obs, self.obs_f @ mean,
                     self.obs_f.T @ mean, self.b0, rate, actors)
        self.shape["theta"], self.rate["theta"] = shape, rate

    def update_pi(self, stats: dict[str, np.ndarray]) -> None:
        E_VC = self.moments()["theta"].mean
        self.set_factor("pi", stats["pi"], E_VC.T @ self.obs_f @ E_VC)

    def mean_mu(self, m: dict[str, Moments]) -> np.ndarray:
        """E[mu_ij]; on the diagonal E[theta_ic^2] adds Var[theta_ic] E[pi_cc]."""
        t, p = m["theta"], m["pi"]
        mu = t.mean @ p.mean @ t.mean.T
        mu[np.diag_indices_from(mu)] += t.var @ np.diag(p.mean)
        return mu

    def var_mu(self, m: dict[str, Moments]) -> np.ndarray:
        """Var[mu_ij] for i != j under independent gamma factors (the diagonal is held out)."""
        t, p = m["theta"], m["pi"]
        second_VC = t.mean**2 + t.var
        return (t.var @ ((t.mean @ p.mean.T) ** 2).T + ((t.mean @ p.mean) ** 2) @ t.var.T
                + second_VC @ p.var @ second_VC.T + t.var @ p.mean**2 @ t.var.T)

    def expected_rate_total(self, m: dict[str, Moments]) -> float:
        E_VC = m["theta"].mean
        return float(np.sum(m["pi"].mean * (E_VC.T @ self.obs_f @ E_VC)))


def fit_community_cavi(data: FitData, *, method: str, n_components: int, a0: float, b0: float,
                       max_iter: int, tol: float, restarts: int, rng: np.random.Generator,
                       threads: int | None = None, progress: bool = False) -> FitResult:
    """CAVI for the community model; see :func:`lppf.cavi.fit_cavi`."""
    return fit(CommunityCavi, data, method=method, n_components=n_components, a0=a0, b0=b0,
               max_iter=max_iter, tol=tol, restarts=restarts, rng=rng, threads=threads,
               progress=progress)
