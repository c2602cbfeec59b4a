"""The Snakemake workflow: lint, dry runs of every config, the tiny config end to end, resume,
and what a changed setting re-runs."""

import functools
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
# config/paper.yaml's dry run (under a minute) is docs/cluster.md's, run by tests/test_docs.py
CONFIGS = ["config/config.yaml", ".test/config/config.yaml", "config/design.yaml"]
TEST_CONFIG = str(ROOT / ".test/config/config.yaml")
pytestmark = pytest.mark.workflow


def _start(args, cwd):
    """Start Snakemake with the active environment's `lppf` first on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "NUMBA_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(cwd), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
    )


def _finish(proc, check):
    stdout, stderr = proc.communicate()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def snakemake(*args, cwd, check=True):
    """Run Snakemake with the active environment's `lppf` first on PATH."""
    return _finish(_start(args, cwd), check)


def snakemake_at_once(*runs, cwd):
    """Run Snakemake dry runs (``-n``: they take no lock) at the same time, one per tuple of
    arguments in ``runs``; their results in order."""
    procs = [_start(args, cwd) for args in runs]
    return [_finish(proc, True) for proc in procs]


@functools.cache
def dry_run(config):
    """stdout + stderr of ``snakemake -n`` on ``config`` from an empty directory, run once."""
    with tempfile.TemporaryDirectory() as cwd:
        result = snakemake("-n", "--configfile", str(ROOT / config), cwd=Path(cwd))
    return result.stdout, result.stderr


def test_lint_is_clean(tmp_path):
    result = snakemake("--lint", "--configfile", str(ROOT / "config/config.yaml"), cwd=tmp_path)
    assert "Lints for" not in result.stdout + result.stderr


@pytest.mark.parametrize("config", CONFIGS)
def test_dry_run(config):
    text = "".join(dry_run(config))
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
    for exp in ("s1", "s2", "s3", "e1", "e2", "e3", "e4", "v1", "m1"):
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


def test_mechanism_experiment_rows_and_findings(tiny_run):
    """M1: every mechanism at every matched level, and the findings in their own section."""
    results, _, log, _ = tiny_run
    fits = pd.read_csv(results / "m1/tables/fits.csv")
    noisy = fits[fits["grid"] != "true"]
    assert set(noisy["mechanism"]) == {"geometric", "discrete-gaussian", "skellam"}
    assert set(noisy["match"]) == {"epsilon", "variance"}
    at_variance = noisy[noisy["match"] == "variance"]
    assert np.allclose(at_variance["noise_variance"], at_variance["variance"], rtol=1e-6)
    assert noisy.loc[noisy["method"] == "private-collapsed", "coverage90"].between(0, 1).all()
    found = pd.read_csv(results / "tables/findings.csv")
    assert len(found) >= 10 and set(found["experiment"]) == {"m1"}
    assert set(found["verdict"]) <= {"PASS", "FAIL", "NOT RUN"}
    assert "\n## Findings of this project\n" in (results / "tables/claims.md").read_text()
    assert "findings: " in log


def test_snakefmt_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakefmt", "--check", str(ROOT / "Snakefile"),
                             str(ROOT / "workflow")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_named_targets_come_from_the_config(tmp_path):
    assert "rule fit:" in snakemake("-n", "s1", "--configfile", TEST_CONFIG, cwd=tmp_path).stdout
    result = snakemake("-n", "e9", "--configfile", TEST_CONFIG, cwd=tmp_path, check=False)
    assert result.returncode != 0 and "e9" in result.stdout + result.stderr


