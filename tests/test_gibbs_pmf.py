"""PMF Gibbs samplers: Geweke joint-distribution tests, reproducibility, recovery."""

import copy
from dataclasses import dataclass

import numpy as np
import pytest
from geweke import assert_geweke, geweke_z
from gof import chisquare_pvalue
from scipy import stats

from lppf._numba import threads
from lppf.mcmc import fit_mcmc
from lppf.mcmc.marginal import Moves, noise_share, use
from lppf.mcmc.pmf import (
    PMFChain,
    allocate,
    gibbs_sweep,
    initial_state,
    log_joint,
    make_state,
    mean_product,
    update_counts,
)
from lppf.validation import FitData

A0, B0 = 1.0, 1.0
D, V, K = 3, 4, 2
ALPHA = np.array([[0.0, 0.3, 0.6, 0.8],
                  [0.5, 0.7, 0.2, 0.9],
                  [0.4, 0.0, 0.75, 0.6]])
MASK = np.zeros((D, V), bool)
MASK[0, 2] = MASK[2, 0] = True


@dataclass
class Joint:
    Theta: np.ndarray
    Phi: np.ndarray
    Y: np.ndarray
    Ytil: np.ndarray
    lam: tuple[np.ndarray, np.ndarray]


def two_geometric(rng, alpha):
    p = 1.0 - alpha
    return rng.geometric(p) - rng.geometric(p)


def noise(rng, method, alpha):
    """(tau, (lam+, lam-)): randomized Skellam for ``private``, 2Geo otherwise."""
    if method == "private":
        scale = alpha / (1.0 - alpha)
        lam = (rng.exponential(1.0, alpha.shape) * scale, rng.exponential(1.0, alpha.shape) * scale)
        return rng.poisson(lam[0]) - rng.poisson(lam[1]), lam
    if method == "private-collapsed":
        return two_geometric(rng, alpha), None
    return np.zeros(alpha.shape, np.int64), None


def observe(rng, method, joint, cells):
    """Redraw y~ | y (and lam) in ``cells``."""
    tau, lam = noise(rng, method, ALPHA)
    joint.Ytil = np.where(cells, joint.Y + tau, joint.Ytil)
    if lam is not None:
        pairs = zip(lam, joint.lam, strict=True)
        joint.lam = tuple(np.where(cells, new, old) for new, old in pairs)


def forward(method):
    def draw(rng):
        Theta = rng.gamma(A0, 1 / B0, (D, K))
        Phi = rng.gamma(A0, 1 / B0, (K, V))
        Y = rng.poisson(Theta @ Phi)
        joint = Joint(Theta, Phi, Y, Y.copy(), (np.zeros((D, V)), np.zeros((D, V))))
        observe(rng, method, joint, np.ones((D, V), bool))
        return joint
    return draw


def langevin(state, data, a0, b0, rng):
    """The Langevin moves of the factors (y summed out), then y given them."""
    Moves(data)(state.Theta, state.Phi, a0, b0, rng)
    update_counts(state, data, rng)


def successive(method, sweep=gibbs_sweep):
    """One sweep of the sampler given y~ (or y), then the data from the model; held-out
    cells carry no information, so they are redrawn from the model given the factors."""
    def step(joint, rng):
        data = FitData(joint.Ytil if method != "nonprivate" else joint.Y,
                       ALPHA if method != "nonprivate" else np.zeros((1, 1)), MASK)
        state = make_state(data, method, joint.Theta, joint.Phi,
                           Y=joint.Y.astype(np.int32), lam=joint.lam)
        sweep(state, data, A0, B0, rng)
        joint.Theta, joint.Phi = state.Theta, state.Phi
        mu = joint.Theta @ joint.Phi
        if method == "nonprivate":
            joint.Y = rng.poisson(mu)
            joint.Ytil = joint.Y
            return joint
        joint.Y = np.where(MASK, rng.poisson(mu), state.Y)
        if method == "private":
            joint.lam = (state.lam_plus.copy(), state.lam_minus.copy())
        observe(rng, method, joint, MASK if method == "private" else np.ones((D, V), bool))
        if method == "private":  # observed cells: y~ = y + g+ - g-, g+- ~ Pois(lam+-)
            tau = rng.poisson(joint.lam[0]) - rng.poisson(joint.lam[1])
            joint.Ytil = np.where(MASK, joint.Ytil, joint.Y + tau)
        joint.Ytil = np.where(ALPHA == 0, joint.Y, joint.Ytil)
        return joint
    return step


