"""Each CAVI coordinate update is the exact optimum of its factor; the ELBO never decreases."""

import copy

import numpy as np
import pytest
from scipy import optimize, special

from lppf.cavi import _local
from lppf.cavi._local import LOCALS
from lppf.cavi.community import CommunityCavi
from lppf.cavi.pmf import PMFCavi
from lppf.expectations import bessel_mode_sq

A0, B0 = 0.3, 0.7


def tiny_problem(model_cls, seed, method, n=(5, 6), k=2, alpha=0.6):
    rng = np.random.default_rng(seed)
    shape = (n[0], n[0]) if model_cls is CommunityCavi else n
    Y = rng.poisson(2.0, size=shape) + (rng.geometric(1 - alpha, shape)
                                         - rng.geometric(1 - alpha, shape))
    if method in ("nonprivate", "naive"):
        Y = np.maximum(Y, 0)
    alpha_arr = np.full((1, 1), alpha)
    mask = model_cls.full_mask(rng.random(shape) < 0.15)
    model = model_cls(Y, mask, k, A0, B0, {}, rng)
    local = LOCALS[method](Y, alpha_arr, mask)
    return model, local


def total_elbo(model, local):
    m = model.moments()
    return local.data_elbo(model, m, stale=True) + model.prior_elbo(m)


def numeric_optimum(model, local, name, index):
    """Maximize the ELBO over (shape, rate) of one entry of factor ``name`` numerically."""
    work = copy.deepcopy(model)

    def negative(params):
        work.shape[name][index], work.rate[name][index] = np.exp(params)
        return -total_elbo(work, local)

    start = np.log([model.shape[name][index] * 1.7, model.rate[name][index] * 0.6])
    res = optimize.minimize(negative, start, method="BFGS", options={"gtol": 1e-9})
    return np.exp(res.x)


def assert_optimal(model, local, name, index):
    want = numeric_optimum(model, local, name, index)
    got = (model.shape[name][index], model.rate[name][index])
    np.testing.assert_allclose(got, want, rtol=2e-4)


@pytest.mark.parametrize("method", ["nonprivate", "private-collapsed"])
def test_pmf_updates_are_exact_optima(method):
    model, local = tiny_problem(PMFCavi, 1, method)
    m = model.moments()
    stats = model.alloc_stats(local.refresh(model, m), m)
    model.update_theta(stats)
    for index in [(0, 0), (4, 1)]:
        assert_optimal(model, local, "theta", index)
    model.update_phi(stats)
    for index in [(0, 0), (1, 5)]:
        assert_optimal(model, local, "phi", index)


@pytest.mark.parametrize("method", ["naive", "private-collapsed"])
def test_community_updates_are_exact_optima(method):
    model, local = tiny_problem(CommunityCavi, 2, method)
    m = model.moments()
    stats = model.alloc_stats(local.refresh(model, m), m)
    model.update_theta(stats)
    last = model.shape["theta"].shape[0] - 1  # optimal given all other actors' new values
    for c in range(2):
        assert_optimal(model, local, "theta", (last, c))
    model.update_pi(stats)
    for index in [(0, 0), (0, 1), (1, 0)]:
        assert_optimal(model, local, "pi", index)


def _steps(model, local):
    """Yield after every single coordinate update of one CAVI iteration."""
    m = model.moments()
    stats = model.alloc_stats(local.refresh(model, m), m)
    yield "local"
    if isinstance(model, CommunityCavi):
        for i in range(model.shape["theta"].shape[0]):
            model.update_theta(stats, actors=[i])
            yield f"theta[{i}]"
        model.update_pi(stats)
        yield "pi"
    else:
        model.update_theta(stats)
        yield "theta"
        model.update_phi(stats)
        yield "phi"


@pytest.mark.parametrize("model_cls", [PMFCavi, CommunityCavi])
@pytest.mark.parametrize("method", ["nonprivate", "naive", "naive-sparse", "private-collapsed"])
def test_elbo_never_decreases(model_cls, method, monkeypatch):
    if method == "naive-sparse":
        monkeypatch.setattr(_local, "DENSE_FRACTION", 1.0)
        method = "naive"
    for seed in range(3):
        model, local = tiny_problem(model_cls, 10 + seed, method, n=(7, 9), k=3)
        local.refresh(model, model.moments())
        old = total_elbo(model, local)
        for _ in range(15):
            for step in _steps(model, local):
                new = total_elbo(model, local)
                assert new >= old - 1e-10 * abs(old), (seed, step, old, new)
                old = new


