"""The claims scorecard (lppf.claims) on hand-made tables of fits."""

import math

import numpy as np
import pandas as pd
import pytest

from lppf import claims


def table(exp, column, values, metric, means, reps=3, sd=0.01, extra=None, seed=0):
    """A fits table: every method at every privacy level (nonprivate once, grid 'true')."""
    rng = np.random.default_rng(seed)
    rows = []
    for method, by_level in means.items():
        levels = [None] if method == "nonprivate" else values
        for level in levels:
            mean = by_level if method == "nonprivate" else by_level[level]
            for rep in range(reps):
                rows.append({"experiment": exp, "model": "pmf", "method": method,
                             "inference": "mcmc", "fix": "none", "K": 5, "setting": "base",
                             "grid": "true" if level is None else f"{column}-{level}",
                             "replicate": rep, column: level,
                             metric: mean + sd * rng.standard_normal(), **(extra or {})})
    return pd.DataFrame(rows)


def e1(private_noisy, reps=3):
    means = {"private": {0.1: 1.0, 0.9: private_noisy}, "private-collapsed": {0.1: 1.0, 0.9: 2.0},
             "naive": {0.1: 1.0, 0.9: 5.0}, "nonprivate": 1.0}
    return table("e1", "alpha", [0.1, 0.9], "kl", means, reps=reps)


def verdicts(card, claim):
    return list(card.loc[card["claim"] == claim, "verdict"])


def test_stat_and_the_two_standard_error_criterion():
    a, b = claims.Stat(1.0, 0.3, 3), claims.Stat(1.5, 0.3, 3)
    se = math.sqrt(2 * 0.09 / 3)  # 0.245: a difference of 0.5 is 2.04 se
    assert 0.5 > 2 * se and claims.below(a, b) == claims.PASS
    assert claims.below(a, claims.Stat(1.45, 0.3, 3)) == claims.FAIL  # 1.84 se
    assert claims.below(b, a) == claims.FAIL
    assert claims.below(claims.Stat(1.0, math.nan, 1), b) is None
    assert claims.close_to(claims.Stat(1.2, 0.01, 3), claims.Stat(1.0, 0.01, 3)) == claims.PASS
    assert claims.close_to(claims.Stat(2.0, 0.01, 3), claims.Stat(1.0, 0.01, 3)) == claims.FAIL
    # an excess of 1 is close on the scale of a figure spanning 20, not of one spanning 5
    assert claims.close_to(claims.Stat(2.0, 0.01, 3), claims.Stat(1.0, 0.01, 3), 20) == claims.PASS
    assert claims.close_to(claims.Stat(2.0, 0.01, 3), claims.Stat(1.0, 0.01, 3), 5) == claims.FAIL
    assert str(claims.Stat.of(pd.Series([1.0, 2.0, 3.0]))) == "2 ± 1 (n=3)"


def test_private_below_naive_at_the_noisiest_level():
    card = claims.scorecard(e1(private_noisy=2.0))
    assert verdicts(card, "E1: private KL below naive (private)") == [claims.PASS]
    assert verdicts(card, "E1: private KL close to non-private (private)") == [claims.PASS]
    compared = card.loc[card["claim"] == "E1: private KL below naive (private)", "compared"]
    assert "alpha=0.9 (noisiest)" in compared.iloc[0]
    card = claims.scorecard(e1(private_noisy=6.0))  # a local mode: private worse than naive
    assert verdicts(card, "E1: private KL below naive (private)") == [claims.FAIL]


def test_one_replicate_cannot_decide_and_absent_experiments_are_not_run():
    card = claims.scorecard(e1(private_noisy=2.0, reps=1))
    assert verdicts(card, "E1: private KL below naive (private)") == [claims.NOT_RUN]
    assert set(card.loc[card["experiment"] == "e3", "verdict"]) == {claims.NOT_RUN}
    assert set(card["verdict"]) <= {claims.PASS, claims.FAIL, claims.NOT_RUN}
    assert list(card.columns) == claims.COLUMNS
    assert claims.summary(card).startswith("claims: ")


def test_a_config_running_one_private_method_gets_rows_for_it_only():
    fits = e1(private_noisy=2.0)
    card = claims.scorecard(fits[fits["method"] != "private"])
    e1_rows = card.loc[card["experiment"] == "e1", "claim"]
    assert not e1_rows.str.endswith("(private)").any()
    assert verdicts(card, "E1: private KL below naive (private-collapsed)") == [claims.PASS]
    card = claims.scorecard(fits[~fits["method"].isin(["private", "private-collapsed"])])
    assert verdicts(card, "E1: private KL below naive (private)") == [claims.NOT_RUN]


