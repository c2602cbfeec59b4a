"""Config validation, the experiment grid (lppf.experiments), seeds, input functions."""

import os
import shlex
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from lppf import experiments as grid
from lppf.validation import INFERENCES, METHODS, MODELS, PRIVATE_METHODS
from lppf.synthetic import derive_seed

# --config values as typed (Snakemake leaves numbers inside nested values strings)
grid.merge(config, grid.typed(dict(workflow.config_settings.config)))
if workflow.config_settings.replace_workflow_config:
    try:
        grid.check_alone(
            config,
            os.path.join(workflow.basedir, "config/config.yaml"),
            workflow.config_settings.configfiles,
        )
    except grid.ConfigError as exc:
        sys.exit(f"config: error: {exc}")
SCHEMA = os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml")
try:
    validate(config, SCHEMA)
    grid.check_config(config)
except WorkflowError:
    sys.exit(f"config: error: {grid.schema_error(config, SCHEMA)}")
except grid.ConfigError as exc:
    sys.exit(f"config: error: {exc}")


def refuse_target(wildcards):
    """Input of a target that names no rule, file or configured experiment: exit, one line."""
    sys.exit(
        f"config: error: target {wildcards.target}: not a configured experiment "
        f"(experiments: {', '.join(EXPERIMENTS)})"
    )


R = config["results"]
EXPERIMENTS = config["experiments"]


wildcard_constraints:
    exp="[a-z][a-z0-9]*",
    dataset="[A-Za-z0-9_]+",
    setting="[A-Za-z0-9._-]+",
    grid="(alpha|epsn|epsmean|beta)-[0-9.]+|true|[a-z-]+-(eps|var)-[0-9.]+",
    rep=r"\d+",
    K=r"\d+",
    model="|".join(MODELS),
    method="|".join(sorted(METHODS, key=len, reverse=True)),
    inference="|".join(INFERENCES),
    fix="(-fix-(theta|phi|pi))?",
    factor="theta|phi|pi",
    name="[a-z_]+",


def shell_words(text):
    """A config string of command-line options, each word quoted for the shell."""
    return shlex.join(shlex.split(text))


def seed(*parts):
    """The seed of one job: derived from the root seed and the job's identity."""
    return derive_seed(config["seed"], *parts)


fmt = grid.fmt


def settings(exp):
    return grid.settings(EXPERIMENTS[exp])


def grids(exp):
    return grid.grids(EXPERIMENTS[exp])


def fits(exp):
    return grid.fits(exp, EXPERIMENTS[exp])


# ---- file names ------------------------------------------------------------------------

FIT = "{model}-K{K}/{setting}/{grid}/rep{rep}/{method}-{inference}{fix}"
TRUTH = f"{R}/{{exp}}/truth/{{setting}}/rep{{rep}}.npz"
TRUTH_FACTOR = f"{R}/{{exp}}/truth/{{setting}}/rep{{rep}}.{{factor}}.npy"
MASK = f"{R}/{{exp}}/mask/{{setting}}/rep{{rep}}.npy"
ALPHA = f"{R}/{{exp}}/alpha/{{setting}}/{{grid}}/rep{{rep}}.npy"
PRIVATIZED = f"{R}/{{exp}}/privatized/{{setting}}/{{grid}}/rep{{rep}}.npz"


def fit_file(kind, ext):
    """Pattern of a per-fit file: kind fits (.npz) or metrics (.json)."""
    return f"{R}/{{exp}}/{kind}/{FIT}.{ext}"


def fit_record(kind, rule, ext):
    """Pattern of a per-fit log or benchmark: kind logs or benchmarks."""
    return f"{R}/{kind}/{rule}/{{exp}}/{FIT}.{ext}"


def fill(pattern, wildcards, **extra):
    return pattern.format(**dict(wildcards.items()), **extra)


def fit_paths(exp, pattern):
    return [pattern.format(**f) for f in fits(exp)]


# ---- input functions -------------------------------------------------------------------


def enron_source():
    source = config["enron"]["source"]
    if source == "synthetic":
        return f"{R}/enron/maildir"
    if "://" in source:
        return f"{R}/enron/download/enron_mail.tar.gz"
    return source


def download_args(wildcards):
    """--size / --sha256 of the download, for the keys that are set."""
    enron = config["enron"]
    return "".join(f" --{k} {enron[k]}" for k in ("size", "sha256") if enron.get(k))


