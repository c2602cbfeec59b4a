"""The papers' findings as checks on the workflow's table of fits: the claims scorecard.

Input: the tidy table of every fit (one row per fit: experiment, method, inference, fix, K,
setting, grid, replicate, the privacy level columns and the metrics). Output: one row per
claim with its source paper, the experiment and grid points it compares, the numbers, the
statistical criterion and a verdict PASS, FAIL or NOT RUN.

Comparisons of two methods use the replicates: with means m_a, m_b, standard deviations s_a,
s_b over n_a, n_b replicates, the standard error of the difference is
``se = sqrt(s_a^2 / n_a + s_b^2 / n_b)`` and "a below b" holds when ``m_b - m_a > 2 se``.
A comparison needs at least 2 replicates on each side; with fewer it is NOT RUN.

Column ``converged`` says whether every MCMC fit a claim rests on met the convergence
criterion (table column ``converged``, :func:`lppf.metrics.convergence`): "yes (n of n
fits)", "no (k of n fits)", or empty where the table has no such fits. A claim rests on the
fits whose metric its verdict reads (for "private below naive" at the noisiest level: those
two methods' fits at that level, and non-private's where the claim is decided only if naive
is degraded); the coverage and CAVI claims on the free-factor MCMC fits of their experiment.
The summary line counts a PASS on unconverged fits apart.

Column ``chains`` gives the verdict with every MCMC fit's metrics read from one chain alone
(table columns ``kl_chain0``..., :func:`lppf.metrics.chain_metrics`), once per chain: "PASS in
k of n" (:func:`by_chain`). Where chains disagree, it says whether the disagreement changes
the claim; it does not make the fits converged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd

from lppf.metrics import CHAIN_METRICS, chain_key
from lppf.validation import PRIVATE_METHODS

PASS, FAIL, NOT_RUN = "PASS", "FAIL", "NOT RUN"
Z = 2.0  # standard errors a difference must exceed
CLOSE = 1.25  # "close to non-private": mean at most this many times the non-private mean,
SPAN_SHARE = 0.1  # or an excess at most this share of naive's excess at the noisiest level
NOMINAL, COVERAGE_TOL = 0.9, 0.05
CAVI_ERROR_RATIO = 1.5  # CAVI's error at most this many times MCMC's
# privacy level columns and the sign that makes larger values noisier
NOISE = {"alpha": 1, "beta_mean": 1, "eps_n": -1, "eps_mean": -1}
S001 = "001 (Schein et al. 2019)"
S004 = "004 (private Poisson factorization on Enron)"
COLUMNS = ["claim", "source", "experiment", "compared", "numbers", "criterion", "verdict",
           "converged", "chains"]
_CHAIN = re.compile(r"_chain(\d+)$")


@dataclass(frozen=True)
class Stat:
    """Mean, standard deviation and number of replicates of one metric."""

    mean: float
    sd: float
    n: int

    @classmethod
    def of(cls, values: pd.Series) -> Stat:
        values = values.dropna().astype(float)
        sd = float(values.std(ddof=1)) if len(values) > 1 else math.nan
        return cls(float(values.mean()) if len(values) else math.nan, sd, len(values))

    def __str__(self) -> str:
        return f"{self.mean:.4g} ± {self.sd:.2g} (n={self.n})"


def below(a: Stat, b: Stat, z: float = Z) -> str | None:
    """PASS if ``b.mean - a.mean > z se``, FAIL otherwise; None (NOT RUN) if n < 2 on a side."""
    if min(a.n, b.n) < 2:
        return None
    se = math.sqrt(a.sd**2 / a.n + b.sd**2 / b.n)
    return PASS if b.mean - a.mean > z * se else FAIL


def paired_below(a: pd.Series, b: pd.Series, z: float = Z) -> tuple[str | None, str]:
    """Paired comparison of two methods fitted to the same replicates (Series indexed by
    replicate): with d_r = b_r - a_r over the n shared replicates, PASS if
    ``mean(d) > z sd(d) / sqrt(n)``; None (NOT RUN) if n < 2. Returns (verdict, numbers)."""
    d = (b - a).dropna()
    if len(d) < 2:
        return None, f"paired difference over {len(d)} replicates"
    se = float(d.std(ddof=1)) / math.sqrt(len(d))
    return (PASS if d.mean() > z * se else FAIL,
            f"paired difference {d.mean():.4g} ± {se:.2g} SE (n={len(d)})")


def by_replicate(df: pd.DataFrame, method: str, metric: str, column: str,
                 level: float) -> pd.Series:
    """``metric`` of ``method`` at one privacy level, indexed by replicate."""
    sel = (df["method"] == method) & (df[column] == level)
    return df.loc[sel].set_index("replicate")[metric].astype(float)


def close_to(a: Stat, b: Stat, span: float = math.nan, ratio: float = CLOSE,
             share: float = SPAN_SHARE, z: float = Z) -> str | None:
    """PASS if ``a`` exceeds ``b`` by at most ``share`` of ``span`` (the scale of the papers'
    figure: naive's excess over non-private at the noisiest level), or ``a.mean <= ratio
    b.mean``, or ``|a.mean - b.mean| <= z se`` (n >= 2 each)."""
    if min(a.n, b.n) < 2:
        return None
    se = math.sqrt(a.sd**2 / a.n + b.sd**2 / b.n)
    excess = a.mean - b.mean
    ok = excess <= share * span or a.mean <= ratio * b.mean or abs(excess) <= z * se
    return PASS if ok else FAIL


def noise_column(df: pd.DataFrame) -> str | None:
    """The privacy level column of an experiment's noisy fits."""
    return next((c for c in NOISE if c in df and df[c].notna().any()), None)


def levels(df: pd.DataFrame) -> tuple[str, float, float] | None:
    """(column, noisiest level, quietest level) of an experiment's privacy grid."""
    column = noise_column(df)
    if column is None:
        return None
    values = sorted(df[column].dropna().unique(), key=lambda v: NOISE[column] * v)
    return column, values[-1], values[0]


class Grid(NamedTuple):
    """An experiment's privacy level column, its noisiest and quietest levels, and the
    ``level`` a claim reads (one of the two)."""

    column: str
    noisiest: float
    quietest: float
    level: float


def graded(fits: pd.DataFrame, exp: str, metric: str, at: str = "noisiest"
           ) -> tuple[pd.DataFrame, Grid | None]:
    """An experiment's fits and its :class:`Grid`, read at the ``at`` level ("noisiest" or
    "quietest"); the grid is None when no fit has a value of ``metric`` or the experiment
    has no privacy levels (the claim is then NOT RUN)."""
    df = fits_of(fits, exp)
    if df.empty or metric not in df or df[metric].isna().all() or levels(df) is None:
        return df, None
    column, noisiest, quietest = levels(df)
    return df, Grid(column, noisiest, quietest, noisiest if at == "noisiest" else quietest)


def fits_of(fits: pd.DataFrame, exp: str, inference: str = "mcmc") -> pd.DataFrame:
    """The fits of one experiment that the claims read (free factors, one inference)."""
    df = fits[fits["experiment"] == exp]
    if "fix" in df:
        df = df[df["fix"].fillna("none") == "none"]
    return df[df["inference"] == inference] if "inference" in df else df


def stat(df: pd.DataFrame, method: str, metric: str, column: str | None = None,
         level: float | None = None) -> Stat:
    """Stat of ``metric`` over replicates of ``method`` at one privacy level (non-private
    fits see no noise and are read at every level)."""
    sel = _fits_at(df, method, column, level)
    return Stat.of(df.loc[sel, metric] if metric in df else pd.Series(dtype=float))


def _fits_at(df: pd.DataFrame, method: str, column: str | None, level: float | None
             ) -> pd.Series:
    """Mask of ``method``'s fits at one privacy level (non-private's at every level)."""
    sel = df["method"] == method
    if column is not None and method != "nonprivate":
        sel &= df[column] == level
    return sel


def read(df: pd.DataFrame, column: str | None, *pairs: tuple[str, float | None]) -> pd.Index:
    """Index of the fits of ``df`` that :func:`stat` reads for each (method, level) pair."""
    sel = pd.Series(False, index=df.index)
    for method, level in pairs:
        sel |= _fits_at(df, method, column, level)
    return df.index[sel]


def present(df: pd.DataFrame, methods: tuple[str, ...]) -> list[str]:
    """The private methods an experiment ran; the first one (NOT RUN) if it ran none."""
    return [m for m in methods if (df["method"] == m).any()] or [methods[0]]


def row(claim: str, source: str, exp: str, compared: str, numbers: str, criterion: str,
        verdict: str | None, why: str = "", basis: pd.Index | None = None) -> dict:
    """One scorecard row; ``basis``: the index of the fits it rests on (None: every
    free-factor MCMC fit of ``exp``, :func:`basis`)."""
    if verdict is None:
        verdict, numbers = NOT_RUN, f"{numbers}; {why or 'fewer than 2 replicates'}"
    return dict(claim=claim, source=source, experiment=exp, compared=compared, numbers=numbers,
                criterion=criterion, verdict=verdict, basis=basis)


def not_run(claim: str, source: str, exp: str, why: str) -> dict:
    return dict(claim=claim, source=source, experiment=exp, compared="", numbers=why,
                criterion="", verdict=NOT_RUN)


def _groups(df: pd.DataFrame, by: list[str]):
    by = [c for c in by if c in df and df[c].notna().any()]
    if not by:
        yield "", df
        return
    for key, group in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        yield ", ".join(f"{c}={v:g}" if isinstance(v, float) else f"{c}={v}"
                        for c, v in zip(by, key, strict=True)), group


def naive_degraded(group, metric, column, level, higher_is_better) -> tuple[bool | None, str]:
    """Whether the noise measurably degrades naive in ``metric`` (naive worse than non-private
    by > Z SE at ``level``), and the numbers; None with fewer than 2 replicates."""
    naive, clean = stat(group, "naive", metric, column, level), stat(group, "nonprivate", metric)
    verdict = below(naive, clean) if higher_is_better else below(clean, naive)
    return (None if verdict is None else verdict == PASS), f"nonprivate {clean}"


def private_below(fits, exp, source, metric, what, by=("e0", "K"),
                  methods=PRIVATE_METHODS, higher_is_better=False, decidable_if_degraded=False,
                  paired=False) -> list[dict]:
    """Each private method below (or above) naive in ``metric`` at the noisiest level.

    With ``paired``, the criterion is :func:`paired_below` on the replicates both methods
    fitted (each replicate: one truth and one privatized copy, shared by the methods), which
    removes the spread between replicates' truths from the comparison.

    With ``decidable_if_degraded``, the claim is decided only where the noise measurably
    degrades naive relative to non-private in ``metric``; elsewhere there is nothing for the
    private method to recover at this size and the row is NOT RUN, with the numbers, unless
    the private method is worse than naive by > Z SE (FAIL)."""
    claim = f"{exp.upper()}: private {what} {'above' if higher_is_better else 'below'} naive"
    df, grid = graded(fits, exp, metric)
    if grid is None:
        return [not_run(claim, source, exp, f"no {metric} fits in the table")]
    column, level = grid.column, grid.level
    out = []
    for label, group in _groups(df, list(by)):
        naive = stat(group, "naive", metric, column, level)
        if decidable_if_degraded:
            degraded, clean = naive_degraded(group, metric, column, level, higher_is_better)
        for method in present(df, methods):
            mine = stat(group, method, metric, column, level)
            verdict = below(naive, mine) if higher_is_better else below(mine, naive)
            sign = ">" if higher_is_better else "<"
            numbers, why = f"{method} {mine} vs naive {naive}", ""
            criterion = f"{metric}: {method} {sign} naive by > {Z:g} SE"
            if paired:
                low, high = ("naive", method) if higher_is_better else (method, "naive")
                verdict, diff = paired_below(by_replicate(group, low, metric, column, level),
                                             by_replicate(group, high, metric, column, level))
                numbers += f"; {diff}"
                criterion += " of the paired difference (same replicates)"
            if decidable_if_degraded:
                numbers += f"; {clean}"
                criterion += (f", decided where naive is worse than nonprivate by > {Z:g} SE"
                              f" or {method} worse than naive by > {Z:g} SE")
                worse = below(mine, naive) if higher_is_better else below(naive, mine)
                if verdict is not None and not degraded and worse != PASS:
                    verdict, why = None, (f"undecidable at this size: naive's {metric} is not "
                                          f"worse than nonprivate's by > {Z:g} SE")
            compared = f"{method} vs naive, {column}={level:g} (noisiest); {label}"
            basis = read(group, column, (method, level), ("naive", level),
                         *([("nonprivate", None)] if decidable_if_degraded else []))
            out.append(row(f"{claim} ({method})", source, exp, compared.rstrip("; "),
                           numbers, criterion, verdict, why, basis))
    return out


def private_close(fits, exp, source, metric, what, by=("e0", "K"), at="quietest",
                  methods=PRIVATE_METHODS) -> list[dict]:
    """Each private method close to non-private in ``metric`` at one privacy level."""
    claim = f"{exp.upper()}: private {what} close to non-private"
    df, grid = graded(fits, exp, metric, at)
    if grid is None:
        return [not_run(claim, source, exp, f"no {metric} fits in the table")]
    column, noisiest, level = grid.column, grid.noisiest, grid.level
    out = []
    for label, group in _groups(df, list(by)):
        clean = stat(group, "nonprivate", metric)
        span = stat(group, "naive", metric, column, noisiest).mean - clean.mean
        for method in present(df, methods):
            mine = stat(group, method, metric, column, level)
            out.append(row(f"{claim} ({method})", source, exp,
                           f"{method} at {column}={level:g} ({at}) vs nonprivate; {label}"
                           .rstrip("; "),
                           f"{method} {mine} vs nonprivate {clean}; naive's excess at "
                           f"{column}={noisiest:g}: {span:.4g}",
                           f"{metric}: {method} - nonprivate <= {SPAN_SHARE:g} x naive's excess"
                           f" at the noisiest level, or <= {CLOSE:g} x nonprivate, or within"
                           f" {Z:g} SE", close_to(mine, clean, span),
                           basis=read(group, column, (method, level), ("nonprivate", None),
                                      ("naive", noisiest))))
    return out


def naive_rises(fits, exp, source, metric="mae_y", by=("K",)) -> list[dict]:
    """Naive's error larger at the noisiest level than at the quietest."""
    df = fits_of(fits, exp)
    claim = f"{exp.upper()}: naive error rises with the noise"
    if df.empty or metric not in df or levels(df) is None:
        return [not_run(claim, source, exp, f"no {metric} fits in the table")]
    column, noisiest, quietest = levels(df)
    out = []
    for label, group in _groups(df, list(by)):
        loud = stat(group, "naive", metric, column, noisiest)
        quiet = stat(group, "naive", metric, column, quietest)
        out.append(row(claim, source, exp,
                       f"naive at {column}={noisiest:g} vs {column}={quietest:g}; {label}"
                       .rstrip("; "),
                       f"noisiest {loud} vs quietest {quiet}",
                       f"{metric}: quietest < noisiest by > {Z:g} SE", below(quiet, loud),
                       basis=read(group, column, ("naive", noisiest), ("naive", quietest))))
    return out


def heldout_informative(fits, exp="e4", source=S004) -> list[dict]:
    """The held-out links are predictable: the non-private fit's held-out Poisson deviance is
    below that of the row x column baseline (:func:`lppf.metrics.row_column_baseline`), paired
    over replicates (each replicate's mask is shared by the fit and its baseline); else the
    comparison of methods on held-out cells says nothing."""
    df = _setting(fits_of(fits, exp), exp, heldout=True)
    claim = f"{exp.upper()}: held-out links are predictable (non-private below baseline)"
    metric, base = "heldout_deviance", "heldout_baseline_deviance"
    if df.empty or base not in df or df[base].isna().all():
        return [not_run(claim, source, exp, f"no {base} in the table")]
    out = []
    for label, group in _groups(df, ["K"]):
        clean = group[group["method"] == "nonprivate"].set_index("replicate")
        verdict, diff = paired_below(clean[metric].astype(float), clean[base].astype(float))
        out.append(row(claim, source, exp, f"nonprivate, held-out cells; {label}".rstrip("; "),
                       f"held-out deviance {Stat.of(clean[metric])} vs row x column baseline "
                       f"{Stat.of(clean[base])}; {diff}; held-out MAE "
                       f"{Stat.of(clean['heldout_mae'])}",
                       f"{metric}: nonprivate < baseline by > {Z:g} SE of the paired "
                       f"difference (same masks)", verdict,
                       basis=read(group, None, ("nonprivate", None))))
    return out


def private_vs_nonprivate(fits, exp, source, metric, what, by=("K",), at="noisiest",
                          methods=PRIVATE_METHODS, higher_is_better=False) -> list[dict]:
    """Each private method below (or above) non-private in ``metric`` at one privacy level:
    004's "lower error than the nonprivate approach" and "even obtains higher quality topics
    than the nonprivate approach". Non-private fits see no noise; replicates are unpaired."""
    word = "above" if higher_is_better else "below"
    claim = f"{exp.upper()}: private {what} {word} non-private"
    df, grid = graded(fits, exp, metric, at)
    if grid is None:
        return [not_run(claim, source, exp, f"no {metric} fits in the table")]
    column, level = grid.column, grid.level
    out = []
    for label, group in _groups(df, list(by)):
        clean = stat(group, "nonprivate", metric)
        for method in present(df, methods):
            mine = stat(group, method, metric, column, level)
            verdict = below(clean, mine) if higher_is_better else below(mine, clean)
            out.append(row(f"{claim} ({method})", source, exp,
                           f"{method} at {column}={level:g} ({at}) vs nonprivate; {label}"
                           .rstrip("; "),
                           f"{method} {mine} vs nonprivate {clean}",
                           f"{metric}: {method} {'>' if higher_is_better else '<'} nonprivate "
                           f"by > {Z:g} SE", verdict,
                           basis=read(group, column, (method, level), ("nonprivate", None))))
    return out


def coverage_nominal(fits, exp="s1", source="000 (Schein et al. 2019, fig. 1)") -> list[dict]:
    """Posterior intervals of Y cover the truth at least at their nominal rate (less the
    tolerance) at every noise level. Intervals of a discrete count over-cover where the
    posterior is nearly a point mass (little noise), so only under-coverage fails."""
    df = fits_of(fits, exp)
    df = df[df["method"].isin(PRIVATE_METHODS)] if not df.empty else df
    claim = f"{exp.upper()}: 90% posterior intervals of Y cover the truth"
    if df.empty or "coverage90" not in df or df["coverage90"].isna().all():
        return [not_run(claim, source, exp, "no coverage90 in the table")]
    column = noise_column(df)
    by = df.groupby(["method", column])["coverage90"].mean()
    ok = (by >= NOMINAL - COVERAGE_TOL).all()
    numbers = "; ".join(f"{m} {column}={v:g}: {c:.3f}" for (m, v), c in by.items())
    return [row(claim, source, exp, f"private fits at every {column}", numbers,
                f"coverage90 >= {NOMINAL:g} - {COVERAGE_TOL:g} at every level",
                PASS if ok else FAIL)]


def cavi_vs_mcmc(fits, exp="v1", source="002 (locally private CAVI)") -> list[dict]:
    """CAVI is faster than MCMC, and its error relative to MCMC's is reported and bounded."""
    df = fits[fits["experiment"] == exp]
    speed = f"{exp.upper()}: CAVI faster than MCMC"
    accuracy = f"{exp.upper()}: CAVI error near MCMC's"
    if df.empty or not {"mcmc", "cavi"} <= set(df["inference"]):
        return [not_run(c, source, exp, "needs mcmc and cavi fits") for c in (speed, accuracy)]
    error = "mae_mu" if "mae_mu" in df and df["mae_mu"].notna().any() else "mae_y"
    means = df.groupby(["method", "inference"])[["fit_seconds", error]].mean()
    methods = [m for m in dict.fromkeys(df["method"]) if (m, "cavi") in means.index
               and (m, "mcmc") in means.index]
    seconds = {m: (means.loc[(m, "cavi"), "fit_seconds"], means.loc[(m, "mcmc"), "fit_seconds"])
               for m in methods}
    ratios = {m: means.loc[(m, "cavi"), error] / means.loc[(m, "mcmc"), error] for m in methods}
    return [
        row(speed, source, exp, "cavi vs mcmc, every method",
            "; ".join(f"{m}: {c:.3g} s vs {s:.3g} s" for m, (c, s) in seconds.items()),
            "fit_seconds: cavi < mcmc for every method",
            PASS if all(c < s for c, s in seconds.values()) else FAIL),
        row(accuracy, source, exp, "cavi vs mcmc, every method",
            "; ".join(f"{m}: {error} ratio {r:.3g}" for m, r in ratios.items()),
            f"{error}(cavi) <= {CAVI_ERROR_RATIO:g} x {error}(mcmc) for every method",
            PASS if all(r <= CAVI_ERROR_RATIO for r in ratios.values()) else FAIL),
    ]



CLAIMS: dict[str, Callable[[pd.DataFrame], list[dict]]] = {
    "e1_noisy": lambda f: private_below(f, "e1", f"{S001}, fig. 4", "kl", "KL"),
    "e1_quiet": lambda f: private_close(f, "e1", f"{S001}, fig. 4", "kl", "KL"),
    "e2_noisy": lambda f: private_below(f, "e2", f"{S001}, fig. 4", "kl", "KL"),
    "e2_quiet": lambda f: private_close(f, "e2", f"{S001}, fig. 4", "kl", "KL"),
    "s2": lambda f: private_below(f, "s2", f"{S001}, fig. 1", "topic_l1", "topic error",
                                  paired=True),
    "s3": lambda f: private_below(f, "s3", f"{S001}, fig. 3", "kl", "KL (block structure)",
                                  paired=True),
    "e3_mae": lambda f: private_below(f, "e3", f"{S004}, fig. 3", "mae_y", "MAE", by=("K",)),
    "e3_close": lambda f: private_close(f, "e3", f"{S004}, fig. 3", "mae_y", "MAE", by=("K",)),
    "e3_naive": lambda f: naive_rises(f, "e3", f"{S004}, fig. 3"),
    "e3_npmi": lambda f: private_below(f, "e3", f"{S004}, fig. 3", "npmi", "NPMI", by=("K",),
                                       higher_is_better=True, decidable_if_degraded=True),
    "e3_umass": lambda f: private_below(f, "e3", f"{S004}, fig. 3", "umass", "UMass",
                                        by=("K",), higher_is_better=True,
                                        decidable_if_degraded=True),
    "e4_mae": lambda f: private_below(_setting(f, "e4", heldout=False), "e4", S004, "mae_y",
                                      "MAE", by=("K",)),
    "e4_heldout": lambda f: private_below(_setting(f, "e4", heldout=True), "e4", S004,
                                          "heldout_mae", "held-out MAE", by=("K",),
                                          decidable_if_degraded=True),
    "e4_informative": lambda f: heldout_informative(f),
    "e4_vs_nonprivate": lambda f: private_vs_nonprivate(_setting(f, "e4", heldout=False), "e4",
                                                        S004, "mae_y", "MAE"),
    "e4_heldout_vs_nonprivate": lambda f: private_vs_nonprivate(
        _setting(f, "e4", heldout=True), "e4", S004, "heldout_mae", "held-out MAE"),
    "e3_umass_vs_nonprivate": lambda f: private_vs_nonprivate(
        f, "e3", f"{S004}, fig. 3", "umass", "UMass", at="quietest", higher_is_better=True),
    "s1": coverage_nominal,
    "v1": cavi_vs_mcmc,
}


def _setting(fits: pd.DataFrame, exp: str, heldout: bool) -> pd.DataFrame:
    """E4's fits with (or without) held-out cells."""
    if "heldout" not in fits:
        return fits.iloc[:0] if heldout else fits
    held = fits["heldout"].fillna(0) > 0
    return fits[(fits["experiment"] != exp) | (held == heldout)]


def converged(fits: pd.DataFrame) -> str:
    """Whether every MCMC fit of ``fits`` met the criterion: "yes (n of n fits)", "no (k of n
    fits)"; "" without MCMC fits or a ``converged`` column."""
    if "converged" not in fits or "inference" not in fits:
        return ""
    flags = fits.loc[fits["inference"] == "mcmc", "converged"].dropna()
    if flags.empty:
        return ""
    met = int((flags > 0).sum())
    return f"{'yes' if met == len(flags) else 'no'} ({met} of {len(flags)} fits)"


# E4's claims and whether they read the fits with held-out cells
E4_HELDOUT = {"e4_mae": False, "e4_vs_nonprivate": False, "e4_heldout": True,
              "e4_informative": True, "e4_heldout_vs_nonprivate": True}


def basis(fits: pd.DataFrame, key: str, exp: str) -> pd.DataFrame:
    """The MCMC fits claim ``key`` of experiment ``exp`` rests on when its row names none."""
    if key in E4_HELDOUT:
        fits = _setting(fits, exp, heldout=E4_HELDOUT[key])
    return fits_of(fits, exp)


def chain_tables(fits: pd.DataFrame) -> list[pd.DataFrame]:
    """One table per chain c of the MCMC fits: ``fits`` with each metric of
    :data:`lppf.metrics.CHAIN_METRICS` taken from chain c alone (column ``kl_chain{c}``...)
    where a fit has it; empty when no fit has such columns."""
    chains = [int(m.group(1)) for m in map(_CHAIN.search, fits.columns) if m]
    tables = []
    for c in range(max(chains) + 1 if chains else 0):
        table = fits.copy()
        for metric in CHAIN_METRICS:
            column = chain_key(metric, c)
            if column in fits and metric in fits:
                table[metric] = fits[column].where(fits[column].notna(), fits[metric])
        tables.append(table)
    return tables


def verdicts(rows: Iterable[dict]) -> dict[tuple[str, str], str]:
    """The verdict of each row by (claim, compared)."""
    return {(r["claim"], r["compared"]): r["verdict"] for r in rows}


def by_chain(r: dict, per_chain: list[dict[tuple[str, str], str]]) -> str:
    """"PASS in k of n": the claim of row ``r`` PASSes in k of the n chain tables
    (:func:`chain_tables`, verdicts by :func:`verdicts`; a row a chain's table lacks, as
    when its direction was read off other means, counts as not PASS); "" for a row NOT RUN
    or without chain tables."""
    if r["verdict"] == NOT_RUN or not per_chain:
        return ""
    passed = sum(v.get((r["claim"], r["compared"])) == PASS for v in per_chain)
    return f"{PASS} in {passed} of {len(per_chain)}"


def _in_every_chain(text: str) -> bool:
    """Whether a :func:`by_chain` text says "PASS in n of n"."""
    passed, _, chains = text.removeprefix(f"{PASS} in ").partition(" of ")
    return bool(chains) and passed == chains


def _rows(fits: pd.DataFrame) -> Iterable[tuple[str, dict]]:
    for key, check in CLAIMS.items():
        for r in check(fits):
            yield key, r


def scorecard(fits: pd.DataFrame) -> pd.DataFrame:
    """One row per claim (see :data:`CLAIMS`), columns :data:`COLUMNS`."""
    fits = fits.reset_index(drop=True)
    per_chain = [verdicts(r for _, r in _rows(table)) for table in chain_tables(fits)]
    rows = []
    for key, r in _rows(fits):
        rests_on = r.pop("basis", None)
        rests_on = (basis(fits, key, r["experiment"]) if rests_on is None
                    else fits.loc[rests_on])
        rows.append({**r, "converged": converged(rests_on), "chains": by_chain(r, per_chain)})
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(card: pd.DataFrame) -> str:
    """One line: how many claims PASS (on converged fits, and on unconverged ones apart, with
    how many of those PASS in every chain alone where the table has chains), FAIL and were
    NOT RUN."""
    unconverged = (card["verdict"] == PASS) & card["converged"].str.startswith("no")
    counts = card.loc[~unconverged, "verdict"].value_counts()
    chains = card.loc[unconverged, "chains"].fillna("")
    apart = f"{int(unconverged.sum())} PASS on unconverged fits"
    if (chains != "").any():
        apart += f" ({int(chains.map(_in_every_chain).sum())} of them in every chain)"
    parts = [f"{counts.get(PASS, 0)} {PASS}", apart,
             *(f"{counts.get(v, 0)} {v}" for v in (FAIL, NOT_RUN))]
    return "claims: " + ", ".join(parts)


def markdown(card: pd.DataFrame) -> str:
    """The scorecard as a Markdown table headed by its summary line."""
    return f"{summary(card)}\n\n{card.to_markdown(index=False)}\n"