def test_a_pass_on_unconverged_fits_is_counted_apart():
    fits = e1(private_noisy=2.0)
    claim = "E1: private KL below naive (private)"
    assert claims.scorecard(fits).loc[lambda c: c["claim"] == claim, "converged"].iloc[0] == ""
    fits["converged"] = 1.0
    card = claims.scorecard(fits)
    assert card.loc[card["claim"] == claim, "converged"].iloc[0] == "yes (6 of 6 fits)"
    passed = int((card["verdict"] == claims.PASS).sum())
    assert claims.summary(card).startswith(f"claims: {passed} PASS, 0 PASS on unconverged")
    fits.loc[(fits["method"] == "naive") & (fits["alpha"] == 0.9), "converged"] = [1, 0, 1]
    card = claims.scorecard(fits)
    assert card.loc[card["claim"] == claim, "converged"].iloc[0] == "no (5 of 6 fits)"
    assert verdicts(card, claim) == [claims.PASS]
    # naive at the noisiest level is read by both E1 claims of both private methods
    assert claims.summary(card).startswith(f"claims: {passed - 4} PASS, 4 PASS on unconverged")


def test_a_claim_rests_on_the_fits_it_reads():
    fits = e1(private_noisy=2.0).assign(converged=1.0)
    # non-private, replicate 0: read by the claims against non-private, not by those
    # against naive; private-collapsed at alpha 0.9: by its own rows only
    fits.loc[(fits["method"] == "nonprivate") & (fits["replicate"] == 0), "converged"] = 0.0
    fits.loc[(fits["method"] == "private-collapsed") & (fits["alpha"] == 0.9), "converged"] = 0.0
    card = claims.scorecard(fits).set_index("claim")["converged"]
    assert card["E1: private KL below naive (private)"] == "yes (6 of 6 fits)"
    assert card["E1: private KL below naive (private-collapsed)"] == "no (3 of 6 fits)"
    # private at the quietest level, non-private, and naive at the noisiest (naive's excess)
    assert card["E1: private KL close to non-private (private)"] == "no (8 of 9 fits)"
    assert card["E1: private KL close to non-private (private-collapsed)"] == "no (8 of 9 fits)"
    assert card["E2: private KL below naive"] == ""  # not run: no fits


def test_each_e4_claim_rests_on_the_fits_of_its_own_setting():
    means = {"private": {0.25: 1.0}, "naive": {0.25: 3.0}, "nonprivate": 1.2}
    fits = pd.concat([table("e4", "eps_n", [0.25], metric, means,
                            extra={"heldout": held, "converged": float(held == 0)})
                      for held, metric in [(0, "mae_y"), (161, "heldout_mae")]])
    card = claims.scorecard(fits).set_index("claim")["converged"]
    for claim in ["E4: private MAE below naive (private)",
                  "E4: private MAE below non-private (private)"]:
        assert card[claim] == "yes (6 of 6 fits)", claim  # two methods, 3 replicates
    # held-out against naive is decided only where naive is degraded: non-private read too
    assert card["E4: private held-out MAE below naive (private)"] == "no (0 of 9 fits)"
    assert card["E4: private held-out MAE below non-private (private)"] == "no (0 of 6 fits)"


def test_eps_levels_are_noisier_when_smaller_and_coherence_is_higher_is_better():
    means = {"private": {0.25: -1.0, 1.0: -1.0}, "private-collapsed": {0.25: -1.0, 1.0: -1.0},
             "naive": {0.25: -3.0, 1.0: -1.1}, "nonprivate": -1.0}
    fits = table("e3", "eps_n", [0.25, 1.0], "umass", means)
    card = claims.scorecard(fits)
    rows = card[card["claim"] == "E3: private UMass above naive (private)"]
    assert list(rows["verdict"]) == [claims.PASS] and "eps_n=0.25" in rows["compared"].iloc[0]