@pytest.mark.parametrize("model_cls", [PMFCavi, CommunityCavi])
def test_sparse_and_dense_counts_agree(model_cls, monkeypatch):
    values = []
    for fraction in (0.0, 1.0):
        monkeypatch.setattr(_local, "DENSE_FRACTION", fraction)
        model, local = tiny_problem(model_cls, 8, "nonprivate", n=(7, 9), k=3)
        assert (local.cells is None) == (fraction == 0.0)
        for _ in range(3):
            m = model.moments()
            model.update(model.alloc_stats(local.refresh(model, m), m))
        values.append((model.mean_mu(model.moments()), total_elbo(model, local)))
    np.testing.assert_allclose(values[0][0], values[1][0], rtol=1e-12)
    assert values[0][1] == pytest.approx(values[1][1], rel=1e-12)


def test_stale_elbo_equals_fresh_elbo_after_refresh():
    model, local = tiny_problem(PMFCavi, 4, "private-collapsed")
    m = model.moments()
    local.refresh(model, m)
    assert local.correction(model, m) == pytest.approx(0.0, abs=1e-12)


def test_private_local_step_uses_bessel_mode():
    """E[y+] - E[g-] = y~, and m is the mode of Bes(|y~|, 2 sqrt(G[lam-] G[lam+ + mu]))."""
    model, local = tiny_problem(PMFCavi, 5, "private", alpha=0.7)
    m = model.moments()
    shape_plus, shape_minus = local.shape_plus.copy(), local.shape_minus.copy()
    R = local.refresh(model, m)
    alpha = 0.7
    S = model.rate_sum(model.slots(m), None)
    g_plus = alpha * np.exp(special.digamma(shape_plus))
    y_plus = R * (g_plus + S)
    g_minus = local.shape_minus - 1
    obs = ~local.mask
    np.testing.assert_allclose((y_plus - g_minus)[obs], local.Y[obs], atol=1e-9)
    mean = alpha * shape_plus + model.mean_mu(m)
    var = alpha**2 * shape_plus + model.var_mu(m)
    half_a_sq = alpha * np.exp(special.digamma(shape_minus)) * mean * np.exp(-var / (2 * mean**2))
    mode = np.minimum(y_plus, g_minus)
    for d, v in zip(*np.nonzero(obs), strict=True):
        nu, top = abs(local.Y[d, v]), np.arange(400)
        logp = 2 * top * np.log(half_a_sq[d, v]) / 2 - special.gammaln(top + 1) \
            - special.gammaln(top + nu + 1)
        assert mode[d, v] == pytest.approx(np.argmax(logp)), (d, v)
        assert mode[d, v] == pytest.approx(bessel_mode_sq(float(nu), half_a_sq[d, v]))
    np.testing.assert_allclose(local.shape_plus[obs], 1 + (R * g_plus)[obs])


@pytest.mark.parametrize("model_cls", [PMFCavi, CommunityCavi])
def test_var_mu_matches_monte_carlo(model_cls):
    model, _ = tiny_problem(model_cls, 6, "nonprivate", n=(4, 3), k=2)
    rng = np.random.default_rng(7)
    for name in model.shape:
        model.shape[name] = rng.uniform(1.0, 4.0, size=model.shape[name].shape)
    m = model.moments()
    draws = {n: rng.gamma(model.shape[n], 1 / model.rate[n], size=(200_000, *model.shape[n].shape))
             for n in model.names}
    if model_cls is PMFCavi:
        mu = draws["theta"] @ draws["phi"]
    else:
        mu = draws["theta"] @ draws["pi"] @ np.swapaxes(draws["theta"], 1, 2)
    off = ~np.eye(*mu.shape[1:], dtype=bool) if model_cls is CommunityCavi else slice(None)
    np.testing.assert_allclose(model.var_mu(m)[off], mu.var(axis=0)[off], rtol=0.05)
    np.testing.assert_allclose(model.mean_mu(m), mu.mean(axis=0), rtol=0.01)


def test_private_lambda_update_is_exact_optimum():
    """q(lambda+-) = Gamma(1 + E[g], rate 1/alpha) maximizes E[ln Pois(g; lam)] + E[ln prior]
    + H[q] with prior Gamma(1, rate (1 - alpha)/alpha)."""
    alpha = 0.7
    model, local = tiny_problem(PMFCavi, 9, "private", alpha=alpha)
    local.refresh(model, model.moments())
    e_g = local.shape_minus[0, 0] - 1.0

    def negative(params):
        shape, rate = np.exp(params)
        elog, mean = special.digamma(shape) - np.log(rate), shape / rate
        entropy = shape - np.log(rate) + special.gammaln(shape) + (1 - shape) * special.digamma(
            shape)
        return -(e_g * elog - mean - (1 - alpha) / alpha * mean + entropy)

    res = optimize.minimize(negative, np.log([3.0, 0.5]), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(np.exp(res.x), [1 + e_g, 1 / alpha], rtol=1e-5)
    assert local.variational()["lambda_minus_rate"][0, 0] == pytest.approx(1 / alpha)