NAMES = ["theta", "phi", "theta^2", "phi^2", "y", "y^2", "y~", "y~^2", "y*y~", "y[1,3]",
         "y~[1,3]", "y*theta_row", "lam+", "lam-"]


def statistics(joint):
    obs = ~MASK
    Y, Yt = joint.Y[obs], joint.Ytil[obs]
    return np.array([
        joint.Theta.mean(), joint.Phi.mean(), (joint.Theta ** 2).mean(), (joint.Phi ** 2).mean(),
        Y.mean(), (Y ** 2).mean(), Yt.mean(), (Yt ** 2).mean(), (Y * Yt).mean(),
        joint.Y[1, 3], joint.Ytil[1, 3], (joint.Y.sum(1) * joint.Theta.sum(1)).mean(),
        joint.lam[0].mean(), joint.lam[1].mean(),
    ], dtype=float)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["private", "private-collapsed", "nonprivate"])
def test_geweke_joint_distribution(method):
    n = len(NAMES) if method == "private" else len(NAMES) - 2
    z = geweke_z(forward(method), successive(method), lambda j: statistics(j)[:n],
                 n_forward=10_000, n_chains=500, n_steps=10, seed=11)
    assert_geweke(z, NAMES[:n])


@pytest.mark.slow
def test_geweke_of_the_langevin_moves():
    """The factors moved by the Langevin moves alone, geometric noise and noiseless cells."""
    n = len(NAMES) - 2
    z = geweke_z(forward("private-collapsed"), successive("private-collapsed", langevin),
                 lambda j: statistics(j)[:n], n_forward=10_000, n_chains=500, n_steps=10,
                 seed=11)
    assert_geweke(z, NAMES[:n])


def test_langevin_moves_run_where_the_noise_hides_most_of_the_counts():
    Y = np.array([[3, 0], [1, 5]])
    quiet = FitData(Y, np.full((1, 1), 0.1), np.zeros(Y.shape, bool))
    loud = FitData(Y, np.full((1, 1), 0.8), np.zeros(Y.shape, bool))
    # variance 2 alpha / (1 - alpha)^2 per cell: 0.247 and 40, against 9 counts
    assert noise_share(Y, quiet.alpha, quiet.mask, "geometric") == pytest.approx(
        4 * 0.2 / 0.81 / (4 * 0.2 / 0.81 + 9))
    def uses(method, sampler, data):
        return use(method, sampler, data.Y, data.alpha, data.mask, data.mechanism)

    assert not uses("private-collapsed", "auto", quiet)
    assert uses("private-collapsed", "auto", loud)
    assert not uses("private-collapsed", "gibbs", loud)
    assert not uses("private", "auto", loud)
    assert not uses("naive", "auto", loud)


def synthetic(seed, alpha, D=60, V=50, K=3):
    rng = np.random.default_rng(seed)
    Theta = rng.gamma(0.3, 3.0, (D, K))
    Phi = rng.gamma(0.3, 3.0, (K, V))
    mu = Theta @ Phi
    Y = rng.poisson(mu)
    return mu, Y, Y + two_geometric(rng, np.full(Y.shape, alpha))


def mae_of(method, mu, Y, Ytil, alpha, seed=0):
    data = (FitData(Y, np.zeros((1, 1)), np.zeros(Y.shape, bool)) if method == "nonprivate"
            else FitData(Ytil, np.full((1, 1), alpha), np.zeros(Y.shape, bool)))
    fit = fit_mcmc("pmf", data, method=method, n_components=3, a0=0.1, b0=1.0, n_iter=300,
                   burnin=150, thin=5, rng=np.random.default_rng(seed))
    return np.abs(fit.mu_hat - mu).mean()


def test_private_methods_beat_naive_at_high_noise():
    mu, Y, Ytil = synthetic(0, alpha=0.8)
    mae = {m: mae_of(m, mu, Y, Ytil, 0.8)
           for m in ("private", "private-collapsed", "naive", "nonprivate")}
    assert mae["private"] < 0.7 * mae["naive"], mae
    assert mae["private-collapsed"] < 0.7 * mae["naive"], mae
    assert mae["nonprivate"] < mae["private"], mae


