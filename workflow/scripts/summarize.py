"""All fits in one tidy CSV, and mean/sd over replicates as CSV and Markdown."""

import sys

import pandas as pd

from lppf.io import write_text

KEYS = ["experiment", "model", "method", "inference", "fix", "K", "setting", "grid"]
PARAMETERS = ["e0", "heldout", "alpha", "eps_n", "eps_mean", "beta_mean", "mechanism", "match",
              "epsilon", "variance", "noise_variance"]
METRICS = ["mae_y", "mae_mu", "kl", "topic_l1", "heldout_mae", "heldout_baseline_mae", "npmi",
           "umass", "coverage90", "rhat_loglik", "rhat_mu_max", "ess_bulk_loglik",
           "ess_tail_loglik", "n_chains", "extended", "converged", "fit_seconds"]


def summarize(fits: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and number n of replicates of every metric, one row per setting."""
    metrics = [m for m in METRICS if m in fits and fits[m].notna().any()]
    keys = KEYS + [p for p in PARAMETERS if p in fits]
    grouped = fits.groupby(keys, sort=True, dropna=False)[metrics]
    summary = grouped.agg(["mean", "std", "count"])
    summary.columns = [f"{m}_{stat}".replace("_std", "_sd").replace("_count", "_n")
                       for m, stat in summary.columns]
    return summary.reset_index()


def main(smk):
    with open(smk.log[0], "w") as log:
        sys.stderr = log
        fits = pd.concat([pd.read_csv(f) for f in smk.input], ignore_index=True)
        summary = summarize(fits)
        write_text(smk.output.fits, fits.to_csv(index=False))
        write_text(smk.output.csv, summary.to_csv(index=False))
        write_text(smk.output.md, summary.to_markdown(index=False, floatfmt=".4g") + "\n")
        print(f"{len(fits)} fits, {len(summary)} summary rows", file=log)


main(snakemake)  # noqa: F821
