"""Ground-truth generators, seeds, noise levels and masks (lppf.synthetic, lppf simulate)."""

import json

import numpy as np
import pytest
from scipy import stats

from lppf import synthetic
from lppf.cli import main
from lppf.io import save_npz

P_MIN = 0.01


def poisson_gof(y, mu):
    """Chi-square test of iid counts y against Pois(mu), bins with >= 5 expected counts."""
    n = y.size
    edges = [k for k in range(int(mu * 4) + 10) if n * stats.poisson.pmf(k, mu) >= 5]
    lo, hi = edges[0], edges[-1]
    observed = [np.sum(y <= lo)] + [np.sum(y == k) for k in range(lo + 1, hi)] + [np.sum(y >= hi)]
    expected = n * np.array([stats.poisson.cdf(lo, mu)]
                            + [stats.poisson.pmf(k, mu) for k in range(lo + 1, hi)]
                            + [stats.poisson.sf(hi - 1, mu)])
    return stats.chisquare(observed, expected).pvalue


def test_derive_seed_is_stable_and_distinguishes_parts():
    assert synthetic.derive_seed(2019, "s1", "base", 0, "truth") == 3483708706
    seeds = {synthetic.derive_seed(2019, "e1", rep) for rep in range(100)}
    assert len(seeds) == 100
    assert all(0 <= s < 2**32 for s in seeds)
    assert synthetic.derive_seed("e1", 1) != synthetic.derive_seed("e11")


def test_pmf_truth_factors_are_gamma_and_counts_poisson():
    rng = np.random.default_rng(0)
    truth = synthetic.pmf_truth(rng, 200, 150, 4, shape=0.5, rate=2.0)
    assert truth["Y"].shape == (200, 150) and truth["Y"].dtype == np.int64
    np.testing.assert_allclose(truth["mu"], truth["theta"] @ truth["phi"])
    for x in (truth["theta"], truth["phi"]):
        assert stats.kstest(x.ravel(), stats.gamma(0.5, scale=0.5).cdf).pvalue > P_MIN
    mu = np.full(4000, 2.5)
    assert poisson_gof(synthetic._sample(rng, mu)["Y"], 2.5) > P_MIN


def test_community_truth_has_empty_diagonal_and_gamma_factors():
    rng = np.random.default_rng(1)
    truth = synthetic.community_truth(rng, 300, 4, shape=0.7, rate=0.5)
    assert np.all(np.diag(truth["Y"]) == 0) and np.all(np.diag(truth["mu"]) == 0)
    expected = truth["theta"] @ truth["pi"] @ truth["theta"].T
    off = ~np.eye(300, dtype=bool)
    np.testing.assert_allclose(truth["mu"][off], expected[off])
    assert stats.kstest(truth["theta"].ravel(), stats.gamma(0.7, scale=2.0).cdf).pvalue > P_MIN


def test_blocks_truth_separates_topics_and_documents():
    truth = synthetic.blocks_truth(np.random.default_rng(2), 3, 30, 5, doc_length=50)
    assert truth["Y"].shape == (90, 15)
    np.testing.assert_allclose(truth["phi"].sum(axis=1), 1.0)
    np.testing.assert_array_equal(np.argmax(truth["phi"], axis=0), np.repeat(np.arange(3), 5))
    np.testing.assert_array_equal(np.argmax(truth["theta"], axis=1), np.repeat(np.arange(3), 30))
    # the mean document length is doc_length: 90 documents, sd of a mean ~ 50 / sqrt(900)
    assert abs(truth["mu"].sum(axis=1).mean() - 50) < 5


@pytest.mark.parametrize("model", ["pmf", "community"])
def test_rescaled_truth_multiplies_rows_by_gamma(model):
    rng = np.random.default_rng(3)
    theta = rng.gamma(1.0, 1.0, (500, 4))
    other = rng.gamma(1.0, 1.0, (4, 60) if model == "pmf" else (4, 4))
    key = "phi" if model == "pmf" else "pi"
    e0, f0 = 1.5, 0.1
    truth = synthetic.rescaled_truth(rng, model, {"theta": theta, key: other}, e0, f0)
    keep = synthetic.most_used(theta, other, None)
    ratio = truth["theta"] / theta[:, keep]
    np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones((1, 4)), rtol=1e-10)
    gamma_d = stats.gamma(e0 * f0, scale=1 / f0)
    assert stats.kstest(ratio[:, 0], gamma_d.cdf).pvalue > P_MIN
    if model == "community":
        np.testing.assert_allclose(truth["pi"], other[np.ix_(keep, keep)])


def test_most_used_keeps_components_with_largest_total_rate():
    theta = np.array([[1.0, 0.0, 5.0], [1.0, 0.1, 5.0]])
    phi = np.array([[1.0, 1.0], [10.0, 10.0], [0.01, 0.01]])
    np.testing.assert_array_equal(synthetic.most_used(theta, phi, 2), [0, 1])
    truth = synthetic.rescaled_truth(np.random.default_rng(0), "pmf",
                                     {"theta": theta, "phi": phi}, 5, 0.001, n_components=2)
    assert truth["theta"].shape == (2, 2) and truth["phi"].shape == (2, 2)