def test_coverage_and_cavi_claims():
    s1 = table("s1", "alpha", [0.5, 0.9], "coverage90",
               {"private": {0.5: 0.9, 0.9: 0.88}}, reps=1)
    card = claims.scorecard(s1)
    assert verdicts(card, "S1: 90% posterior intervals of Y cover the truth") == [claims.PASS]
    s1.loc[s1["alpha"] == 0.5, "coverage90"] = 0.99  # over-coverage of a discrete count
    assert verdicts(claims.scorecard(s1), "S1: 90% posterior intervals of Y cover the truth") \
        == [claims.PASS]
    s1.loc[s1["alpha"] == 0.9, "coverage90"] = 0.7
    card = claims.scorecard(s1)
    assert verdicts(card, "S1: 90% posterior intervals of Y cover the truth") == [claims.FAIL]
    v1 = pd.DataFrame([{"experiment": "v1", "method": "private", "inference": inf, "fix": "none",
                        "fit_seconds": s, "mae_mu": e}
                       for inf, s, e in (("mcmc", 10.0, 1.0), ("cavi", 1.0, 1.2))])
    card = claims.scorecard(v1)
    assert verdicts(card, "V1: CAVI faster than MCMC") == [claims.PASS]
    assert verdicts(card, "V1: CAVI error near MCMC's") == [claims.PASS]
    v1.loc[v1["inference"] == "cavi", "mae_mu"] = 2.0
    assert verdicts(claims.scorecard(v1), "V1: CAVI error near MCMC's") == [claims.FAIL]


def test_e4_compares_the_held_out_block_only_in_held_out_settings():
    means = {"private": {0.25: 1.0}, "private-collapsed": {0.25: 1.0}, "naive": {0.25: 2.0},
             "nonprivate": 1.0}
    full = table("e4", "eps_n", [0.25], "mae_y", means, extra={"heldout": 0})
    held = table("e4", "eps_n", [0.25], "heldout_mae", means, extra={"heldout": 10})
    held["mae_y"] = 99.0  # never read: MAE is compared in the setting without held-out cells
    card = claims.scorecard(pd.concat([full, held], ignore_index=True))
    assert verdicts(card, "E4: private MAE below naive (private)") == [claims.PASS]
    assert verdicts(card, "E4: private held-out MAE below naive (private)") == [claims.PASS]


@pytest.mark.parametrize("exp", ["s2", "s3", "e2"])
def test_every_claim_has_a_row_when_its_experiment_is_absent(exp):
    card = claims.scorecard(e1(private_noisy=2.0))
    assert (card["experiment"] == exp).any()


def test_e4_held_out_cells_must_be_predictable_in_deviance_paired_by_mask():
    means = {"private": {0.25: 1.0}, "naive": {0.25: 2.0}, "nonprivate": 3.0}
    held = table("e4", "eps_n", [0.25], "heldout_deviance", means, extra={"heldout": 10})
    held["heldout_mae"] = 1.0
    claim = "E4: held-out links are predictable (non-private below baseline)"
    # each replicate's mask moves the fit and its baseline alike: 0.3 below on every mask,
    # with masks ranging over 3: the paired difference decides, the unpaired spread would not
    spread = 3.0 * held["replicate"]
    held["heldout_deviance"] += spread
    held["heldout_baseline_deviance"] = held["heldout_deviance"] + 0.3
    assert verdicts(claims.scorecard(held), claim) == [claims.PASS]
    held["heldout_baseline_deviance"] = held["heldout_deviance"] - 0.3  # worse than the baseline
    assert verdicts(claims.scorecard(held), claim) == [claims.FAIL]
    # a fit that merely ties the baseline up to noise does not pass
    held["heldout_baseline_deviance"] = held["heldout_deviance"] + [0.2, -0.2, 0.1] * 3
    assert verdicts(claims.scorecard(held), claim) == [claims.FAIL]
    assert verdicts(claims.scorecard(held.drop(columns="heldout_baseline_deviance")),
                    claim) == [claims.NOT_RUN]


def test_private_below_nonprivate_in_sample_and_held_out():
    means = {"private": {0.25: 0.8}, "private-collapsed": {0.25: 1.3}, "naive": {0.25: 2.0},
             "nonprivate": 1.2}
    full = table("e4", "eps_n", [0.25], "mae_y", means, extra={"heldout": 0})
    held = table("e4", "eps_n", [0.25], "heldout_mae", means, extra={"heldout": 161})
    held["mae_y"] = 99.0  # never read: in-sample MAE comes from the run without held-out cells
    card = claims.scorecard(pd.concat([full, held], ignore_index=True))
    for what in ("MAE", "held-out MAE"):
        claim = f"E4: private {what} below non-private"
        assert verdicts(card, f"{claim} (private)") == [claims.PASS]
        assert verdicts(card, f"{claim} (private-collapsed)") == [claims.FAIL]
    numbers = card.loc[card["claim"] == "E4: private MAE below non-private (private)", "numbers"]
    assert "vs nonprivate 1.19" in numbers.iloc[0]


