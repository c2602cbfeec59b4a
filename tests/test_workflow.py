"""The Snakemake workflow: lint, dry runs of every config, the tiny config end to end, resume."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["config/config.yaml", ".test/config/config.yaml", "config/paper.yaml",
           "config/design.yaml"]
TEST_CONFIG = str(ROOT / ".test/config/config.yaml")
pytestmark = pytest.mark.workflow


def snakemake(*args, cwd, check=True):
    """Run Snakemake with the active environment's `lppf` first on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "NUMBA_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "workflow/Snakefile"),
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
    result = snakemake("-n", "--configfile", str(ROOT / config), cwd=tmp_path)
    text = result.stdout + result.stderr
    assert "fit" in text and "evaluate" in text and "summarize" in text


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny config end to end, then run again after deleting one table."""
    cwd = tmp_path_factory.mktemp("workflow")
    args = ("--configfile", TEST_CONFIG, "--cores", "2")
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
    assert fits["seed"].notna().all() and fits["fit_seconds"].gt(0).all()
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
    snakemake("--configfile", TEST_CONFIG, "--report", "report.html", cwd=cwd)
    assert (cwd / "report.html").stat().st_size > 10_000


def test_claims_scorecard_is_built_and_printed(tiny_run):
    results, _, log, _ = tiny_run
    card = pd.read_csv(results / "tables/claims.csv")
    assert set(card["verdict"]) <= {"PASS", "FAIL", "NOT RUN"} and len(card) >= 15
    assert (results / "tables/claims.md").read_text().startswith("claims: ")
    assert "claims: " in log  # the summary printed at the end of the run


def test_snakefmt_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakefmt", "--check", str(ROOT / "workflow")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_named_targets_come_from_the_config(tmp_path):
    config = tmp_path / "only_s1.yaml"
    config.write_text(yaml_without_experiments(TEST_CONFIG, keep={"s1"}))
    assert "rule fit:" in snakemake("-n", "s1", "--configfile", str(config), cwd=tmp_path).stdout
    result = snakemake("-n", "e3", "--configfile", str(config), cwd=tmp_path, check=False)
    assert result.returncode != 0 and "e3" in result.stdout + result.stderr


def yaml_without_experiments(path, keep):
    import yaml

    config = yaml.safe_load(Path(path).read_text())
    config["experiments"] = {k: v for k, v in config["experiments"].items() if k in keep}
    return yaml.safe_dump(config)


BAD_CONFIGS = {
    "typo at the top": (lambda c: c.update(seeds=3), "seeds"),
    "typo in an experiment": (lambda c: c["experiments"]["s2"].update(replicate=3), "replicate"),
    "typo in a truth": (lambda c: c["experiments"]["s2"]["truth"].update(topicz=3), "topicz"),
    "burn-in not below iterations": (
        lambda c: c["experiments"]["s2"]["mcmc"].update(iterations=20, burnin=20),
        "experiments.s2.mcmc.burnin"),
    "labels that round equal": (
        lambda c: c["experiments"]["e1"]["privacy"].update(alpha=[0.9, 0.9000001]),
        "experiments.e1.privacy.alpha"),
    "two privacy grids": (
        lambda c: c["experiments"]["e1"]["privacy"].update(eps_n=[1.0]),
        "experiments.e1.privacy"),
    "unknown dataset": (
        lambda c: c["experiments"]["e3"]["truth"].update(dataset="mails"),
        "experiments.e3.truth.dataset"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_is_refused_before_any_job(case, tmp_path):
    import yaml

    change, key = BAD_CONFIGS[case]
    config = yaml.safe_load(Path(TEST_CONFIG).read_text())
    change(config)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake("-n", "--configfile", str(path), cwd=tmp_path, check=False)
    text = result.stdout + result.stderr
    assert result.returncode != 0 and key in text, text[-2000:]
    assert "rule fit:" not in text


def test_real_data_config_dry_runs_on_any_source(tmp_path):
    """config/enron.yaml with its source replaced by a second config file: the network is cut
    to the 161 most active actors and E4 holds out a random share of every actor's cells."""
    override = tmp_path / "source.yaml"
    override.write_text("enron: {source: synthetic}\n")
    result = snakemake("-n", "-p", "--configfile", str(ROOT / "config/enron.yaml"),
                       str(override), cwd=tmp_path)
    text = result.stdout + result.stderr
    assert "--top-actors 161" in text and "results/real/e4/" in text
    assert "--top 161 --fraction 0.2" in text


def test_download_is_a_local_rule_that_checks_the_configured_size_and_hash(tmp_path):
    override = tmp_path / "source.yaml"
    override.write_text(f"enron: {{source: 'https://example.org/enron.tar.gz', size: 123, "
                        f"sha256: {'ab' * 32}}}\n")
    result = snakemake("-n", "-p", "--configfile", str(ROOT / "config/config.yaml"),
                       str(override), "--until", "enron_download", cwd=tmp_path)
    assert f"--size 123 --sha256 {'ab' * 32}" in result.stdout + result.stderr
    # compute nodes are often offline: the download runs where Snakemake runs
    code = ("from pathlib import Path; from snakemake.api import SnakemakeApi;"
            "from snakemake.settings.types import ConfigSettings, ResourceSettings\n"
            "with SnakemakeApi() as api:\n"
            f"    wf = api.workflow(ResourceSettings(cores=1), ConfigSettings(configfiles="
            f"[Path({str(ROOT / 'config/config.yaml')!r})]),"
            f" snakefile=Path({str(ROOT / 'workflow/Snakefile')!r}), workdir=Path('.'))\n"
            "    print(sorted(wf._workflow._localrules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert "'enron_download'" in out
