"""The findings of this project (lppf.findings) on hand-made tables of a mechanism experiment."""

import numpy as np
import pandas as pd

from lppf import claims, findings

MECHANISMS = ("geometric", "discrete-gaussian", "skellam")
LEVELS = {"epsilon": [0.5, 2.0], "variance": [4.0, 32.0]}


def table(kl, reps=3, truth_sd=3.0, sd=0.01, seed=0, converged=1):
    """M1-like fits: ``kl(method, mechanism, match, level)`` plus a per-replicate offset of
    spread ``truth_sd`` shared by every fit of the replicate (its truth) and noise ``sd``."""
    rng = np.random.default_rng(seed)
    offset = truth_sd * rng.standard_normal(reps)
    rows = []
    for mechanism in MECHANISMS:
        for match, levels in LEVELS.items():
            for level in levels:
                for method in ("private-collapsed", "naive"):
                    for rep in range(reps):
                        rows.append({
                            "experiment": "m1", "model": "pmf", "method": method,
                            "inference": "mcmc", "fix": "none", "K": 5, "setting": "e0-5",
                            "grid": f"{mechanism}-{match[:3]}-{level:g}", "replicate": rep,
                            "mechanism": mechanism, "match": match, match: level,
                            "converged": converged,
                            "kl": kl(method, mechanism, match, level) + offset[rep]
                            + sd * rng.standard_normal()})
    return pd.DataFrame(rows)


def geometric_best(method, mechanism, match, level):
    """Naive 5, private 1 under the geometric, 2 under the others (at every level)."""
    if method == "naive":
        return 5.0
    return 1.0 if mechanism == "geometric" else 2.0


def verdict(card, claim):
    found = card.loc[card["claim"] == claim, "verdict"]
    assert len(found) >= 1, (claim, list(card["claim"]))
    return list(found)


def test_rows_are_stated_as_measured_and_paired_over_replicates():
    card = findings.scorecard(table(geometric_best))
    assert list(card.columns) == claims.COLUMNS
    assert set(card["source"]) == {findings.SOURCE}
    for mechanism in MECHANISMS:
        for match in ("matched (epsilon, delta)", "matched noise variance"):
            claim = f"M1: private-collapsed kl below naive under {mechanism} ({match})"
            assert verdict(card, claim) == [claims.PASS]
    # the replicates' spread (sd 1.2 here) hides a difference of 1 unpaired, not paired
    claim = "M1: at matched (epsilon, delta), geometric gives lower kl than skellam"
    assert verdict(card, claim) == [claims.PASS] * 2  # one row per level
    compared = card.loc[card["claim"] == claim, "compared"]
    assert compared.str.contains("epsilon=0.5").any() and compared.str.contains("epsilon=2").any()
    # the gain over naive: 4 under the geometric, 3 under the others
    claim = ("M1: at matched noise variance, private-collapsed gains more over naive under "
             "geometric than under discrete-gaussian")
    assert verdict(card, claim) == [claims.PASS] * 2
    assert set(card["converged"]) == {"yes (6 of 6 fits)", "yes (12 of 12 fits)"}


def test_the_direction_follows_the_measurement_and_an_unresolved_order_fails():
    def skellam_best(gap):
        return lambda method, mechanism, match, level: (
            5.0 if method == "naive" else {"skellam": 1.0}.get(mechanism, 1.0 + gap))

    card = findings.scorecard(table(skellam_best(0.5)))
    rows = card[card["claim"].str.contains("gives lower kl than")]
    assert rows["claim"].str.contains("skellam gives lower kl").all() and len(rows) == 8
    assert set(rows["verdict"]) == {claims.PASS}
    card = findings.scorecard(table(skellam_best(0.0), sd=0.0))  # a tie
    rows = card[card["claim"].str.contains("gives lower kl than")]
    assert set(rows["verdict"]) == {claims.FAIL} and len(rows) == 8  # not resolved


def test_private_no_better_than_naive_fails():
    def tie(method, mechanism, match, level):
        return 5.0 if mechanism == "geometric" or method == "naive" else 6.0

    card = findings.scorecard(table(tie))
    assert verdict(card, "M1: private-collapsed kl below naive under geometric "
                         "(matched (epsilon, delta))") == [claims.FAIL]
    assert verdict(card, "M1: private-collapsed kl below naive under skellam "
                         "(matched noise variance)") == [claims.FAIL]


def test_the_noisiest_level_is_the_smallest_epsilon_and_the_largest_variance():
    def noisy_only(method, mechanism, match, level):
        noisiest = level == (0.5 if match == "epsilon" else 32.0)
        return 5.0 if method == "naive" or not noisiest else 1.0

    card = findings.scorecard(table(noisy_only))
    below = card[card["claim"].str.contains("below naive")]
    assert set(below["verdict"]) == {claims.PASS} and len(below) == 6
    assert below["compared"].str.contains(r"epsilon=0.5 \(noisiest\)|variance=32 \(noisiest\)"
                                          ).all()


def test_one_replicate_is_not_run_and_unconverged_fits_are_flagged():
    card = findings.scorecard(table(geometric_best, reps=1))
    assert set(card["verdict"]) == {claims.NOT_RUN}
    card = findings.scorecard(table(geometric_best, converged=0))
    assert card["converged"].str.startswith("no (0 of").all()


def test_markdown_section_and_tables_without_a_mechanism_experiment():
    card = findings.scorecard(table(geometric_best))
    text = findings.markdown(card)
    assert text.startswith("\n## Findings of this project\n\nfindings: ")
    assert text.count("\n| M1: ") == len(card)
    other = table(geometric_best).drop(columns=["mechanism"])
    assert findings.scorecard(other).empty and findings.markdown(findings.scorecard(other)) == ""


def test_chains_column_counts_a_row_whose_direction_flips_in_a_chain_as_not_pass():
    fits = table(geometric_best)
    for c in range(2):
        fits[f"kl_chain{c}"] = fits["kl"]
    # in chain 1 the skellam's private fits are the best everywhere: the order the pooled
    # means give (geometric first) is not that chain's
    skellam = (fits["mechanism"] == "skellam") & (fits["method"] == "private-collapsed")
    fits.loc[skellam, "kl_chain1"] = fits.loc[skellam, "kl"] - 1.5
    card = findings.scorecard(fits).set_index(["claim", "compared"])["chains"]
    order = "M1: at matched (epsilon, delta), geometric gives lower kl than skellam"
    assert set(card.loc[order]) == {"PASS in 1 of 2"}
    below = "M1: private-collapsed kl below naive under skellam (matched (epsilon, delta))"
    assert set(card.loc[below]) == {"PASS in 2 of 2"}