def test_a_config_the_cluster_jobs_would_read_otherwise_is_refused(tmp_path):
    """Cluster jobs do not get --replace-workflow-config and merge config/config.yaml back in:
    a config that the flag changes is refused, one line naming the key."""
    import yaml

    config = yaml.safe_load(Path(TEST_CONFIG).read_text())
    del config["experiments"]["e4"]["a0"]
    path = tmp_path / "partial.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake("-n", "--configfile", str(path), "--replace-workflow-config", cwd=tmp_path,
                       check=False)
    errors = [line for line in result.stderr.splitlines() if line.startswith("config: error:")]
    assert result.returncode != 0 and len(errors) == 1, result.stderr[-2000:]
    assert errors[0].startswith("config: error: experiments.e4.a0: set in ")
    snakemake("-n", "--configfile", TEST_CONFIG, "--replace-workflow-config", cwd=tmp_path)


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
    "a schedule every fit refuses": (
        lambda c: c["experiments"]["s2"]["mcmc"].update(iterations=400, burnin=390, thin=20),
        "experiments.s2.mcmc.burnin"),
    "a degenerate prior": (lambda c: c["experiments"]["s3"].update(a0=-1), "experiments.s3.a0"),
    "a prior rate too large": (lambda c: c["experiments"]["s3"].update(b0=1e20),
                               "experiments.s3.b0"),
    "too many components": (lambda c: c["experiments"]["s3"].update(components=[2**40]),
                            "experiments.s3.components"),
    "a pmf truth without rows": (lambda c: c["experiments"]["s1"]["truth"].pop("rows"),
                                 "experiments.s1.truth"),
    "one topic": (lambda c: c["experiments"]["s2"]["truth"].update(topics=1),
                  "experiments.s2.truth.topics"),
    "alpha that rounds to 1": (
        lambda c: c["experiments"]["e1"]["privacy"].update(alpha=[1 - 1e-16]),
        "experiments.e1.privacy.alpha"),
    "bogus dataset options": (
        lambda c: c["enron"]["datasets"]["network"].update(args="--min-total 20 --bogus"),
        "enron.datasets.network.args"),
    "shell in the maildir options": (lambda c: c["enron"].update(synth_args="--people 12; touch x"),
                                     "enron.synth_args"),
    "negative memory": (lambda c: c["experiments"]["e4"].update(mem_mb=-1),
                        "experiments.e4.mem_mb"),
    "no run time": (lambda c: c["experiments"]["e4"].update(runtime=0), "experiments.e4.runtime"),
    "empty results directory": (lambda c: c.update(results=""), "results"),
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
    errors = [line for line in text.splitlines() if line.startswith("config: error: ")]
    assert len(errors) == 1 and key in errors[0] and "Traceback" not in text, text[-2000:]
    assert not (tmp_path / "x").exists()


# ---- provenance: a changed setting re-runs exactly the jobs it changes -------------------

JOB = re.compile(r"^(?:local)?rule (\w+):\n((?:    .*\n)*)", re.MULTILINE)
R = "results/test"
DOWNSTREAM = (f"{R}/tables/",)  # every change reaches the global tables and the scorecard


def scheduled(text):
    """(rule, first output) of every job a dry run lists; rule `all` has no output."""
    jobs = set()
    for rule, body in JOB.findall(text):
        output = re.search(r"^    output: ([^,\s]+)", body, re.MULTILINE)
        jobs.add((rule, output.group(1) if output else ""))
    return jobs


def experiment(exp, *parts):
    """Jobs of one experiment whose output path contains every one of ``parts`` (or is its
    table or figure, which read every fit)."""
    def chosen(path):
        if path.startswith((f"{R}/{exp}/tables/", f"{R}/{exp}/figures/")):
            return True
        return path.startswith(f"{R}/{exp}/") and all(p in path for p in parts)
    return chosen


def fits_of(exp, *parts):
    return experiment(exp, "/fits/", *parts)


def fits_and_metrics(exp, *parts):
    fit, metric = experiment(exp, "/fits/", *parts), experiment(exp, "/metrics/", *parts)
    return lambda path: fit(path) or metric(path)


