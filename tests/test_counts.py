"""Latent-count kernels: exact pmfs by chi-square, thread independence, masks, noiseless cells."""

import numpy as np
import pytest
from gof import chisquare_pvalue
from scipy import stats

from lppf import noise_conditional
from lppf._numba import chunk_seeds, threads
from lppf.mcmc.counts import sample_counts_collapsed, sample_counts_private, sample_counts_tables


def collapsed_pmf(t, mu, a, y_max=400):
    """Exact P(y | y~ = t, mu) ∝ mu^y / y! a^|t - y| on 0..y_max (normalized in logs)."""
    y = np.arange(y_max + 1)
    logp = stats.poisson.logpmf(y, mu) + np.abs(t - y) * np.log(a)
    return np.exp(logp - np.logaddexp.reduce(logp))


CASES = [(-3, 0.7, 0.5), (0, 2.0, 0.3), (4, 0.5, 0.8), (6, 30.0, 0.6), (40, 3.0, 0.9),
         (2, 1e-3, 0.2), (15, 500.0, 0.5)]


def collapsed_draws(t, mu, a, n, seed):
    rng = np.random.default_rng(seed)
    n_rows = 64
    shape = (n_rows, n // n_rows)
    Ytil = np.full(shape, t, dtype=np.int64)
    Y = np.zeros(shape, dtype=np.int32)
    sample_counts_collapsed(Ytil, np.full((1, 1), a), np.full(shape, mu),
                            np.zeros(shape, bool), Y, chunk_seeds(rng, n_rows))
    return Y.ravel()


@pytest.mark.parametrize(("case"), range(len(CASES)))
def test_collapsed_matches_exact_pmf(case):
    t, mu, a = CASES[case]
    n = 64 * 300
    draws = collapsed_draws(t, mu, a, n, seed=10 + case)
    assert chisquare_pvalue(draws, 0, collapsed_pmf(t, mu, a, y_max=2000)) > 0.01


def private_draws(t, mu, a, n, seed, sweeps=60):
    """y after ``sweeps`` augmented updates at fixed mu (n independent chains)."""
    rng = np.random.default_rng(seed)
    n_rows = 64
    shape = (n_rows, n // n_rows)
    Ytil = np.full(shape, t, dtype=np.int64)
    alpha = np.full((1, 1), a)
    lam_p = rng.exponential(a / (1 - a), shape)
    lam_m = rng.exponential(a / (1 - a), shape)
    Y = np.zeros(shape, dtype=np.int32)
    mu_ = np.full(shape, mu)
    mask = np.zeros(shape, bool)
    for _ in range(sweeps):
        sample_counts_private(Ytil, alpha, mu_, mask, lam_p, lam_m, Y, chunk_seeds(rng, n_rows))
    return Y.ravel()


@pytest.mark.parametrize(("t", "mu", "a"), [(-3, 0.7, 0.5), (4, 0.5, 0.8), (6, 30.0, 0.6),
                                           (40, 3.0, 0.9)])
def test_private_and_collapsed_target_same_posterior(t, mu, a):
    """The augmented chain's stationary y-marginal is the collapsed conditional (the last case
    draws binomials of y+ > 16 and gamma shapes 1 + g > 13 by the xoshiro samplers)."""
    n = 64 * 200
    draws = private_draws(t, mu, a, n, seed=2)
    assert chisquare_pvalue(draws, 0, collapsed_pmf(t, mu, a, y_max=2000)) > 0.01


def test_chisquare_detects_a_wrong_target():
    """Power check: the same draws are rejected against the pmf of another alpha."""
    n = 64 * 200
    draws = private_draws(4, 0.5, 0.8, n, seed=3)
    assert chisquare_pvalue(draws, 0, collapsed_pmf(4, 0.5, 0.6, y_max=2000)) < 0.01


def random_problem(seed, n_rows=150, n_cols=40):
    rng = np.random.default_rng(seed)
    Ytil = rng.integers(-4, 9, (n_rows, n_cols))
    alpha = rng.uniform(0.0, 0.9, (n_rows, n_cols))
    alpha[:, :5] = 0.0
    Ytil[:, :5] = np.abs(Ytil[:, :5])
    mu = rng.gamma(1.0, 2.0, (n_rows, n_cols))
    mask = rng.random((n_rows, n_cols)) < 0.2
    return Ytil, alpha, mu, mask


@pytest.mark.parametrize("kernel", ["private", "collapsed", "discrete-gaussian", "skellam"])
def test_thread_count_and_mask_and_noiseless(kernel):
    """Identical draws for 1 and 2 threads; masked cells untouched, noiseless ones y = y~ (the
    discrete Gaussian and Skellam kernels: alpha read as sigma and mu, most cells in lanes)."""
    Ytil, alpha, mu, mask = random_problem(4)
    noise = (noise_conditional.tables(kernel, 4 * alpha, Ytil)
             if kernel in ("discrete-gaussian", "skellam") else None)
    outs = []
    for n_threads in (1, 2):
        rng = np.random.default_rng(5)
        Y = np.full(Ytil.shape, -1, dtype=np.int32)
        lam = [np.ones(Ytil.shape), np.ones(Ytil.shape)]
        with threads(n_threads):
            if kernel == "private":
                sample_counts_private(Ytil, alpha, mu, mask, *lam, Y, chunk_seeds(rng, len(Y)))
            elif noise is not None:
                sample_counts_tables(Ytil, noise, mu, mask, Y, chunk_seeds(rng, len(Y)))
            else:
                sample_counts_collapsed(Ytil, alpha, mu, mask, Y, chunk_seeds(rng, len(Y)))
        outs.append((Y, *lam))
    for a, b in zip(outs[0], outs[1], strict=True):
        np.testing.assert_array_equal(a, b)
    Y = outs[0][0]
    assert np.all(Y[mask] == -1)
    assert np.all(Y[~mask] >= 0)
    noiseless = (alpha == 0) & ~mask
    np.testing.assert_array_equal(Y[noiseless], Ytil[noiseless])
    if kernel == "private":
        assert np.all(outs[0][1][mask] == 1.0)
        assert np.all(outs[0][1][~mask & (alpha > 0)] != 1.0)


def test_per_row_alpha_broadcast():
    """alpha of shape (n_rows, 1): rows with alpha = 0 copy y~, the others are sampled."""
    Ytil, _, mu, _ = random_problem(6)
    alpha = np.where(np.arange(len(Ytil)) % 2 == 0, 0.0, 0.5)[:, None]
    Ytil = np.abs(Ytil)
    Y = np.zeros(Ytil.shape, dtype=np.int32)
    sample_counts_collapsed(Ytil, alpha, mu, np.zeros(Ytil.shape, bool), Y,
                            chunk_seeds(np.random.default_rng(7), len(Y)))
    np.testing.assert_array_equal(Y[::2], Ytil[::2])
    assert np.any(Y[1::2] != Ytil[1::2])