def test_private_umass_above_nonprivate_read_at_the_quietest_level():
    means = {"private": {0.5: -120.0, 2.0: -70.0}, "naive": {0.5: -130.0, 2.0: -90.0},
             "nonprivate": -75.0}
    card = claims.scorecard(table("e3", "eps_n", [0.5, 2.0], "umass", means, sd=0.5))
    claim = "E3: private UMass above non-private (private)"
    assert verdicts(card, claim) == [claims.PASS]
    assert "eps_n=2 (quietest)" in card.loc[card["claim"] == claim, "compared"].iloc[0]
    means["private"] = {0.5: -60.0, 2.0: -76.0}  # above non-private only where noisiest
    card = claims.scorecard(table("e3", "eps_n", [0.5, 2.0], "umass", means, sd=0.5))
    assert verdicts(card, claim) == [claims.FAIL]


def test_coherence_is_decided_only_where_the_noise_degrades_naive():
    # private above naive, but naive no worse than non-private: nothing to recover
    means = {"private": {0.25: -0.9, 1.0: -1.0}, "private-collapsed": {0.25: -1.0, 1.0: -1.0},
             "naive": {0.25: -0.98, 1.0: -1.0}, "nonprivate": -1.0}
    card = claims.scorecard(table("e3", "eps_n", [0.25, 1.0], "npmi", means, sd=0.01))
    rows = card[card["claim"] == "E3: private NPMI above naive (private)"]
    assert list(rows["verdict"]) == [claims.NOT_RUN]
    assert "undecidable at this size" in rows["numbers"].iloc[0]
    means["naive"] = {0.25: -3.0, 1.0: -1.0}
    card = claims.scorecard(table("e3", "eps_n", [0.25, 1.0], "npmi", means, sd=0.1))
    assert verdicts(card, "E3: private NPMI above naive (private)") == [claims.PASS]
    means["private"] = {0.25: -3.5, 1.0: -1.0}
    card = claims.scorecard(table("e3", "eps_n", [0.25, 1.0], "npmi", means, sd=0.1))
    assert verdicts(card, "E3: private NPMI above naive (private)") == [claims.FAIL]
    # naive not degraded, but private clearly worse than naive: still a FAIL
    means = {"private": {0.25: -2.0, 1.0: -1.0}, "private-collapsed": {0.25: -1.0, 1.0: -1.0},
             "naive": {0.25: -0.98, 1.0: -1.0}, "nonprivate": -1.0}
    card = claims.scorecard(table("e3", "eps_n", [0.25, 1.0], "npmi", means, sd=0.01))
    assert verdicts(card, "E3: private NPMI above naive (private)") == [claims.FAIL]


def test_s2_and_s3_compare_the_methods_on_the_same_replicates():
    # each replicate's truth shifts both methods alike: unpaired SEs cannot separate them
    rows = []
    for rep, shift in enumerate([0.0, 1.0, 2.0, 3.0, 0.5]):
        for method, err in (("private", 0.2), ("naive", 0.4), ("nonprivate", 0.1)):
            rows.append({"experiment": "s3", "model": "community", "method": method,
                         "inference": "mcmc", "fix": "none", "K": 5, "setting": "base",
                         "grid": "true" if method == "nonprivate" else "epsmean-0.75",
                         "replicate": rep, "eps_mean": None if method == "nonprivate" else 0.75,
                         "kl": shift + err + 0.01 * rep})
    fits = pd.DataFrame(rows)
    unpaired = claims.below(claims.stat(fits, "private", "kl", "eps_mean", 0.75),
                            claims.stat(fits, "naive", "kl", "eps_mean", 0.75))
    assert unpaired == claims.FAIL
    claim = "S3: private KL (block structure) below naive (private)"
    card = claims.scorecard(fits)
    assert verdicts(card, claim) == [claims.PASS]
    assert "paired difference 0.2" in card.loc[card["claim"] == claim, "numbers"].iloc[0]
    fits.loc[(fits["method"] == "naive") & (fits["replicate"] == 4), "kl"] -= 0.6
    assert verdicts(claims.scorecard(fits), claim) == [claims.FAIL]
    assert verdicts(claims.scorecard(fits[fits["replicate"] == 0]), claim) == [claims.NOT_RUN]