# change (extra config file, or --config words) -> jobs (predicate on the first output path)
CHANGES = {
    "prior": ({"s3": {"a0": 0.3}}, fits_and_metrics("s3")),
    "iterations": ({"e4": {"mcmc": {"iterations": 44}}}, fits_and_metrics("e4")),
    "burn-in": ({"s2": {"mcmc": {"burnin": 24}}}, fits_and_metrics("s2")),
    "thin": ({"e1": {"mcmc": {"thin": 10}}}, fits_and_metrics("e1")),
    "chains": ({"s2": {"mcmc": {"chains": 2}}}, fits_and_metrics("s2")),
    "sampler of one method": ({"e4": {"mcmc": {"sampler": {"naive": "gibbs"}}}},
                              fits_and_metrics("e4", "/naive-mcmc")),
    "restarts": ({"v1": {"cavi": {"restarts": 2}}}, fits_and_metrics("v1", "-cavi")),
    "fixed-truth schedule": ({"s1": {"fixed_mcmc": {"iterations": 50}}},
                             fits_and_metrics("s1", "-fix-phi")),
    "components": ({"s1": {"components": [2, 3]}}, fits_and_metrics("s1", "-K3/")),
    "grid value": ({"e1": {"privacy": {"alpha": [0.9, 0.5]}}},
                   lambda p: experiment("e1", "/alpha-0.5/")(p) and "/truth/" not in p),
    "truth option": ({"s3": {"truth": {"shape": 0.6}}}, experiment("s3")),
    "held-out share": ({"e4": {"heldout_fraction": 0.4}},
                       lambda p: experiment("e4", "heldout-")(p) and "/privatized/" not in p),
    "dataset option": (
        {"enron": {"datasets": {"emails": {"args": "--n-docs 70 --n-words 60 --min-tokens 20 "
                                                   "--seed 1"}}}},
        lambda p: p.startswith((f"{R}/enron/emails", f"{R}/reference/emails", f"{R}/e2/",
                                f"{R}/e3/", f"{R}/m1/"))),
    "root seed": ({"seed": 8}, lambda p: not p.startswith(f"{R}/enron/")),
    "replicates": ({"e1": {"replicates": 3}}, experiment("e1", "/rep2")),
    "e0 values": ({"e1": {"truth": {"e0": [1.5, 0.75]}}}, experiment("e1", "/e0-0.75/")),
    "concentration": ({"s2": {"privacy": {"concentration": 12}}},
                      lambda p: experiment("s2")(p) and "/truth/" not in p),
    "reference schedule": ({"reference": {"cavi": {"iterations": 60}}},
                           lambda p: p.startswith((f"{R}/reference/", f"{R}/e1/", f"{R}/e2/",
                                                   f"{R}/m1/"))),
    "metrics option": ({"e3": {"coherence": False}}, experiment("e3", "/metrics/")),
    "alpha by --config": (["experiments={e1: {privacy: {alpha: [0.9, 0.5]}}}"],
                          lambda p: experiment("e1", "/alpha-0.5/")(p) and "/truth/" not in p),
    "unchanged settings": ({"threads": 2, "s2": {"description": "renamed", "mem_mb": 900,
                                                 "runtime": 20}}, lambda p: False),
}


def change_args(change, tmp_path):
    """Snakemake options that apply ``change`` on top of the tiny config."""
    import yaml

    if isinstance(change, list):
        return ["--configfile", TEST_CONFIG, "--config", *change]
    top = {k: v for k, v in change.items() if k in ("seed", "threads", "enron", "reference")}
    top["experiments"] = {k: v for k, v in change.items() if k not in top}
    path = tmp_path / "change.yaml"
    path.write_text(yaml.safe_dump(top))
    return ["--configfile", TEST_CONFIG, str(path)]


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_changed_setting_reruns_exactly_what_it_changes(case, tiny_run, tmp_path):
    _, _, _, cwd = tiny_run
    change, affected = CHANGES[case]
    args = change_args(change, tmp_path)
    forced, result = snakemake_at_once(("-n", "--forceall", *args), ("-n", *args), cwd=cwd)
    every = scheduled(forced.stdout)
    expected = {(rule, out) for rule, out in every if affected(out)}
    if expected:
        expected |= {(rule, out) for rule, out in every
                     if rule == "all" or out.startswith(DOWNSTREAM)}
    assert scheduled(result.stdout) == expected
    assert expected or "Nothing to be done" in result.stdout + result.stderr


