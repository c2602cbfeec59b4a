"""Ground truth for the experiments: synthetic and semi-synthetic count matrices.

Every generator takes a numpy ``Generator`` and returns a dict with the true counts ``Y``,
the true rates ``mu`` and the factors that made them (``theta``, ``phi`` or ``pi``), ready for
:func:`lppf.io.save_npz`. Gamma(shape, rate) throughout.
"""

from __future__ import annotations

import zlib

import numpy as np


def derive_seed(*parts: object) -> int:
    """A seed in [0, 2**32) determined by ``parts`` (ints, floats or strings).

    Each part becomes a stable integer (CRC-32 of ``str(part)``) and the tuple is mixed by
    :class:`numpy.random.SeedSequence`; Python's ``hash`` (salted per process) is never used.
    """
    entropy = [zlib.crc32(str(p).encode()) for p in parts]
    return int(np.random.SeedSequence(entropy).generate_state(1, np.uint32)[0])


def _gamma(rng: np.random.Generator, shape: float, rate: float, size) -> np.ndarray:
    return rng.gamma(shape, 1.0 / rate, size=size)


def pmf_rates(Theta_DK: np.ndarray, Phi_KV: np.ndarray) -> np.ndarray:
    """mu_dv = sum_k theta_dk phi_kv, shape (D, V)."""
    return Theta_DK @ Phi_KV


def community_rates(Theta_VC: np.ndarray, Pi_CC: np.ndarray) -> np.ndarray:
    """mu_ij = sum_cd theta_ic theta_jd pi_cd with the diagonal (self-links) set to 0."""
    mu_VV = Theta_VC @ Pi_CC @ Theta_VC.T
    np.fill_diagonal(mu_VV, 0.0)
    return mu_VV


def _sample(rng: np.random.Generator, mu: np.ndarray, **factors: np.ndarray) -> dict:
    return {"Y": rng.poisson(mu).astype(np.int64), "mu": mu, **factors}


def pmf_truth(rng: np.random.Generator, n_rows: int, n_cols: int, n_components: int,
              shape: float, rate: float) -> dict:
    """theta_dk, phi_kv ~ Gamma(shape, rate); y_dv ~ Pois(mu_dv) (experiments S1, V1)."""
    Theta_DK = _gamma(rng, shape, rate, (n_rows, n_components))
    Phi_KV = _gamma(rng, shape, rate, (n_components, n_cols))
    return _sample(rng, pmf_rates(Theta_DK, Phi_KV), theta=Theta_DK, phi=Phi_KV)


def blocks_truth(rng: np.random.Generator, n_topics: int = 3, docs_per_topic: int = 30,
                 words_per_topic: int = 5, doc_length: float = 50.0, purity: float = 0.9,
                 shape: float = 10.0) -> dict:
    """Well-separated topics and documents (experiment S2).

    Topic k puts ``purity`` of its mass on its own ``words_per_topic`` words (V = K x that),
    the rest spread evenly; documents come in K groups of ``docs_per_topic``, group k putting
    ``purity`` of its expected ``doc_length`` tokens on topic k. theta_dk ~ Gamma(shape,
    shape / mean_dk) around that pattern.
    """
    K, V = n_topics, n_topics * words_per_topic
    own_KV = np.repeat(np.eye(K), words_per_topic, axis=1)
    Phi_KV = purity * own_KV / words_per_topic + (1 - purity) * (1 - own_KV) / (V - words_per_topic)
    own_DK = np.repeat(np.eye(K), docs_per_topic, axis=0)
    mean_DK = doc_length * (purity * own_DK + (1 - purity) * (1 - own_DK) / (K - 1))
    Theta_DK = rng.gamma(shape, mean_DK / shape)
    return _sample(rng, pmf_rates(Theta_DK, Phi_KV), theta=Theta_DK, phi=Phi_KV)