def test_coherence_is_compared_at_the_noisiest_level_only():
    means = {"private": {0.5: 0.2, 1.0: 0.3}, "private-collapsed": {0.5: 0.05, 1.0: 0.3},
             "naive": {0.5: 0.1, 1.0: 0.4}, "nonprivate": 0.45}
    card = claims.scorecard(table("e3", "eps_n", [0.5, 1.0], "npmi", means))
    rows = card[card["claim"].str.contains("NPMI")]
    assert list(rows["claim"]) == ["E3: private NPMI above naive (private)",
                                   "E3: private NPMI above naive (private-collapsed)"]
    assert list(rows["verdict"]) == [claims.PASS, claims.FAIL]
    assert all("eps_n=0.5 (noisiest)" in c for c in rows["compared"])


def test_graded_reads_the_level_a_claim_asks_for():
    means = {"private": {0.5: 1.0, 2.0: 2.0}, "naive": {0.5: 1.0, 2.0: 2.0}, "nonprivate": 1.0}
    fits = table("e3", "eps_n", [0.5, 2.0], "mae_y", means)
    _, grid = claims.graded(fits, "e3", "mae_y")
    assert grid == claims.Grid("eps_n", 0.5, 2.0, 0.5)  # eps/N: smaller is noisier
    assert claims.graded(fits, "e3", "mae_y", at="quietest")[1].level == 2.0
    assert claims.graded(fits, "e3", "umass")[1] is None  # no such metric: NOT RUN


def test_chains_column_reads_each_claim_from_each_chain_alone():
    fits = e1(private_noisy=2.0).assign(converged=1.0)
    claim = "E1: private KL below naive (private)"
    assert set(claims.scorecard(fits)["chains"]) == {""}  # no chain columns: nothing to say
    rng = np.random.default_rng(1)
    for c in range(4):  # each chain near the pooled value
        fits[f"kl_chain{c}"] = fits["kl"] + 0.01 * rng.standard_normal(len(fits))
    card = claims.scorecard(fits).set_index("claim")
    assert card.loc[claim, "chains"] == "PASS in 4 of 4"
    # chain 2 of naive's fits at the noisiest level found a mode as good as private's
    noisy_naive = (fits["method"] == "naive") & (fits["alpha"] == 0.9)
    fits.loc[noisy_naive, "kl_chain2"] = 2.0
    card = claims.scorecard(fits).set_index("claim")
    assert card.loc[claim, "verdict"] == claims.PASS
    assert card.loc[claim, "chains"] == "PASS in 3 of 4"
    quiet = "E1: private KL close to non-private (private)"
    assert card.loc[quiet, "chains"] == "PASS in 4 of 4"
    fits.loc[noisy_naive & (fits["replicate"] == 0), "converged"] = 0.0
    card = claims.scorecard(fits)
    # the two claims against naive rest on that fit, and one of them no longer PASSes in
    # every chain: the quiet ones read naive's excess, which chain 2 cuts
    summary = claims.summary(card)
    unconverged = card.loc[card["converged"].str.startswith("no") & (card["verdict"] == "PASS")]
    every = int((unconverged["chains"] == "PASS in 4 of 4").sum())
    assert f"{len(unconverged)} PASS on unconverged fits ({every} of them in every chain)" \
        in summary and every < len(unconverged)
    # a FAIL stays a FAIL, however the chains read it
    fits = e1(private_noisy=6.0)
    fits["kl_chain0"] = fits["kl"]
    card = claims.scorecard(fits).set_index("claim")
    assert card.loc[claim, "verdict"] == claims.FAIL
    assert card.loc[claim, "chains"] == "PASS in 0 of 1"


def test_chain_tables_take_each_chains_value_where_a_fit_has_one():
    fits = pd.DataFrame({"kl": [1.0, 2.0], "kl_chain0": [1.5, np.nan], "kl_chain1": [0.5, np.nan],
                         "umass": [-3.0, -4.0]})
    tables = claims.chain_tables(fits)
    assert [list(t["kl"]) for t in tables] == [[1.5, 2.0], [0.5, 2.0]]  # CAVI: pooled kept
    assert all(list(t["umass"]) == [-3.0, -4.0] for t in tables)
    assert claims.chain_tables(fits[["kl", "umass"]]) == []