def truth_path(exp, setting, rep):
    """The true counts of one replicate: the Enron matrix itself for truth kind `data`."""
    truth = EXPERIMENTS[exp]["truth"]
    if truth["kind"] == "data":
        return f"{R}/enron/{truth['dataset']}.npz"
    return TRUTH.format(exp=exp, setting=setting, rep=rep)


def get_truth(wildcards):
    return truth_path(wildcards.exp, wildcards.setting, wildcards.rep)


def get_reference(wildcards):
    truth = EXPERIMENTS[wildcards.exp]["truth"]
    model = EXPERIMENTS[wildcards.exp]["model"]
    return (
        f"{R}/reference/{truth['dataset']}-{model}-K{truth['reference_components']}.npz"
    )


def truth_args(wildcards):
    """Options of `lppf simulate` for one truth (settings only: a params trigger sees them)."""
    spec = EXPERIMENTS[wildcards.exp]
    e0 = settings(wildcards.exp)[wildcards.setting]["e0"]
    s = seed(wildcards.exp, wildcards.setting, wildcards.rep, "truth")
    return grid.truth_args(spec, e0) + f" --seed {s}"


def truth_source(wildcards, input):
    """The reference fit that a rescaled truth starts from (none for other kinds)."""
    return shlex.quote(input[0]) if input else ""


def get_truth_inputs(wildcards):
    kind = EXPERIMENTS[wildcards.exp]["truth"]["kind"]
    return [get_reference(wildcards)] if kind == "rescale" else []


def get_alpha_file(wildcards):
    kind, _ = grids(wildcards.exp)[wildcards.grid]
    if kind in ("eps_mean", "beta_mean"):
        return fill(ALPHA, wildcards)
    return []


def noise_level_args(wildcards):
    return grid.noise_args(EXPERIMENTS[wildcards.exp], wildcards.grid)[1]


def privatize_args(wildcards):
    """The noise level of a privatized copy (per-row levels: the noise_level file)."""
    return grid.noise_args(EXPERIMENTS[wildcards.exp], wildcards.grid)[0]


def alpha_file_args(wildcards, input):
    return f"--alpha {shlex.quote(input.alpha)}" if input.alpha else ""


def get_mask(wildcards):
    top = settings(wildcards.exp)[wildcards.setting]["heldout"]
    return fill(MASK, wildcards) if top else []


def get_fit_inputs(wildcards):
    """Private and naive fits read ONLY the privatized file; nonprivate fits the truth."""
    if wildcards.method == "nonprivate":
        data = get_truth(wildcards)
    else:
        data = fill(PRIVATIZED, wildcards)
    inputs = {"data": data, "mask": get_mask(wildcards)}
    if wildcards.fix:
        factor = wildcards.fix.removeprefix("-fix-")
        inputs["fix"] = fill(TRUTH_FACTOR, wildcards, factor=factor)
    return inputs


def prior_args(spec):
    return "".join(f" --{k} {spec[k]}" for k in ("a0", "b0") if spec[k] is not None)


def fit_args(wildcards):
    """The settings of a fit: iterations and prior (a params trigger sees them)."""
    spec = EXPERIMENTS[wildcards.exp]
    run = grid.run_settings(spec, wildcards.inference, wildcards.fix, wildcards.method)
    return grid.run_args(run, wildcards.inference) + prior_args(spec)


def fit_file_args(wildcards, input):
    """The mask and fixed-factor files of a fit (the input trigger sees them)."""
    args = f"--mask {shlex.quote(input.mask)}" if input.mask else ""
    if wildcards.fix:
        args += f" --{wildcards.fix.removeprefix('-')} {shlex.quote(input.fix)}"
    return args


def fit_seed(wildcards):
    w = wildcards
    return seed(w.exp, w.setting, w.grid, w.rep, w.method, w.inference, w.K, w.fix)


def fit_resources(key):
    """Per-experiment resource, doubled, tripled... on each retry (profile `retries`)."""
    return lambda wildcards, attempt: EXPERIMENTS[wildcards.exp][key] * attempt


def grow(base):
    """A resource that grows with the attempt number, so a retried job gets more."""
    return lambda wildcards, attempt: base * attempt


