"""The papers' figures and M1's, one function each, drawn with seaborn; PNG and PDF."""

import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from lppf import metrics
from lppf.fitting import DEFAULTS
from lppf.io import load_npz
from lppf.results import samples_key
from lppf.validation import MECHANISMS

PRIVACY = {"alpha": "alpha", "eps_n": "eps / N", "eps_mean": "eps (N = mean y)",
           "beta_mean": "mean alpha_d"}
METRIC_NAMES = {"kl": "mean Poisson KL(mu* || mu-hat)", "mae_y": "MAE vs true Y",
                "heldout_mae": "held-out MAE", "heldout_deviance": "held-out Poisson deviance",
                "npmi": "NPMI", "umass": "UMass coherence",
                "mae_mu": "MAE vs mu*", "topic_l1": "topic error (L1, aligned)"}


def method_label(df: pd.DataFrame) -> pd.Series:
    return df["method"] + " (" + df["inference"] + ")"


def privacy_column(df: pd.DataFrame) -> str:
    return next(c for c in PRIVACY if c in df and df[c].notna().any())


def spread_nonprivate(df: pd.DataFrame, x: str) -> pd.DataFrame:
    """Repeat the non-private rows (which see no noise) at every privacy level."""
    noisy, clean = df[df["grid"] != "true"], df[df["grid"] == "true"]
    levels = pd.DataFrame({x: np.sort(noisy[x].dropna().unique())})
    return pd.concat([noisy, clean.drop(columns=x).merge(levels, how="cross")], ignore_index=True)


def fits_table(smk) -> pd.DataFrame:
    df = pd.read_csv(smk.input.table)
    df = df[df["fix"] == "none"].copy()
    df["method"] = method_label(df)
    return df


def kl_vs_privacy(smk):
    """E1/E2 (001 fig. 4): KL vs alpha by method, one panel per e0 (rows: K)."""
    df = fits_table(smk)
    x = privacy_column(df)
    df = spread_nonprivate(df, x)
    g = sns.relplot(df, x=x, y="kl", hue="method", col="e0", row="K", kind="line",
                    marker="o", errorbar="sd", err_style="bars", facet_kws={"sharey": False},
                    height=3)
    g.set_axis_labels(PRIVACY[x], METRIC_NAMES["kl"])
    return g.figure


def topic_error_vs_privacy(smk):
    """S2 (001 fig. 1, as a number): topic error of the max-joint sample vs the noise level."""
    df = fits_table(smk)
    x = privacy_column(df)
    g = sns.relplot(spread_nonprivate(df, x), x=x, y="topic_l1", hue="method", kind="line",
                    marker="o", errorbar="sd", err_style="bars", height=3, aspect=1.3)
    g.set_axis_labels(PRIVACY[x], METRIC_NAMES["topic_l1"])
    return g.figure


MATCHED = {"epsilon": "matched (epsilon, delta)", "variance": "matched noise variance"}
LEVEL_NAMES = {"epsilon": "epsilon (at the config's delta and N)",
               "variance": "noise variance"}


def mechanisms(smk):
    """M1: KL and MAE vs mu* against the matched privacy level, one colour per mechanism and
    one line style per method; rows: matched (epsilon, delta), matched noise variance;
    dotted: the non-private fits' mean."""
    df = fits_table(smk)
    names = [m for m in ("kl", "mae_mu") if m in df and df[m].notna().any()]
    noisy, clean = df[df["grid"] != "true"], df[df["grid"] == "true"]
    long = pd.concat([noisy[noisy["match"] == match].assign(
        level=noisy[match], metric=METRIC_NAMES[m], value=noisy[m], matched=MATCHED[match])
        for match in MATCHED if match in noisy and (noisy["match"] == match).any()
        for m in names], ignore_index=True)
    hue_order = [m for m in MECHANISMS if m in set(long["mechanism"])]
    g = sns.relplot(long, x="level", y="value", hue="mechanism", hue_order=hue_order,
                    style="method", row="matched",
                    col="metric", kind="line", markers=True, errorbar="sd", err_style="bars",
                    facet_kws={"sharex": False, "sharey": False}, height=3, aspect=1.2)
    g.set_titles("{row_name}\n{col_name}", size=8)
    match_of = {v: k for k, v in MATCHED.items()}
    for (matched, metric), ax in g.axes_dict.items():
        column = next(m for m in names if METRIC_NAMES[m] == metric)
        if not clean.empty:
            ax.axhline(clean[column].mean(), color="0.3", ls=":", lw=1)
        levels = np.sort(long.loc[long["matched"] == matched, "level"].unique())
        ax.set(xscale="log", yscale="log", xlabel=LEVEL_NAMES[match_of[matched]], ylabel=metric)
        ax.set_xticks(levels, [f"{v:g}" for v in levels], minor=False)
        ax.set_xticks([], minor=True)
    g.tight_layout()
    return g.figure