def test_private_methods_near_nonprivate_at_low_noise():
    mu, Y, Ytil = synthetic(1, alpha=0.1)
    mae = {m: mae_of(m, mu, Y, Ytil, 0.1) for m in ("private", "private-collapsed", "nonprivate")}
    assert mae["private"] < 1.15 * mae["nonprivate"], mae
    assert mae["private-collapsed"] < 1.15 * mae["nonprivate"], mae


@pytest.mark.parametrize("method", ["private", "private-collapsed", "naive", "nonprivate"])
def test_same_seed_same_result_for_any_thread_count(method):
    _, Y, Ytil = synthetic(2, alpha=0.5, D=150, V=20)
    mask = np.random.default_rng(3).random(Y.shape) < 0.1
    data = (FitData(Y, np.zeros((1, 1)), mask) if method == "nonprivate"
            else FitData(Ytil, np.full((len(Y), 1), 0.5), mask))
    assert use(method, "auto", data.Y, data.alpha, data.mask, data.mechanism) == (
        method == "private-collapsed")  # the Langevin moves, in 3 chunks of rows
    fits = []
    for n in (1, 2, 2):
        with threads(n):
            fits.append(fit_mcmc("pmf", data, method=method, n_components=3, a0=0.1, b0=1.0,
                                 n_iter=8, burnin=4, thin=2, rng=np.random.default_rng(4),
                                 threads=n))
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.mu_hat, fits[0].mu_hat)
        np.testing.assert_array_equal(fit.samples["theta"], fits[0].samples["theta"])
        np.testing.assert_array_equal(fit.trace["loglik"], fits[0].trace["loglik"])
        if method.startswith("private"):
            np.testing.assert_array_equal(fit.y_hat, fits[0].y_hat)


@pytest.mark.parametrize("method", ["private", "private-collapsed", "naive", "nonprivate"])
def test_a_chain_runs_gibbs_sweeps_and_scores_the_state_it_leaves(method):
    """A chain's sweep is gibbs_sweep's updates cut after the allocation: the same counts,
    the factors one sweep behind, and the log joint of the (counts, factors) it leaves."""
    _, Y, Ytil = synthetic(6, alpha=0.5, D=40, V=30)
    mask = np.random.default_rng(3).random(Y.shape) < 0.1
    data = (FitData(Y, np.zeros((1, 1)), mask) if method == "nonprivate"
            else FitData(Ytil, np.linspace(0.3, 0.7, 40)[:, None], mask))
    start = initial_state(data, method, 3, np.random.default_rng(1))
    chain = PMFChain(data, copy.deepcopy(start), 0.1, 1.0, np.random.default_rng(2))
    ref, rng = copy.deepcopy(start), np.random.default_rng(2)
    for _ in range(4):
        factors = ref.Theta.copy(), ref.Phi.copy()
        assert chain.sweep() == pytest.approx(gibbs_sweep(ref, data, 0.1, 1.0, rng), rel=1e-12)
        np.testing.assert_array_equal(chain.state.Y, ref.Y)
        np.testing.assert_array_equal(chain.state.Theta, factors[0])
        np.testing.assert_array_equal(chain.state.Phi, factors[1])
        mu, cells = factors[0] @ factors[1], np.array([[0, 0], [39, 29], [7, 3]])
        if method in ("naive", "nonprivate"):
            assert chain.mu() is None
        else:
            np.testing.assert_allclose(chain.mu(), mu, rtol=1e-12)
        np.testing.assert_allclose(chain.mu_at(cells), mu[cells[:, 0], cells[:, 1]],
                                   rtol=1e-12)
        expected = log_joint(chain.state, data, 0.1, 1.0)
        assert chain.log_joint(chain.mu()) == pytest.approx(expected, rel=1e-12)


def test_mean_product_is_the_mean_of_the_products_for_any_thread_count():
    """Row tasks and sample blocks with remainders (D = 600 = 2 * 256 + 88, S = 11 = 8 + 3)."""
    rng = np.random.default_rng(0)
    Theta_S, Phi_S = rng.gamma(0.5, 1.0, (11, 600, 4)), rng.gamma(0.5, 1.0, (11, 4, 70))
    expected = np.mean([T @ P for T, P in zip(Theta_S, Phi_S, strict=True)], axis=0)
    means = []
    for n in (1, 2):
        with threads(n):
            means.append(mean_product(Theta_S, Phi_S))
    np.testing.assert_allclose(means[0], expected, rtol=1e-12)
    np.testing.assert_array_equal(means[1], means[0])


