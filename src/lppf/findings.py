"""Findings of this project, kept apart from the papers' claims: which noise mechanism leaves
more for inference at matched privacy (experiment M1, docs/workflow.md).

Input: the tidy table of every fit. The rows of a mechanism experiment carry ``mechanism``,
``match`` (``"epsilon"``: the same (epsilon, delta) at precision N; ``"variance"``: the same
noise variance) and the matched level in column ``epsilon`` or ``variance``. Output: rows with
the columns of the claims scorecard (:data:`lppf.claims.COLUMNS`), stated as measured:

* under each mechanism and match, at the noisiest level: private-collapsed below naive;
* at each matched level: the mechanism whose private-collapsed fits have the lowest mean is
  below each other mechanism;
* at each matched noise variance: private-collapsed's gain over naive (naive minus
  private-collapsed) under each other mechanism, compared with the geometric's, in the
  direction measured.

Every comparison is paired over replicates (replicate r of every mechanism and level shares
one truth; private-collapsed and naive also share the privatized copy): with differences d_r,
PASS when ``|mean(d)| > 2 sd(d) / sqrt(n)``. A row whose direction was read off the means
therefore FAILs only when the order is not resolved at this many replicates.
"""

from __future__ import annotations

import pandas as pd

from lppf.claims import (
    COLUMNS,
    Z,
    by_chain,
    chain_tables,
    converged,
    fits_of,
    paired_below,
    row,
    verdicts,
)
from lppf.claims import summary as claims_summary

SOURCE = "this project (M1)"
PRIVATE, NAIVE, GEOMETRIC = "private-collapsed", "naive", "geometric"
MATCHES = {"epsilon": "matched (epsilon, delta)", "variance": "matched noise variance"}
METRIC = "kl"
# the matched level's sign that makes larger values noisier
NOISIER = {"epsilon": -1, "variance": 1}


def experiments(fits: pd.DataFrame) -> list[str]:
    """The experiments whose fits carry a mechanism (in table order)."""
    if "mechanism" not in fits:
        return []
    return list(dict.fromkeys(fits.loc[fits["mechanism"].notna(), "experiment"]))


def _at(df: pd.DataFrame, match: str, level: float, mechanism: str | None = None,
        method: str = PRIVATE) -> pd.DataFrame:
    sel = (df["match"] == match) & (df[match] == level) & (df["method"] == method)
    if mechanism is not None:
        sel &= df["mechanism"] == mechanism
    return df[sel]


def _series(df: pd.DataFrame, metric: str) -> pd.Series:
    """``metric`` indexed by replicate."""
    return df.set_index("replicate")[metric].astype(float)


def _levels(df: pd.DataFrame, match: str) -> list[float]:
    """The matched levels, quietest first."""
    values = df.loc[df["match"] == match, match].dropna().unique()
    return sorted(values, key=lambda v: NOISIER[match] * v)


def _row(claim, exp, compared, numbers, criterion, verdict, basis) -> dict:
    return {**row(claim, SOURCE, exp, compared, numbers, criterion, verdict),
            "converged": converged(basis)}


def _mean(s: pd.Series) -> str:
    return f"{s.mean():.4g} (n={s.notna().sum()})"


def private_below_naive(df, exp, match, metric=METRIC) -> list[dict]:
    """Under each mechanism, private-collapsed below naive at the noisiest matched level."""
    level = _levels(df, match)[-1]
    out = []
    for mechanism in dict.fromkeys(df["mechanism"].dropna()):
        mine = _at(df, match, level, mechanism)
        naive = _at(df, match, level, mechanism, NAIVE)
        verdict, diff = paired_below(_series(mine, metric), _series(naive, metric))
        out.append(_row(f"{exp.upper()}: private-collapsed {metric} below naive under "
                        f"{mechanism} ({MATCHES[match]})", exp,
                        f"{PRIVATE} vs naive, {mechanism}, {match}={level:g} (noisiest)",
                        f"{PRIVATE} {_mean(_series(mine, metric))} vs naive "
                        f"{_mean(_series(naive, metric))}; {diff}",
                        f"{metric}: {PRIVATE} < naive by > {Z:g} SE of the paired difference",
                        verdict, pd.concat([mine, naive])))
    return out