def _metric_panels(df, x, names, **kws):
    names = [m for m in names if m in df and df[m].notna().any()]
    long = df.melt(id_vars=[c for c in df if c not in names], value_vars=names,
                   var_name="metric", value_name="value")
    long["metric"] = long["metric"].map(METRIC_NAMES)
    return sns.relplot(long, y="value", hue="method", col="metric",
                       facet_kws={"sharey": False}, height=3, x=x, **kws)


def error_vs_privacy(smk):
    """E3 (004 fig. 3): MAE, NPMI and UMass coherence vs eps/N by method."""
    df = fits_table(smk)
    x = privacy_column(df)
    g = _metric_panels(spread_nonprivate(df, x), x, ["mae_y", "npmi", "umass"],
                       kind="line", marker="o", errorbar="sd", err_style="bars")
    g.set_xlabels(PRIVACY[x])
    return g.figure


def heldout_by_components(smk):
    """E4 (004): MAE (everything observed), held-out MAE and held-out Poisson deviance (with
    the row x column baseline of each mask) by the number of communities C."""
    df = fits_table(smk)
    x = privacy_column(df)
    df = spread_nonprivate(df, x)
    full = df[df["heldout"].fillna(0) == 0].assign(metric=METRIC_NAMES["mae_y"], value=df["mae_y"])
    held = df[df["heldout"].fillna(0) > 0]
    parts = [full, held.assign(metric=METRIC_NAMES["heldout_mae"], value=held["heldout_mae"])]
    if "heldout_deviance" in held and held["heldout_deviance"].notna().any():
        name = METRIC_NAMES["heldout_deviance"]
        base = held[held["method"].str.startswith("nonprivate")]
        parts += [held.assign(metric=name, value=held["heldout_deviance"]),
                  base.assign(metric=name, value=base["heldout_baseline_deviance"],
                              method="row x column baseline")]
    g = sns.catplot(pd.concat(parts, ignore_index=True), x="K", y="value", hue="method",
                    col="metric", row=x, kind="point", errorbar="sd", sharey=False, height=3,
                    dodge=0.3)
    g.set_titles("{row_var} = {row_name}\n{col_name}")  # one line each: long metric names
    g.set_axis_labels("number of communities C", "error")
    return g.figure


def _fit_grid(smk):
    """(fit dict, loaded fit) for the individually drawn fits, in config order."""
    return [(f, load_npz(f["fit"])) for f in smk.params.fits]


def _heatmap_grid(smk, truth_image, estimate, title):
    """One row per privacy level: the truth, then each method's estimate."""
    fits = _fit_grid(smk)
    truth = load_npz(fits[0][0]["truth"])
    reference = truth_image(truth)
    vmax = max(np.quantile(reference, 0.99), np.finfo(float).tiny)
    grids = [g for g in dict.fromkeys(f["grid"] for f, _ in fits) if g != "true"]
    methods = list(dict.fromkeys(f"{f['method']} ({f['inference']})" for f, _ in fits))
    fig, axes = plt.subplots(len(grids), 1 + len(methods), squeeze=False,
                             figsize=(2.6 * (1 + len(methods)), 2.4 * len(grids)))
    for r, grid in enumerate(grids):
        panels = [(title, reference)] + [
            (f"{f['method']} ({f['inference']})", estimate(fit, truth))
            for f, fit in fits if f["grid"] in (grid, "true")]
        for ax, (name, image) in zip(axes[r], panels, strict=False):
            sns.heatmap(image, ax=ax, cmap="viridis", vmin=0, vmax=vmax, cbar=False,
                        xticklabels=False, yticklabels=False)
            ax.set_title(f"{name}\n{grid}", fontsize=8)
    fig.tight_layout()
    return fig


def blocks(smk):
    """S3 (001 fig. 3): mu-hat of each method next to the true mu*, actors grouped by their
    strongest true community."""
    def order(truth):
        return np.argsort(np.argmax(truth["theta"], axis=1), kind="stable")

    def estimate(fit, truth):
        return fit["mu_hat"][np.ix_(order(truth), order(truth))]

    return _heatmap_grid(smk, lambda t: t["mu"][np.ix_(order(t), order(t))], estimate,
                         "true mu*")


def topics(smk):
    """S2 (001 fig. 1): topics of the max-joint sample, aligned to the truth (Hungarian),
    each normalized to sum to 1."""
    def normalized(phi):
        return phi / phi.sum(axis=1, keepdims=True)

    def estimate(fit, truth):
        phi = normalized(metrics.max_joint_phi(fit))
        return phi[metrics.align_topics(phi, truth["phi"])]

    return _heatmap_grid(smk, lambda t: normalized(t["phi"]), estimate, "true Phi*")


