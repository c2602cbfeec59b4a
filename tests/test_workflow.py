"""The Snakemake workflow: lint, dry runs of every config, the tiny config end to end, resume."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["config.yaml", "test.yaml", "paper.yaml"]
pytestmark = pytest.mark.workflow


def snakemake(*args, cwd, check=True):
    """Run Snakemake with the active environment's `lppf` first on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "NUMBA_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(cwd), *args],
        capture_output=True, text=True, env=env, cwd=cwd,
    )
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_lint_is_clean(tmp_path):
    result = snakemake("--lint", "--configfile", str(ROOT / "config/config.yaml"), cwd=tmp_path)
    assert "Lints for" not in result.stdout + result.stderr


@pytest.mark.parametrize("config", CONFIGS)
def test_dry_run(config, tmp_path):
    result = snakemake("-n", "--configfile", str(ROOT / "config" / config), cwd=tmp_path)
    text = result.stdout + result.stderr
    assert "fit" in text and "evaluate" in text and "summarize" in text


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny config end to end, then run again after deleting one table."""
    cwd = tmp_path_factory.mktemp("workflow")
    args = ("--configfile", str(ROOT / "config/test.yaml"), "--cores", "2")
    snakemake(*args, cwd=cwd)
    results = cwd / "results/test"
    fits = sorted(results.glob("*/fits/**/*.npz"))
    stamps = {f: f.stat().st_mtime_ns for f in fits}
    (results / "v1/tables/fits.csv").unlink()  # as if interrupted before the last tables
    rerun = snakemake(*args, cwd=cwd)
    return results, stamps, rerun.stdout + rerun.stderr, cwd


def test_tables_and_figures_exist(tiny_run):
    results, _, _, _ = tiny_run
    for exp in ("s1", "s2", "s3", "e1", "e2", "e3", "e4", "v1"):
        assert (results / exp / "tables/fits.csv").is_file()
        figures = list((results / exp / "figures").glob("*.png"))
        assert figures and all(f.stat().st_size > 5000 for f in figures)
        assert len(list((results / exp / "figures").glob("*.pdf"))) == len(figures)
    fits = pd.read_csv(results / "tables/fits.csv")
    assert len(fits) == len(list(results.glob("*/metrics/**/*.json")))
    assert fits["seed"].notna().all() and fits["seconds"].gt(0).all()
    assert fits["mae_y"].between(0, 1e3).all()
    assert fits.loc[fits["experiment"] == "e3", "npmi"].between(-1, 1).all()
    private = fits[(fits["method"] == "private") & (fits["inference"] == "mcmc")]
    assert private["coverage90"].between(0, 1).all()
    assert (results / "tables/summary.md").read_text().count("|") > 50


def noise(row):
    """A number that grows with the noise of a privacy grid point."""
    for column, sign in (("alpha", 1), ("beta_mean", 1), ("eps_n", -1), ("eps_mean", -1)):
        if column in row and pd.notna(row[column]):
            return sign * row[column]
    raise AssertionError(f"no privacy level in {row.to_dict()}")


def test_private_beats_naive_at_the_noisiest_level(tiny_run):
    """Error of mu-hat (vs mu* where known, else vs the true counts) at the noisiest level."""
    results, _, _, _ = tiny_run
    fits = pd.read_csv(results / "tables/fits.csv")
    fits = fits[(fits["fix"] == "none") & (fits["grid"] != "true")]
    ratios = {}
    for (exp, setting, K), group in fits.groupby(["experiment", "setting", "K"]):
        if not {"private", "naive"} <= set(group["method"]):
            continue
        at = group[group["grid"] == group.loc[group.apply(noise, axis=1).idxmax(), "grid"]]
        error = "mae_mu" if at["mae_mu"].notna().all() else "mae_y"
        means = at.groupby("method")[error].mean()
        ratios[exp, setting, K] = means["private"] / means["naive"]
    wins = sum(r < 1 for r in ratios.values())
    assert len(ratios) >= 5 and wins >= 2 / 3 * len(ratios), ratios
    assert np.mean(np.log(list(ratios.values()))) < 0, ratios


def test_resume_rebuilds_tables_without_refitting(tiny_run):
    _, stamps, log, _ = tiny_run
    assert stamps and all(f.stat().st_mtime_ns == t for f, t in stamps.items())
    assert "rule fit:" not in log and "rule evaluate:" not in log
    assert "rule aggregate:" in log and "rule summarize:" in log


def test_report_builds(tiny_run):
    _, _, _, cwd = tiny_run
    snakemake("--configfile", str(ROOT / "config/test.yaml"), "--report", "report.html", cwd=cwd)
    assert (cwd / "report.html").stat().st_size > 10_000