def mechanism_order(df, exp, match, metric=METRIC) -> list[dict]:
    """At each matched level, the mechanism with the lowest private-collapsed mean below
    each other mechanism."""
    out = []
    for level in _levels(df, match):
        at = _at(df, match, level)
        series = {m: _series(g, metric) for m, g in at.groupby("mechanism")}
        if len(series) < 2:
            continue
        best = min(series, key=lambda m: series[m].mean())
        for other in (m for m in series if m != best):
            verdict, diff = paired_below(series[best], series[other])
            out.append(_row(
                f"{exp.upper()}: at {MATCHES[match]}, {best} gives lower {metric} than {other}",
                exp, f"{PRIVATE}, {best} vs {other}, {match}={level:g}",
                f"{best} {_mean(series[best])} vs {other} {_mean(series[other])}; {diff}",
                f"{metric} of {PRIVATE}: {best} < {other} by > {Z:g} SE of the paired "
                "difference (same truths)", verdict,
                at[at["mechanism"].isin([best, other])]))
    return out


def _gain(df, level, mechanism, metric) -> pd.Series:
    """naive's minus private-collapsed's ``metric`` at one noise variance, by replicate."""
    mine = _series(_at(df, "variance", level, mechanism), metric)
    return _series(_at(df, "variance", level, mechanism, NAIVE), metric) - mine


def gain_vs_geometric(df, exp, metric=METRIC) -> list[dict]:
    """At each matched noise variance: private-collapsed's gain over naive under each other
    mechanism against the geometric's, in the direction measured."""
    out = []
    for level in _levels(df, "variance"):
        mechanisms = set(_at(df, "variance", level)["mechanism"])
        if GEOMETRIC not in mechanisms:
            continue
        for other in sorted(mechanisms - {GEOMETRIC}):
            gains = {m: _gain(df, level, m, metric) for m in (GEOMETRIC, other)}
            small, large = sorted(gains, key=lambda m: gains[m].mean())
            verdict, diff = paired_below(gains[small], gains[large])
            basis = df[(df["match"] == "variance") & (df["variance"] == level)
                       & df["mechanism"].isin(list(gains))]
            out.append(_row(
                f"{exp.upper()}: at matched noise variance, private-collapsed gains more over "
                f"naive under {large} than under {small}", exp,
                f"{metric} of naive - {PRIVATE}, {other} vs {GEOMETRIC}, variance={level:g}",
                f"gain under {GEOMETRIC} {_mean(gains[GEOMETRIC])}, under {other} "
                f"{_mean(gains[other])}; {diff}",
                f"{metric} gain: {large} > {small} by > {Z:g} SE of the paired difference",
                verdict, basis))
    return out


def _rows(fits: pd.DataFrame) -> list[dict]:
    rows = []
    for exp in experiments(fits):
        df = fits_of(fits, exp)
        for match in MATCHES:
            if df.empty or METRIC not in df or not _levels(df, match):
                continue
            rows += private_below_naive(df, exp, match) + mechanism_order(df, exp, match)
        if not df.empty and METRIC in df and _levels(df, "variance"):
            rows += gain_vs_geometric(df, exp)
    return rows


def scorecard(fits: pd.DataFrame) -> pd.DataFrame:
    """The findings' rows for every mechanism experiment in ``fits`` (columns
    :data:`lppf.claims.COLUMNS`, ``chains`` as :func:`lppf.claims.by_chain`); an empty frame
    when there is none."""
    per_chain = [verdicts(_rows(table)) for table in chain_tables(fits)]
    rows = [{**r, "chains": by_chain(r, per_chain)} for r in _rows(fits)]
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(card: pd.DataFrame) -> str:
    """The findings as a Markdown section (empty text without rows)."""
    if card.empty:
        return ""
    return (f"\n## Findings of this project\n\n{summary(card)}\n\n"
            f"{card.to_markdown(index=False)}\n")


def summary(card: pd.DataFrame) -> str:
    """One line, as :func:`lppf.claims.summary` counts the claims: ``findings: ...``."""
    return claims_summary(card).replace("claims: ", "findings: ", 1)

