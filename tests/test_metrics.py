"""Metrics against hand-computed values and exact distributions (lppf.metrics, lppf evaluate)."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from lppf import metrics, synthetic
from lppf.cli import main
from lppf.io import save_npz

P_MIN = 0.01

# Reference corpus of the hand-computed coherence example: 5 documents, 4 words.
# Document frequencies D(w) = [4, 3, 2, 1]; co-document counts D(0,1) = 3, D(0,2) = 1,
# D(1,2) = 1, D(0,3) = 0, D(1,3) = 0, D(2,3) = 1.
CORPUS = np.array([[1, 2, 0, 0],
                   [3, 1, 0, 0],
                   [1, 1, 1, 0],
                   [2, 0, 0, 0],
                   [0, 0, 4, 1]])


def test_mae_kl_and_heldout_by_hand():
    mu_hat = np.array([[1.0, 2.0], [0.5, 4.0]])
    Y = np.array([[0, 2], [1, 1]])
    assert metrics.mae(mu_hat, Y) == pytest.approx((1 + 0 + 0.5 + 3) / 4)
    mask = np.array([[True, False], [False, True]])
    assert metrics.heldout_mae(mu_hat, Y, mask) == pytest.approx((1 + 3) / 2)
    cells = np.array([[True, True], [False, False]])
    assert metrics.heldout_mae(mu_hat, Y, mask, cells) == pytest.approx(1.0)
    mu_true = np.array([[0.0, 2.0], [1.0, 4.0]])
    kl = [0 - 0 + 1.0, 0.0, 1.0 * math.log(1 / 0.5) - 1 + 0.5, 0.0]  # 0 ln 0 = 0
    assert metrics.poisson_kl(mu_true, mu_hat) == pytest.approx(np.mean(kl))
    assert metrics.poisson_kl(np.ones((1, 1)), np.zeros((1, 1))) == math.inf


def test_poisson_kl_matches_the_kl_of_the_distributions():
    mu_true, mu_hat = 3.0, 4.5
    k = np.arange(200)
    p, q = stats.poisson.pmf(k, mu_true), stats.poisson.pmf(k, mu_hat)
    direct = float(np.sum(p * np.log(p / q)))
    assert metrics.poisson_kl(np.full((1, 1), mu_true), np.full((1, 1), mu_hat)) == (
        pytest.approx(direct, rel=1e-9))
    trace = metrics.kl_trace(np.array([[[mu_hat]], [[mu_true]]]), np.array([[mu_true]]))
    np.testing.assert_allclose(trace, [direct, 0.0], atol=1e-12)


def test_umass_by_hand_with_mimno_smoothing():
    top = np.array([[0, 1, 2], [2, 3, 0]])
    topic0 = math.log((3 + 1) / 4) + math.log((1 + 1) / 4) + math.log((1 + 1) / 3)
    topic1 = math.log((1 + 1) / 2) + math.log((1 + 1) / 2) + math.log((0 + 1) / 1)
    np.testing.assert_allclose(metrics.umass(CORPUS, top), [topic0, topic1])


def test_npmi_by_hand():
    def npmi(co, di, dj, n=5):
        if co == 0:
            return -1.0
        p = co / n + metrics.EPS
        return (math.log(p) - math.log(di / n * dj / n)) / -math.log(p)

    top = np.array([[0, 1, 2], [2, 3, 0]])
    expected = [np.mean([npmi(3, 4, 3), npmi(1, 4, 2), npmi(1, 3, 2)]),
                np.mean([npmi(1, 2, 1), npmi(1, 2, 4), npmi(0, 1, 4)])]
    np.testing.assert_allclose(metrics.npmi(CORPUS, top), expected)
    everywhere = np.ones((3, 2), dtype=int)
    np.testing.assert_allclose(metrics.npmi(everywhere, np.array([[0, 1]])), [1.0])


def test_topic_quality_averages_topics_and_samples():
    phi = np.array([[[5.0, 4, 3, 0], [0, 0, 3, 4]],      # sample 1: topics [0 1 2], [3 2 ...]
                    [[0.0, 1, 5, 4], [3, 4, 0, 0]]])
    quality = metrics.topic_quality(CORPUS, phi, n=2)
    tops = np.array([[0, 1], [3, 2], [2, 3], [1, 0]])
    assert quality["umass"] == pytest.approx(metrics.umass(CORPUS, tops).mean())
    assert quality["npmi"] == pytest.approx(metrics.npmi(CORPUS, tops).mean())


def test_align_topics_recovers_a_permutation():
    rng = np.random.default_rng(0)
    truth = rng.gamma(0.3, 1.0, (6, 40))
    perm = rng.permutation(6)
    noisy = 3.0 * truth[perm] * rng.gamma(50, 1 / 50, truth.shape)
    p = metrics.align_topics(noisy, truth)
    np.testing.assert_array_equal(perm[p], np.arange(6))
    extra = np.vstack([noisy, rng.gamma(0.3, 1.0, (2, 40))])
    np.testing.assert_array_equal(perm[metrics.align_topics(extra, truth)], np.arange(6))


def two_sided_geometric(rng, alpha, size):
    return rng.geometric(1 - alpha, size) - rng.geometric(1 - alpha, size)


@pytest.mark.parametrize(("mu", "alpha", "t"), [(3.0, 0.6, 1), (1.5, 0.8, -2), (6.0, 0.3, 8)])
def test_posterior_y_pmf_matches_rejection_sampling(mu, alpha, t):
    """y ~ Pois(mu), y~ = y + 2Geo(alpha); keep draws with y~ = t: their y follows the pmf."""
    rng = np.random.default_rng(1)
    y = rng.poisson(mu, 2_000_000)
    kept = y[y + two_sided_geometric(rng, alpha, y.size) == t]
    pmf = metrics.posterior_y_pmf(np.array([t]), np.array([alpha]), np.array([[mu]]))[0]
    assert pmf.sum() == pytest.approx(1.0)
    expected = kept.size * pmf
    bins = np.flatnonzero(expected >= 5)
    observed = np.bincount(kept, minlength=pmf.size)[: pmf.size]
    lo, hi = bins[0], bins[-1]
    obs = np.r_[observed[: lo + 1].sum(), observed[lo + 1: hi], kept.size - observed[:hi].sum()]
    exp = np.r_[expected[: lo + 1].sum(), expected[lo + 1: hi], kept.size - expected[:hi].sum()]
    assert stats.chisquare(obs, exp).pvalue > P_MIN


def test_posterior_y_pmf_averages_samples_and_handles_alpha_zero():
    t, a = np.array([2, 0]), np.array([0.5, 0.5])
    mu = np.array([[1.0, 2.0], [4.0, 0.5]])
    mixed = metrics.posterior_y_pmf(t, a, mu, y_max=30)
    single = [metrics.posterior_y_pmf(t, a, m[None], y_max=30) for m in mu]
    np.testing.assert_allclose(mixed, (single[0] + single[1]) / 2)
    exact = metrics.posterior_y_pmf(np.array([3]), np.array([0.0]), np.array([[2.0]]), y_max=6)
    np.testing.assert_allclose(exact[0], np.eye(7)[3])


def test_posterior_y_interval_is_equal_tailed_on_each_cells_support():
    pmf = np.r_[0.04, 0.02, 0.88, 0.02, 0.04]  # equal-tailed 90% interval: 1..3
    y = np.array([0, 1, 2, 3, 4])
    assert metrics.interval_coverage(np.ones(5), np.full(5, 3), y) == pytest.approx(3 / 5)
    cdf_lo, cdf_hi = np.searchsorted(np.cumsum(pmf), [0.05, 0.95])
    assert (cdf_lo, cdf_hi) == (1, 3)
    rng = np.random.default_rng(5)
    t = np.array([0, 3, -2, 40, 7, 2000])
    a = np.array([0.5, 0.9, 0.3, 0.6, 0.0, 0.95])
    mu = rng.gamma(2.0, [1.0, 2.0, 0.5, 30.0, 3.0, 1500.0], (21, 6))  # no CDF plateau at 5%
    lower, upper = metrics.posterior_y_interval(t, a, mu, max_values=500)
    cdf = np.cumsum(metrics.posterior_y_pmf(t, a, mu), axis=1)  # one grid 0..max support
    np.testing.assert_array_equal(lower, (cdf < 0.05).sum(axis=1))
    np.testing.assert_array_equal(upper, (cdf < 0.95).sum(axis=1))
    assert lower[4] == upper[4] == 7  # alpha = 0: y = y~


def test_rate_samples_match_loops():
    rng = np.random.default_rng(2)
    theta, phi, pi = rng.random((3, 5, 2)), rng.random((3, 2, 4)), rng.random((3, 2, 2))
    rows, cols = np.array([0, 4, 2]), np.array([3, 0, 4])
    words = cols % 4
    pmf = metrics.rate_samples("pmf", {"theta": theta, "phi": phi}, rows, words)
    np.testing.assert_allclose(pmf, [[(theta[s] @ phi[s])[r, c]
                                      for r, c in zip(rows, words, strict=True)]
                                     for s in range(3)])
    net = metrics.rate_samples("community", {"theta": theta, "pi": pi}, rows, cols)
    np.testing.assert_allclose(net, [[(theta[s] @ pi[s] @ theta[s].T)[r, c]
                                      for r, c in zip(rows, cols, strict=True)] for s in range(3)])


def test_evaluate_cli_writes_one_row_of_metrics(tmp_path):
    rng = np.random.default_rng(3)
    theta, phi = rng.gamma(1.0, 1.0, (6, 2)), rng.gamma(1.0, 1.0, (2, 12))
    mu = theta @ phi
    Y = rng.poisson(mu)
    save_npz(tmp_path / "truth.npz", Y=Y, mu=mu)
    save_npz(tmp_path / "priv.npz", Y_noisy=Y + two_sided_geometric(rng, 0.5, Y.shape),
             alpha=np.full((1, 1), 0.5))
    save_npz(tmp_path / "fit.npz", mu_hat=mu, theta=theta, phi=phi, seed=np.int64(9),
             theta_samples=np.stack([theta] * 4), phi_samples=np.stack([phi] * 4),
             config=json.dumps({"numba_threads": 2}))
    mask = np.zeros(Y.shape, dtype=bool)
    mask[0] = True
    np.save(tmp_path / "mask.npy", mask)
    out = tmp_path / "m.json"
    assert main(["evaluate", str(tmp_path / "fit.npz"), str(out), "--truth",
                 str(tmp_path / "truth.npz"), "--model", "pmf", "--mask",
                 str(tmp_path / "mask.npy"), "--privatized", str(tmp_path / "priv.npz"),
                 "--coherence", "--label", "method=private", "--label", "K=2"]) == 0
    row = json.loads(out.read_text())
    assert row["method"] == "private" and row["K"] == "2" and row["seed"] == 9
    assert row["threads"] == 2
    assert row["kl"] == 0.0 and row["mae_mu"] == 0.0
    assert row["mae_y"] == pytest.approx(np.abs(mu - Y).mean())
    assert row["heldout_mae"] == pytest.approx(np.abs(mu - Y)[0].mean())
    assert 0 <= row["coverage90"] <= 1 and -1 <= row["npmi"] <= 1


def test_evaluate_cli_rejects_mismatched_shapes(tmp_path, capsys):
    save_npz(tmp_path / "truth.npz", Y=np.zeros((3, 3), dtype=np.int64))
    save_npz(tmp_path / "fit.npz", mu_hat=np.zeros((3, 4)))
    code = main(["evaluate", str(tmp_path / "fit.npz"), str(tmp_path / "m.json"),
                 "--truth", str(tmp_path / "truth.npz"), "--model", "pmf"])
    err = capsys.readouterr().err
    assert code == 2 and "mu_hat shape (3, 4)" in err and not (tmp_path / "m.json").exists()


def _corpus(seed=0, n_docs=400, n_words=12):
    """Random document-term counts with no empty document, and the same corpus as tokens."""
    rng = np.random.default_rng(seed)
    p_V = rng.uniform(0.2, 0.8, n_words)
    Y_DV = (rng.random((n_docs, n_words)) < p_V).astype(int) * rng.integers(1, 3, (n_docs, n_words))
    Y_DV[Y_DV.sum(axis=1) == 0, 0] = 1
    texts = [[f"w{v}" for v in range(n_words) for _ in range(Y_DV[d, v])] for d in range(n_docs)]
    return Y_DV, texts


def test_coherence_agrees_with_gensim():
    """NPMI equals gensim's c_npmi with a window spanning whole documents (document
    co-occurrence); UMass is gensim's u_mass summed over the M (M - 1) / 2 ordered pairs
    instead of averaged, with Mimno's +1 smoothing instead of gensim's 1e-12 per document."""
    gensim = pytest.importorskip("gensim")
    from gensim.models.coherencemodel import CoherenceModel

    Y_DV, texts = _corpus()
    dictionary = gensim.corpora.Dictionary(texts)
    top_TM = metrics.top_words(np.random.default_rng(1).random((3, Y_DV.shape[1])), 5)
    topics = [[f"w{v}" for v in row] for row in top_TM]
    npmi = CoherenceModel(topics=topics, texts=texts, dictionary=dictionary, coherence="c_npmi",
                          window_size=10**6, topn=5).get_coherence_per_topic()
    np.testing.assert_allclose(metrics.npmi(Y_DV, top_TM), npmi, rtol=1e-9, atol=1e-12)
    umass = CoherenceModel(topics=topics, corpus=[dictionary.doc2bow(t) for t in texts],
                           dictionary=dictionary, coherence="u_mass",
                           topn=5).get_coherence_per_topic()
    _, co_UU, _ = metrics.document_frequencies(Y_DV, np.arange(Y_DV.shape[1]))
    m, l = np.tril_indices(5, k=-1)
    smoothing = np.log((co_UU[top_TM[:, m], top_TM[:, l]] + 1) / co_UU[top_TM[:, m], top_TM[:, l]])
    np.testing.assert_allclose(metrics.umass(Y_DV, top_TM),
                               len(m) * np.array(umass) + smoothing.sum(axis=1), rtol=1e-9)


def test_topic_error_is_zero_for_permuted_topics_and_two_for_disjoint_ones():
    Phi_KV = np.array([[0.7, 0.3, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.25, 0.25, 0.25, 0.25]])
    assert metrics.topic_error(3 * Phi_KV[[2, 0, 1]], Phi_KV) == pytest.approx(0.0)
    disjoint = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    assert metrics.topic_error(disjoint, np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]])) == \
        pytest.approx(1.0)  # one exact topic (0) and one disjoint (2): mean 1
    fit = {"phi_samples": np.stack([Phi_KV[::-1], 5 * Phi_KV]), "log_joint": np.array([-9.0, -1.0]),
           "phi": Phi_KV[::-1]}
    np.testing.assert_array_equal(metrics.max_joint_phi(fit), 5 * Phi_KV)


def test_evaluate_fit_reports_the_papers_measures():
    rng = np.random.default_rng(3)
    truth = synthetic.pmf_truth(rng, 30, 20, 3, 1.0, 1.0)
    fit = {"mu_hat": truth["mu"], "phi": truth["phi"], "theta": truth["theta"]}
    mask = np.zeros(truth["Y"].shape, bool)
    mask[:5, :5] = True
    out = metrics.evaluate_fit("pmf", fit, truth, mask=mask, coherence=True)
    assert out["kl"] == pytest.approx(0.0) and out["topic_l1"] == pytest.approx(0.0)
    assert {"mae_y", "mae_mu", "heldout_mae", "npmi", "umass"} <= set(out)
    observed_mean = truth["Y"][~mask].mean()
    assert out["heldout_baseline_mae"] == pytest.approx(
        np.abs(truth["Y"][mask] - observed_mean).mean())
    assert "coverage90" not in out


def test_poisson_deviance_is_twice_the_kl_with_the_count_as_mean_and_smallest_at_the_mean():
    y = np.array([0.0, 1.0, 4.0])
    mu = np.array([0.5, 2.0, 4.0])
    by_hand = 2 * np.array([0.5, np.log(1 / 2) - 1 + 2, 0.0])
    assert metrics.poisson_deviance(mu, y) == pytest.approx(by_hand.mean())
    # a consistent score for the mean: over Poisson(3) draws the constant 3 scores best,
    # while MAE prefers the median of a skewed count (here 0 for a Poisson(0.5))
    draws = np.random.default_rng(0).poisson(3.0, 20000)
    scores = [metrics.poisson_deviance(np.full(draws.shape, c), draws) for c in (2.7, 3.0, 3.3)]
    assert scores[1] < min(scores[0], scores[2])
    skewed = np.random.default_rng(1).poisson(0.5, 20000)
    assert metrics.mae(np.zeros(skewed.shape), skewed) < metrics.mae(np.full(skewed.shape, 0.5),
                                                                   skewed)


def test_row_column_baseline_uses_observed_cells_only():
    Y = np.array([[0.0, 2.0, 9.0], [1.0, 3.0, 5.0]])
    observed = np.array([[False, True, False], [True, True, True]])
    m = 11.0 / 4  # observed counts 2, 1, 3, 5 over 4 cells
    rows = np.array([(2 + m) / 2, (9 + m) / 4])  # one pseudo-cell at m per row and column
    cols = np.array([(1 + m) / 2, (5 + m) / 3, (5 + m) / 2])
    np.testing.assert_allclose(metrics.row_column_baseline(Y, observed),
                               np.outer(rows, cols) / m)
    Y[0, 2] = 1e6  # held out: never read
    np.testing.assert_allclose(metrics.row_column_baseline(Y, observed),
                               np.outer(rows, cols) / m)
    Y[0] = 0.0  # a row with no observed count still gets a positive rate
    assert (metrics.row_column_baseline(Y, observed) > 0).all()


def test_evaluate_fit_scores_held_out_cells_by_deviance_against_the_row_column_baseline():
    rng = np.random.default_rng(4)
    truth = synthetic.community_truth(rng, 40, 4, 0.3, 0.3)
    mask = rng.random(truth["Y"].shape) < 0.2
    out = metrics.evaluate_fit("community", {"mu_hat": truth["mu"]}, truth, mask=mask)
    held = mask & ~np.eye(40, dtype=bool)
    assert out["heldout_deviance"] == pytest.approx(
        metrics.poisson_deviance(truth["mu"], truth["Y"], held))
    # the true rates of a block model predict held-out counts better than row x column means
    assert out["heldout_deviance"] < out["heldout_baseline_deviance"]


def test_convergence_reads_the_fit_diagnostics():
    fit = {"diag_rhat_loglik": np.float64(1.2), "diag_ess_bulk_loglik": np.float64(40.0),
           "diag_ess_tail_loglik": np.float64(30.0), "diag_rhat_mu": np.array([1.01, np.nan, 1.3]),
           "diag_cells": np.zeros((3, 2), np.int64), "extra_n_chains": np.int64(4)}
    out = metrics.convergence(fit)
    first = {k: out.pop(k) for k in ("rhat_loglik_first", "ess_bulk_loglik_first",
                                     "rhat_mu_max_first")}
    assert out == {"rhat_loglik": 1.2, "ess_bulk_loglik": 40.0, "ess_tail_loglik": 30.0,
                   "rhat_mu_max": 1.3, "n_chains": 4.0, "extended": 0.0, "converged": 0.0}
    assert np.isnan(list(first.values())).all()  # a fit that does not record its windows
    windows = {"extra_extended": np.int64(2), "extra_window_rhat": np.array([1.3, 1.1, 1.2]),
               "extra_window_ess": np.array([9.0, 30.0, 40.0]),
               "extra_window_rhat_mu": np.array([np.nan, 1.2, 1.3])}
    out = metrics.convergence({**fit, **windows})
    assert out["extended"] == 2.0
    assert out["rhat_loglik_first"] == 1.3 and out["ess_bulk_loglik_first"] == 9.0
    assert np.isnan(out["rhat_mu_max_first"])
    good = {**fit, "diag_rhat_loglik": np.float64(1.005), "diag_ess_bulk_loglik": np.float64(400),
            "diag_rhat_mu": np.array([1.01, 1.02, 1.0])}
    assert metrics.convergence(good)["converged"] == 1.0
    assert metrics.convergence({**good, "extra_n_chains": np.int64(3)})["converged"] == 0.0
    assert math.isnan(metrics.convergence({**fit, "diag_rhat_mu": np.array([np.nan])})
                      ["rhat_mu_max"])


def test_cavi_fit_reports_the_spread_of_its_restarts():
    rng = np.random.default_rng(3)
    truth = synthetic.pmf_truth(rng, 30, 20, 3, 1.0, 1.0)
    fit = {"mu_hat": truth["mu"], "extra_objective": np.array([-30.0, -17.5, -20.0])}
    assert metrics.evaluate_fit("pmf", fit, truth)["objective_spread"] == 12.5
    assert "objective_spread" not in metrics.evaluate_fit("pmf", {"mu_hat": truth["mu"]}, truth)


def _two_modes(model, rng, S=5):
    """A fit of 2 chains whose samples sit at two different rates: chain 0 at the truth's
    factors, chain 1 at factors twice as large."""
    if model == "pmf":
        truth = synthetic.pmf_truth(rng, 12, 15, 2, 1.0, 1.0)
        names, factors = ("theta", "phi"), (truth["theta"], truth["phi"])
    else:
        theta, pi = rng.gamma(1.0, 1.0, (10, 2)), rng.gamma(1.0, 1.0, (2, 2))
        mu = theta @ pi @ theta.T
        truth, names, factors = {"Y": rng.poisson(mu), "mu": mu}, ("theta", "pi"), (theta, pi)
    jitter = [rng.uniform(0.9, 1.1, (2 * S, *f.shape)) for f in factors]
    samples = {f"{n}_samples": np.concatenate([f * j[:S], 2.0 * f * j[S:]])
               for n, f, j in zip(names, factors, jitter, strict=True)}
    fit = {**samples, "log_joint": rng.normal(size=2 * S), "extra_n_chains": np.int64(2)}
    fit["mu_hat"] = metrics.mean_rate(model, {n: samples[f"{n}_samples"] for n in names})
    return fit, truth


@pytest.mark.parametrize("model", ["pmf", "community"])
def test_each_chain_alone_gets_its_own_rates_and_metrics(model):
    fit, truth = _two_modes(model, np.random.default_rng(4))
    names = ("theta", "phi") if model == "pmf" else ("theta", "pi")
    views = [metrics.chain_view(model, fit, c, 2) for c in range(2)]
    for c, view in enumerate(views):
        run = slice(5 * c, 5 * (c + 1))
        rates = [fit["theta_samples"][s] @ fit[f"{names[1]}_samples"][s]
                 for s in range(run.start, run.stop)]
        if model == "community":
            rates = [r @ t.T for r, t in zip(rates, fit["theta_samples"][run], strict=True)]
        expected = np.mean(rates, axis=0)
        np.testing.assert_allclose(view["mu_hat"], expected, rtol=1e-12)
        np.testing.assert_array_equal(view["log_joint"], fit["log_joint"][run])
    np.testing.assert_allclose((views[0]["mu_hat"] + views[1]["mu_hat"]) / 2, fit["mu_hat"],
                               rtol=1e-12)
    out = metrics.chain_metrics(model, fit, truth)
    pooled = metrics.evaluate_fit(model, fit, truth)
    # chain 1's rates are twice the truth's: far worse than chain 0's, and than the pool's
    assert out["kl_chain0"] < pooled["kl"] < out["kl_chain1"]
    assert out["mae_mu_chain0"] < out["mae_mu_chain1"]
    scored = ("mae_y", "mae_mu", "kl") + (("topic_l1",) if model == "pmf" else ())
    assert {metrics.chain_key(m, c) for m in scored for c in (0, 1)} == set(out)


def test_chain_metrics_need_several_chains_and_samples():
    fit, truth = _two_modes("pmf", np.random.default_rng(5))
    assert metrics.chain_metrics("pmf", {**fit, "extra_n_chains": np.int64(1)}, truth) == {}
    cavi = {"mu_hat": fit["mu_hat"], "extra_n_chains": np.int64(2)}
    assert metrics.chain_metrics("pmf", cavi, truth) == {}
    held = metrics.chain_metrics("pmf", fit, truth, coherence=True,
                                 mask=np.eye(*truth["Y"].shape, dtype=bool))
    assert {"heldout_mae_chain1", "heldout_deviance_chain0", "npmi_chain1", "umass_chain0",
            "topic_l1_chain1"} <= set(held)


def test_evaluate_cli_writes_each_chains_metrics_and_refuses_an_uneven_split(tmp_path, capsys):
    fit, truth = _two_modes("pmf", np.random.default_rng(6))
    save_npz(tmp_path / "truth.npz", **truth)
    save_npz(tmp_path / "fit.npz", **fit, seed=np.int64(1), iterations=np.int64(10),
             config=json.dumps({}))
    args = ["evaluate", str(tmp_path / "fit.npz"), str(tmp_path / "m.json"), "--truth",
            str(tmp_path / "truth.npz"), "--model", "pmf"]
    assert main(args) == 0
    row = json.loads((tmp_path / "m.json").read_text())
    assert row["kl_chain0"] < row["kl"] < row["kl_chain1"]
    save_npz(tmp_path / "fit.npz", **{**fit, "extra_n_chains": np.int64(3)}, seed=np.int64(1),
             iterations=np.int64(10), config=json.dumps({}))
    assert main(args) == 2
    assert "10 saved samples do not split into the 3 chains" in capsys.readouterr().err