def community_truth(rng: np.random.Generator, n_actors: int, n_communities: int,
                    shape: float, rate: float) -> dict:
    """theta_ic, pi_cd ~ Gamma(shape, rate); y_ij ~ Pois(mu_ij), y_ii = 0 (experiment S3)."""
    Theta_VC = _gamma(rng, shape, rate, (n_actors, n_communities))
    Pi_CC = _gamma(rng, shape, rate, (n_communities, n_communities))
    return _sample(rng, community_rates(Theta_VC, Pi_CC), theta=Theta_VC, pi=Pi_CC)


def most_used(Theta_NK: np.ndarray, Other_KM: np.ndarray, n: int | None) -> np.ndarray:
    """Indices of the ``n`` components with the largest total rate sum_n theta_nk sum_m x_km,
    largest first (all components if ``n`` is None)."""
    usage_K = Theta_NK.sum(axis=0) * Other_KM.sum(axis=1)
    order = np.argsort(-usage_K, kind="stable")
    return order if n is None else order[:n]


def rescaled_truth(rng: np.random.Generator, model: str, factors: dict, e0: float, f0: float,
                   n_components: int | None = None) -> dict:
    """Semi-synthetic truth from a reference fit (experiments E1, E2).

    gamma ~ Gamma(e0 f0, f0) (mean e0) rescales each row of theta (``community``: actors;
    ``pmf``: documents) and, for ``pmf``, each column of phi (words); the factors keep their
    relative structure. ``n_components`` keeps only the most used components.
    """
    Theta = np.asarray(factors["theta"], dtype=float)
    other = np.asarray(factors["phi" if model == "pmf" else "pi"], dtype=float)
    keep = most_used(Theta, other, n_components)
    Theta = Theta[:, keep] * _gamma(rng, e0 * f0, f0, (Theta.shape[0], 1))
    if model == "pmf":
        Phi_KV = other[keep] * _gamma(rng, e0 * f0, f0, (1, other.shape[1]))
        return _sample(rng, pmf_rates(Theta, Phi_KV), theta=Theta, phi=Phi_KV)
    Pi_CC = other[np.ix_(keep, keep)]
    return _sample(rng, community_rates(Theta, Pi_CC), theta=Theta, pi=Pi_CC)


def beta_alphas(rng: np.random.Generator, n_rows: int, mean: float,
                concentration: float) -> np.ndarray:
    """Per-row noise levels alpha_d ~ Beta(c mean, c (1 - mean)), shape (n_rows, 1) (S2)."""
    if not 0 < mean < 1 or concentration <= 0:
        raise ValueError(f"need 0 < mean < 1 and concentration > 0, got {mean}, {concentration}")
    return rng.beta(concentration * mean, concentration * (1 - mean), size=(n_rows, 1))


def mean_precision_alpha(Y: np.ndarray, epsilon: float) -> np.ndarray:
    """alpha = exp(-epsilon / N) with the precision N = mean(y) (S3), shape (1, 1)."""
    N = float(np.mean(Y))
    if N <= 0:
        raise ValueError("mean count is 0: the precision N = mean(y) is undefined")
    return np.full((1, 1), np.exp(-epsilon / N))


def top_actor_mask(Y_VV: np.ndarray, n_top: int, fraction: float,
                   rng: np.random.Generator) -> np.ndarray:
    """Held-out mask (E4, missing-link prediction), shape (V, V), True = held out: each cell
    in the row of one of the ``n_top`` largest senders (row totals) or the column of one of
    the ``n_top`` largest recipients (column totals), diagonal excluded, independently with
    probability ``fraction``. ``fraction = 1`` holds out all of those actors' cells (they keep
    no data); below 1 they keep the rest of their interactions to learn from."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    senders = np.argsort(-Y_VV.sum(axis=1), kind="stable")[:n_top]
    recipients = np.argsort(-Y_VV.sum(axis=0), kind="stable")[:n_top]
    involved = np.zeros(Y_VV.shape, dtype=bool)
    involved[senders, :] = True
    involved[:, recipients] = True
    np.fill_diagonal(involved, False)
    return involved & (rng.random(Y_VV.shape) < fraction)