def posterior_y(smk, n_cells=25, seed=0):
    """S1 (000 fig. 1 left): posterior of the true count of 25 random cells (exact conditional
    of y given y~ and mu, averaged over the saved samples), true value in red."""
    f, fit = _fit_grid(smk)[0]
    truth, private = load_npz(f["truth"]), load_npz(f["privatized"])
    Y = truth["Y"]
    rng = np.random.default_rng(seed)
    cells = rng.choice(Y.size, size=min(n_cells, Y.size), replace=False)
    rows, cols = np.unravel_index(cells, Y.shape)
    alpha = np.broadcast_to(private["alpha"], Y.shape)[rows, cols]
    samples = {k: fit[samples_key(k)] for k in ("theta", "phi")}
    pmf = metrics.posterior_y_pmf(private["Y_noisy"][rows, cols], alpha,
                                  metrics.rate_samples("pmf", samples, rows, cols))
    side = int(np.ceil(np.sqrt(len(cells))))
    fig, axes = plt.subplots(side, side, figsize=(2 * side, 1.6 * side), squeeze=False)
    for ax, p, y, t in zip(axes.flat, pmf, Y[rows, cols], private["Y_noisy"][rows, cols],
                           strict=False):
        hi = max(int(np.searchsorted(np.cumsum(p), 0.999)) + 1, y + 2)
        ax.bar(np.arange(hi), p[:hi], color="0.5", width=1.0)
        ax.axvline(y, color="red")
        ax.set_title(f"y~ = {t}", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in axes.flat[len(cells):]:
        ax.axis("off")
    fig.suptitle(f"posterior of y ({f['method']}, {f['grid']}); red: true y", fontsize=9)
    fig.tight_layout()
    return fig


def theta_kl(smk):
    """S1 (000 fig. 1 right): mean elementwise Poisson KL(Theta* || Theta sample) over the
    iterations of chains holding Phi at its true value, one line per noise level (the mean
    over the chains, with a band) at the iterations the fit saved (extensions included)."""
    mcmc = {"burnin": DEFAULTS["burnin"], "thin": DEFAULTS["thin"], **smk.params.mcmc}
    frames = []
    for f, fit in _fit_grid(smk):
        truth = load_npz(f["truth"])
        kl = metrics.kl_trace(fit[samples_key("theta")], truth["theta"])
        burnin, thin = (int(fit.get(f"extra_{k}", mcmc[k])) for k in ("burnin", "thin"))
        n_chains = int(fit.get("extra_n_chains", 1))  # chains stacked: their mean and band
        iteration = burnin + thin * np.tile(np.arange(1, len(kl) // n_chains + 1), n_chains)
        frames.append(pd.DataFrame({"iteration": iteration, "KL": kl, "noise": f["grid"],
                                    "method": f["method"]}))
    g = sns.relplot(pd.concat(frames), x="iteration", y="KL", hue="noise", style="method",
                    kind="line", height=3, aspect=1.5)
    g.set(yscale="log", ylabel="mean KL(Theta* || Theta)")
    return g.figure


def time_vs_error(smk):
    """V1 (002): wall time against MAE of MCMC and CAVI fits."""
    df = fits_table(smk)
    y = "mae_mu" if df["mae_mu"].notna().any() else "mae_y"
    g = sns.relplot(df, x="fit_seconds", y=y, hue="method", style="K", s=80, height=3, aspect=1.4)
    g.set_axis_labels("wall time of the fit (s)", METRIC_NAMES[y])
    return g.figure


def rhat(smk):
    """Convergence: split R-hat of each MCMC fit's log-likelihood trace (chains or halves of
    one chain) and the largest R-hat over the diagnosed cells of mu; dashed: the criterion's
    bounds (:mod:`lppf.diagnostics`)."""
    from lppf.diagnostics import RHAT_CELL_MAX, RHAT_MAX

    df = fits_table(smk).reindex(columns=["method", "grid", "inference", "rhat_loglik",
                                          "rhat_mu_max"])
    df = df[df["inference"] == "mcmc"].dropna(subset=["rhat_loglik"])
    if df.empty:
        fig, ax = plt.subplots(figsize=(4, 1.5))
        ax.text(0.5, 0.5, "no MCMC diagnostics in this experiment", ha="center", va="center")
        ax.set_axis_off()
        return fig
    long = df.melt(id_vars=["method", "grid"], value_vars=["rhat_loglik", "rhat_mu_max"],
                   var_name="quantity", value_name="R-hat")
    g = sns.catplot(long, x="grid", y="R-hat", hue="method", col="quantity", kind="strip",
                    dodge=True, height=3, aspect=1.4, sharey=False)
    for quantity, ax in zip(g.col_names, g.axes.flat, strict=True):
        ax.axhline(RHAT_MAX if quantity == "rhat_loglik" else RHAT_CELL_MAX, color="k",
                   ls="--", lw=0.8)
        ax.tick_params(axis="x", rotation=45)
    return g.figure


def main(smk):
    with open(smk.log[0], "w") as log:
        sys.stderr = log
        sns.set_theme(style="whitegrid", context="paper")
        fig = globals()[smk.wildcards.name](smk)
        for path in (smk.output.png, smk.output.pdf):
            fig.savefig(path, dpi=150, bbox_inches="tight")
        plt.close(fig)


main(snakemake)  # noqa: F821