def test_beta_alphas_follow_their_beta_distribution():
    alphas = synthetic.beta_alphas(np.random.default_rng(4), 2000, mean=0.3, concentration=10)
    assert alphas.shape == (2000, 1)
    assert stats.kstest(alphas.ravel(), stats.beta(3.0, 7.0).cdf).pvalue > P_MIN
    with pytest.raises(ValueError, match="mean"):
        synthetic.beta_alphas(np.random.default_rng(4), 5, mean=1.0, concentration=10)


def test_mean_precision_alpha_and_top_actor_mask():
    Y = np.array([[0, 4, 0], [2, 0, 1], [0, 0, 0]])
    np.testing.assert_allclose(synthetic.mean_precision_alpha(Y, 1.0), [[np.exp(-1.0 / (7 / 9))]])
    # top sender: actor 0 (sent 4); top recipient: actor 1 (received 4)
    rng = np.random.default_rng(0)
    mask = synthetic.top_actor_mask(Y, 1, 1.0, rng)  # all of their cells: row 0 and column 1
    np.testing.assert_array_equal(mask, [[False, True, True], [False, False, False],
                                         [False, True, False]])
    # senders {0, 1}, recipients {1, 0}: rows 0, 1 and columns 0, 1 cover every off-diagonal cell
    mask = synthetic.top_actor_mask(Y, 2, 1.0, rng)
    np.testing.assert_array_equal(mask, [[False, True, True], [True, False, True],
                                         [True, True, False]])
    with pytest.raises(ValueError, match="fraction"):
        synthetic.top_actor_mask(Y, 1, 0.0, rng)


def test_top_actor_mask_holds_out_a_random_share_of_the_top_actors_cells():
    rng = np.random.default_rng(3)
    Y = rng.poisson(rng.gamma(0.3, 3.0, (60, 1)) * rng.gamma(0.3, 3.0, (1, 60)))
    mask = synthetic.top_actor_mask(Y, 10, 0.5, np.random.default_rng(1))
    involved = synthetic.top_actor_mask(Y, 10, 1.0, np.random.default_rng(1))
    assert not (mask & ~involved).any() and not np.diag(mask).any()
    # each involved cell held out with probability 0.5: binomial, sd sqrt(n / 4)
    n = int(involved.sum())
    assert abs(mask.sum() - n / 2) < 4 * np.sqrt(n / 4)
    # every top actor keeps observed cells in its row and column
    top = np.argsort(-Y.sum(axis=1), kind="stable")[:10]
    assert ((involved & ~mask)[top].sum(axis=1) > 0).all()
    np.testing.assert_array_equal(
        mask, synthetic.top_actor_mask(Y, 10, 0.5, np.random.default_rng(1)))
    assert not np.array_equal(mask, synthetic.top_actor_mask(Y, 10, 0.5,
                                                             np.random.default_rng(2)))


def test_simulate_cli_writes_truth_alpha_and_mask(tmp_path, capsys):
    truth = tmp_path / "truth.npz"
    assert main(["simulate", "community", str(truth), "--actors", "8", "--communities", "2",
                 "--shape", "1", "--rate", "1", "--seed", "5"]) == 0
    data = np.load(truth)
    assert {"Y", "mu", "theta", "pi", "seed"} <= set(data.files) and int(data["seed"]) == 5
    again = tmp_path / "again.npz"
    main(["simulate", "community", str(again), "--actors", "8", "--communities", "2",
          "--shape", "1", "--rate", "1", "--seed", "5"])
    np.testing.assert_array_equal(np.load(again)["Y"], data["Y"])
    alpha = tmp_path / "alpha.npy"
    assert main(["simulate", "noise-level", str(truth), str(alpha), "--epsilon", "2"]) == 0
    np.testing.assert_allclose(np.load(alpha), [[np.exp(-2 / data["Y"].mean())]])
    main(["simulate", "noise-level", str(truth), str(alpha), "--beta-mean", "0.5", "--seed", "1"])
    assert np.load(alpha).shape == (8, 1)
    mask = tmp_path / "mask.npy"
    assert main(["simulate", "mask", str(truth), str(mask), "--top", "2", "--fraction", "0.5",
                 "--seed", "3"]) == 0
    assert np.load(mask).dtype == bool
    np.testing.assert_array_equal(
        np.load(mask), synthetic.top_actor_mask(data["Y"], 2, 0.5, np.random.default_rng(3)))
    factor = tmp_path / "pi.npy"
    assert main(["simulate", "factor", str(truth), str(factor), "pi"]) == 0
    np.testing.assert_array_equal(np.load(factor), data["pi"])


def test_simulate_cli_rejects_bad_input_in_one_line(tmp_path, capsys):
    ref = tmp_path / "ref.npz"
    save_npz(ref, theta=np.ones((3, 2)), config=json.dumps({}))
    code = main(["simulate", "rescale", str(ref), str(tmp_path / "o.npz"), "--model", "pmf",
                 "--e0", "1", "--f0", "0.1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("lppf: error:") and "'phi'" in err and "\n" not in err
    zeros = tmp_path / "zeros.npz"
    save_npz(zeros, Y=np.zeros((3, 3), dtype=np.int64))
    code = main(["simulate", "noise-level", str(zeros), str(tmp_path / "a.npy"), "--epsilon", "1"])
    assert code == 2 and "mean count is 0" in capsys.readouterr().err