def get_evaluate_inputs(wildcards):
    inputs = {
        "fit": fill(fit_file("fits", "npz"), wildcards),
        "truth": get_truth(wildcards),
        "mask": get_mask(wildcards),
        "privatized": [],
    }
    if wildcards.method in PRIVATE_METHODS and wildcards.inference == "mcmc":
        inputs["privatized"] = fill(PRIVATIZED, wildcards)
    return inputs


def evaluate_file_args(wildcards, input):
    """The mask and privatized files of an evaluation (the input trigger sees them)."""
    args = f"--mask {shlex.quote(input.mask)}" if input.mask else ""
    if input.privatized:
        args += f" --privatized {shlex.quote(input.privatized)}"
    return args


def evaluate_args(wildcards):
    """Options of `lppf evaluate`, including the labels that become table columns."""
    spec = EXPERIMENTS[wildcards.exp]
    args = f"--model {spec['model']}"
    if spec["coherence"] and spec["model"] == "pmf":
        args += " --coherence"
    w = wildcards
    labels = dict(
        experiment=w.exp,
        model=spec["model"],
        method=w.method,
        inference=w.inference,
        K=w.K,
        setting=w.setting,
        grid=w.grid,
        replicate=w.rep,
    )
    labels["fix"] = wildcards.fix.removeprefix("-fix-") or "none"
    labels.update(
        {
            k: v
            for k, v in settings(wildcards.exp)[wildcards.setting].items()
            if v is not None
        }
    )
    if wildcards.grid != "true":
        labels.update(grid.grid_labels(spec, wildcards.grid))
    label_args = " ".join(f"--label {k}={v}" for k, v in labels.items())
    return f"{args} {label_args}"


# ---- final outputs ---------------------------------------------------------------------


def figures(exp):
    return grid.figures(EXPERIMENTS[exp])


def experiment_outputs(exp):
    """Everything an experiment's named target builds: its tables and figures."""
    return [f"{R}/{exp}/tables/fits.csv"] + [
        f"{R}/{exp}/figures/{name}.{ext}"
        for name in figures(exp)
        for ext in ("png", "pdf")
    ]


def enabled():
    return [exp for exp, spec in EXPERIMENTS.items() if spec["enabled"]]


def get_final_output():
    outputs = [out for exp in enabled() for out in experiment_outputs(exp)]
    names = (
        "fits.csv",
        "summary.csv",
        "summary.md",
        "claims.csv",
        "claims.md",
        "findings.csv",
    )
    return outputs + [f"{R}/tables/{name}" for name in names]


# ---- figures ---------------------------------------------------------------------------


def figure_settings(exp):
    """What a figure reads from the config besides its inputs: the fixed-truth MCMC settings."""
    return grid.run_settings(EXPERIMENTS[exp], "mcmc", "-fix")


def figure_fits(wildcards):
    """Fits a figure draws individually (lppf.experiments.figure_fits), with their paths."""
    chosen = grid.figure_fits(wildcards.exp, EXPERIMENTS[wildcards.exp], wildcards.name)
    return [
        {
            **f,
            "fit": fit_file("fits", "npz").format(**f),
            "truth": truth_path(f["exp"], f["setting"], f["rep"]),
            "privatized": PRIVATIZED.format(**f),
        }
        for f in chosen
    ]


def get_figure_inputs(wildcards):
    chosen = figure_fits(wildcards)
    inputs = {
        "table": f"{R}/{wildcards.exp}/tables/fits.csv",
        "fits": [f["fit"] for f in chosen],
        "truths": sorted({f["truth"] for f in chosen}),
    }
    if wildcards.name == "posterior_y":
        inputs["privatized"] = sorted({f["privatized"] for f in chosen})
    return inputs


def print_claims(path):
    """The scorecard's summary at the end of a run (when the run built it)."""
    import pandas as pd

    from lppf import claims, findings

    if os.path.isfile(path):
        card = pd.read_csv(path)
        print(claims.summary(card))
        for _, r in card[card["verdict"] != claims.PASS].iterrows():
            print(f"  {r['verdict']}: {r['claim']} [{r['compared']}]")
    found = os.path.join(os.path.dirname(path), "findings.csv")
    if os.path.isfile(found) and not (card := pd.read_csv(found)).empty:
        print(findings.summary(card))