# ---- layout: the root Snakefile and envs/ ---------------------------------------------------


def test_env_files_are_pinned_and_install_the_repository():
    """Every conda env file parses, pins its packages, and installs lppf from the root; every
    `conda:` directive names one of them."""
    import yaml

    envs = sorted((ROOT / "envs").glob("*.yaml"))
    assert envs
    for path in envs:
        env = yaml.safe_load(path.read_text())
        pip = [d for d in env["dependencies"] if isinstance(d, dict)]
        conda = [d for d in env["dependencies"] if isinstance(d, str) and d != "pip"]
        assert conda and all(re.fullmatch(r"[\w.-]+=[\w.]+", d) for d in conda), conda
        local = [a for p in pip for a in p["pip"] if a.startswith("-e ")]
        assert [(path.parent / a.removeprefix("-e ")).resolve() for a in local] == [ROOT], path
    directives = []
    for rules in sorted((ROOT / "workflow/rules").glob("*.smk")):
        for name in re.findall(r'^\s+conda:\n\s+"([^"]+)"', rules.read_text(), re.MULTILINE):
            directives.append((rules.parent / name).resolve())
    assert directives and set(directives) <= {p.resolve() for p in envs}


def test_snakemake_from_the_root_finds_the_snakefile():
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "s1"], cwd=ROOT,
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0 and "rule fit:" in result.stdout, result.stderr[-2000:]


def test_an_unconfigured_target_is_refused_in_one_line(tmp_path):
    result = snakemake("-n", "e9", "--configfile", TEST_CONFIG, cwd=tmp_path, check=False)
    assert result.returncode != 0
    assert ("config: error: target e9: not a configured experiment (experiments: s1, s2, s3, "
            "e1, e2, e3, e4, v1, m1)") in result.stderr.splitlines()
    assert "Traceback" not in result.stderr and "No rule to produce" not in result.stderr


# ---- numbers quoted in the docs come from the code -----------------------------------------

QUOTED_COUNTS = {  # config -> pattern of its job (and fit) counts in docs/workflow.md
    "config/config.yaml": r"The default configuration has (\d+) jobs \((\d+) fits",
    "config/design.yaml": r"`config/design.yaml` \((\d+) jobs, (\d+) fits",
    ".test/config/config.yaml": r"tiny `\.test` configuration\s+\((\d+) jobs",
}


@pytest.mark.parametrize("config", list(QUOTED_COUNTS))
def test_job_counts_in_the_docs_are_the_dry_runs(config):
    quoted = re.search(QUOTED_COUNTS[config], (ROOT / "docs/workflow.md").read_text())
    assert quoted, QUOTED_COUNTS[config]
    out = dry_run(config)[0]
    counts = [re.search(rf"^{rule}\s+(\d+)$", out, re.MULTILINE).group(1)
              for rule in ("total", "fit")]
    assert list(quoted.groups()) == counts[:len(quoted.groups())]


def test_config_strings_reach_the_shell_as_single_words(tmp_path):
    """A results directory with a space and an ampersand, and a source URL with `&`, stay
    single arguments in every job's command line."""
    out = snakemake("-n", "-p", "--configfile", TEST_CONFIG, "--config", "results=my results & co",
                    "enron={source: 'https://example.org/enron.tgz?a=1&b=2'}", cwd=tmp_path).stdout
    commands = [line for line in out.splitlines() if "lppf " in line and "rule" not in line]
    assert len(commands) > 50
    for command in commands:
        words = shlex.split(command.strip())
        paths = [w for w in words if "results" in w and w.endswith((".npz", ".npy", ".log"))]
        assert paths and all(w.startswith("my results & co/") for w in paths), command
    assert any("https://example.org/enron.tgz?a=1&b=2" in shlex.split(c) for c in commands)



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
            f" snakefile=Path({str(ROOT / 'Snakefile')!r}), workdir=Path('.'))\n"
            "    print(sorted(wf._workflow._localrules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert "'enron_download'" in out