def test_outputs_shapes_fix_and_mask():
    _, Y, Ytil = synthetic(5, alpha=0.5, D=20, V=15)
    mask = np.zeros(Y.shape, bool)
    mask[:5, :5] = True
    Phi = np.random.default_rng(6).gamma(1.0, 1.0, (3, 15))
    fit = fit_mcmc("pmf", FitData(Ytil, np.full((1, 1), 0.5), mask, {"phi": Phi}),
                   method="private", n_components=3, a0=0.1, b0=1.0, n_iter=30, burnin=10,
                   thin=4, rng=np.random.default_rng(7))
    assert fit.samples["theta"].shape == (5, 20, 3)
    assert np.all(fit.samples["phi"] == Phi)
    assert fit.log_joint.shape == (5,) and np.all(np.isfinite(fit.log_joint))
    assert fit.trace["loglik"].shape == (30,)
    assert fit.mu_hat.shape == Y.shape and np.all(fit.mu_hat > 0)
    np.testing.assert_allclose(fit.y_hat[mask], fit.mu_hat[mask])
    assert set(fit.elapsed) == {"burnin", "sampling"}


@pytest.mark.parametrize("count", [1, 3, 300])
def test_allocation_is_multinomial(count):
    """K = 19 spans three blocks plus padding; count 300 > 8K takes the binomial chain."""
    rng = np.random.default_rng(8)
    n_rows, n_cols, K = 70, 30, 19
    theta = rng.gamma(1.0, 1.0, K)
    phi = rng.gamma(1.0, 1.0, K)
    phi[4] = 0.0  # a zero-probability component must never be chosen
    data = FitData(np.full((n_rows, n_cols), count), np.zeros((1, 1)),
                   np.zeros((n_rows, n_cols), bool))
    state = make_state(data, "nonprivate", np.tile(theta, (n_rows, 1)),
                       np.tile(phi[:, None], (1, n_cols)))
    Y_DK, Y_KV, loglik = allocate(state, data, rng)
    counts = Y_DK.sum(axis=0)
    np.testing.assert_array_equal(counts, Y_KV.sum(axis=1))
    assert counts[4] == 0 and counts.sum() == n_rows * n_cols * count
    p = theta * phi / (theta @ phi)
    keep = p > 0
    assert stats.chisquare(counts[keep], p[keep] * counts.sum()).pvalue > 0.01
    mu = theta @ phi
    expected = n_rows * n_cols * stats.poisson.logpmf(count, mu) + n_rows * n_cols * mu
    assert loglik == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("count", [4, 40, 5000])
def test_allocation_of_a_cell_follows_the_multinomial_pmf(count):
    """Chi-square of each cell's split (n_1, n_2 | y, K = 3) against the joint multinomial
    pmf: 4 draws a component per unit, 40 and 5000 take conditional binomials (inversion,
    then BTPE for the large count)."""
    rng = np.random.default_rng(9)
    n_rows = 6000
    theta = np.array([0.5, 1.5, 1.0])
    phi = np.array([[0.4], [1.0], [2.0]])
    data = FitData(np.full((n_rows, 1), count), np.zeros((1, 1)), np.zeros((n_rows, 1), bool))
    state = make_state(data, "nonprivate", np.tile(theta, (n_rows, 1)), phi)
    Y_DK, _, _ = allocate(state, data, rng)
    assert np.all(Y_DK.sum(axis=1) == count)
    p = theta * phi[:, 0] / (theta @ phi[:, 0])
    n1, n2 = (np.flatnonzero(stats.binom.pmf(np.arange(count + 1), count, q) > 1e-12)
              for q in p[:2])
    # P(n1, n2) = Bin(n1; y, p1) Bin(n2; y - n1, p2 / (1 - p1)), coded (n1 - lo1) W + n2 - lo2
    pmf = stats.binom.pmf(n1[:, None], count, p[0]) * stats.binom.pmf(
        n2[None, :], count - n1[:, None], p[1] / (1.0 - p[0]))
    codes = (Y_DK[:, 0] - n1[0]) * n2.size + np.clip(Y_DK[:, 1] - n2[0], 0, n2.size - 1)
    assert chisquare_pvalue(codes, 0, pmf.ravel()) > 0.01
