"""The reproduction's experiment grid, as pure functions of the workflow's config.

An experiment crosses truth settings (``e0`` values x held-out settings), privacy grid
points, replicates, methods, inference algorithms, numbers of components and fixed-truth
diagnostics; every fit is a dict of the workflow's wildcards. The same module checks a config
before any job runs: what a JSON schema cannot say, every fit's settings with the check of
``lppf fit`` and the API (:func:`lppf.fitting.check_settings`), and every job's ``lppf``
command line with that command's own parser.
"""

from __future__ import annotations

import copy
import itertools
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from lppf.fitting import DEFAULTS, check_settings
from lppf.validation import (
    INFERENCES,
    METHODS,
    MODELS,
    NOISE_PARAMS,
    PRIOR_RANGE,
    PRIVATE_METHODS,
    InputError,
)

# privacy grid kind -> prefix of its grid point names (alpha-0.5, epsn-1, ...)
GRID_PREFIX = {"alpha": "alpha", "eps_n": "epsn", "eps_mean": "epsmean", "beta_mean": "beta"}
# the mechanism grid (experiment M1): for each mechanism, levels matched in (epsilon, delta) at
# precision N, or in noise variance; grid point names like geometric-eps-1, skellam-var-4
MATCH_PREFIX = {"epsilon": "eps", "variance": "var"}
# figures of an experiment, from what it measures (each drawn by workflow/scripts/figures.py)
FIGURES_BY_TRUTH = {"rescale": ["kl_vs_privacy"], "blocks": ["topics", "topic_error_vs_privacy"],
                    "community": ["blocks"]}
# figures that draw individual fits besides the table, and which fits (first replicate and K):
# "free" every fit with free factors, "fixed" the fix_truth fits, "posterior" the free private
# MCMC fits at the figure grid; every other figure reads the experiment's table only
FIGURE_FITS = {"topics": "free", "blocks": "free", "posterior_y": "posterior",
               "theta_kl": "fixed"}
# the options of `lppf fit` that an iteration setting maps to, and the inference using each
RUN_OPTIONS = {"mcmc": ("iterations", "burnin", "thin", "chains", "extend", "sampler"),
               "cavi": ("iterations", "tol", "restarts")}
# config key of each fit setting (lppf.fitting.DEFAULTS) that differs from it
CONFIG_KEY = {"max_iter": "iterations", "n_chains": "chains", "n_components": "components"}
DATASET_KINDS = ("rescale", "data")
# truth keys that are not options of `lppf simulate KIND`
TRUTH_NOT_OPTIONS = ("kind", "e0", "dataset", "reference_components")


class ConfigError(ValueError):
    """A config that the workflow refuses; the message is one line naming the key."""


def fmt(value: float) -> str:
    """A number as it appears in file names, to 6 significant digits and never in exponent
    notation: 0.5, 1, 2.5, 0.00001, 1000000."""
    return np.format_float_positional(float(f"{float(value):.6g}"), trim="-")


def typed(value: Any) -> Any:
    """A ``--config`` value with the numbers and booleans inside it parsed as YAML would
    (Snakemake leaves nested values strings: ``alpha: [0.3]`` arrives as ``['0.3']``)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, str):
        for parse in (int, float):
            try:
                return parse(value)
            except ValueError:
                pass
        return {"true": True, "false": False, "null": None}.get(value.lower(), value)
    return value


def merge(base: dict, update: Mapping) -> dict:
    """``base`` updated by ``update``, nested mappings key by key (as Snakemake merges)."""
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def check_alone(config: Mapping[str, Any], default: str, configfiles: Iterable) -> None:
    """Refuse a config that ``--replace-workflow-config`` changes: Snakemake does not pass that
    flag to the jobs of a cluster run, which merge the ``default`` file back in (Snakemake's
    rule for ``--configfile``) and would compute with other settings than the plan shows."""
    import yaml

    with open(default) as f:
        merged = yaml.safe_load(f) or {}
    merge(merged, config)
    key = _first_difference(merged, config, "")
    if key is not None:
        names = ", ".join(str(p) for p in configfiles)
        raise ConfigError(f"{key}: set in {default} but not in {names}; cluster jobs do not get "
                          "--replace-workflow-config and would merge it back in: set the key "
                          "(or extend the default without the flag)")


def _first_difference(a: Any, b: Any, path: str) -> str | None:
    """The first key path where nested dicts ``a`` and ``b`` differ (None: equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            sub = f"{path}.{key}" if path else str(key)
            if key not in b:
                return sub
            found = _first_difference(a[key], b[key], sub)
            if found is not None:
                return found
        return None
    return None if a == b else path or "config"


def schema_error(config: Mapping[str, Any], schema_path: str) -> str:
    """The first thing the config schema refuses in ``config``, as one line naming the key."""
    import jsonschema
    import yaml

    with open(schema_path) as f:
        schema = yaml.safe_load(f)
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return "the config does not match the schema"
    key = ".".join(map(str, error.absolute_path))
    message = " ".join(error.message.split())
    return f"{key}: {message}" if key else message


def truth_args(spec: Mapping[str, Any], e0: float | None) -> str:
    """Options of `lppf simulate KIND` for the truth of ``spec`` (without its seed and files);
    a rescaled truth takes the reference fit as its first argument."""
    truth = spec["truth"]
    if truth["kind"] == "rescale":
        top = f" --components {truth['components']}" if truth.get("components") else ""
        return f"rescale --model {spec['model']} --e0 {e0} --f0 {truth['f0']}{top}"
    options = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in truth.items()
                       if k not in TRUTH_NOT_OPTIONS)
    return f"{truth['kind']} {options}"


def settings(spec: Mapping[str, Any]) -> dict[str, dict]:
    """Truth variants of an experiment: {name: {"e0": float | None, "heldout": int}}."""
    out = {}
    for e0, top in itertools.product(spec["truth"].get("e0") or [None], spec["heldout"]):
        parts = ([f"e0-{fmt(e0)}"] if e0 is not None else []) + ([f"heldout-{top}"] if top else [])
        out["_".join(parts) or "base"] = {"e0": e0, "heldout": top}
    return out


def grids(spec: Mapping[str, Any]) -> dict[str, tuple[str, float]]:
    """Privacy grid points: {name: (kind, value)}, e.g. {"alpha-0.5": ("alpha", 0.5)}; a
    mechanism grid's points are named by mechanism, match and level, e.g.
    {"skellam-eps-1": ("epsilon", 1.0)} (:func:`mechanism_of` reads the mechanism back)."""
    privacy = spec["privacy"]
    out = {f"{prefix}-{fmt(v)}": (kind, v)
           for kind, prefix in GRID_PREFIX.items() for v in privacy.get(kind) or []}
    for mechanism in privacy.get("mechanisms") or []:
        out.update({f"{mechanism}-{prefix}-{fmt(v)}": (kind, v)
                    for kind, prefix in MATCH_PREFIX.items() for v in privacy.get(kind) or []})
    return out


def mechanism_of(grid: str) -> str:
    """The mechanism of a grid point: named in a mechanism grid's points, else geometric."""
    parts = grid.rsplit("-", 2)
    return parts[0] if len(parts) == 3 and parts[1] in MATCH_PREFIX.values() else "geometric"


def noise_param(spec: Mapping[str, Any], grid: str) -> float:
    """The parameter (alpha, sigma or mu) of a mechanism grid point: the one that gives the
    grid's epsilon at the experiment's delta and precision N, or its noise variance."""
    from lppf import mechanisms

    kind, value = grids(spec)[grid]
    mechanism, privacy = mechanism_of(grid), spec["privacy"]
    if kind == "epsilon":
        return float(mechanisms.matched_param(mechanism, value, privacy["delta"],
                                              privacy["precision"]))
    return float(mechanisms.param_for_variance(mechanism, value))


def grid_labels(spec: Mapping[str, Any], grid: str) -> dict[str, Any]:
    """Table columns of a grid point: its level (``{kind: value}``); for a mechanism grid
    also the mechanism, the match, the parameter and the noise variance, and delta and N."""
    kind, value = grids(spec)[grid]
    labels: dict[str, Any] = {kind: value}
    if kind in MATCH_PREFIX:
        from lppf.mechanisms import noise_variance

        mechanism, param = mechanism_of(grid), noise_param(spec, grid)
        labels.update(mechanism=mechanism, match=kind, noise_param=param,
                      noise_variance=float(noise_variance(mechanism, param)))
        if kind == "epsilon":
            labels.update(delta=spec["privacy"]["delta"],
                          precision=spec["privacy"]["precision"])
    return labels


def fits(exp: str, spec: Mapping[str, Any]) -> list[dict]:
    """Every fit of an experiment as a dict of wildcards (non-private fits: grid ``true``)."""
    out = []
    for K, setting, rep, method, inference, fix in itertools.product(
        spec["components"], settings(spec), range(spec["replicates"]), spec["methods"],
        spec["inference"], [""] + [f"-fix-{f}" for f in spec["fix_truth"]],
    ):
        for grid in ["true"] if method == "nonprivate" else grids(spec):
            out.append(dict(exp=exp, model=spec["model"], K=K, setting=setting, grid=grid,
                            rep=rep, method=method, inference=inference, fix=fix))
    return out


def figures(spec: Mapping[str, Any]) -> list[str]:
    """Figure names of an experiment, from what it measures (declared here only)."""
    kind = spec["truth"]["kind"]
    if spec["privacy"].get("mechanisms"):
        return ["mechanisms", "rhat"]
    names = list(FIGURES_BY_TRUTH.get(kind, []))
    if kind == "data":
        names.append("heldout_by_components" if max(spec["heldout"]) else "error_vs_privacy")
    if kind == "pmf" and spec["fix_truth"]:
        names += ["posterior_y", "theta_kl"]
    if {"cavi", "mcmc"} <= set(spec["inference"]):
        names.append("time_vs_error")
    if "mcmc" in spec["inference"]:
        names.append("rhat")
    return names


def figure_grid(spec: Mapping[str, Any]) -> str:
    """The grid point of the figures that show one noise level (default: the middle one)."""
    names = list(grids(spec))
    return spec.get("figure_grid") or names[len(names) // 2]


def figure_fits(exp: str, spec: Mapping[str, Any], name: str) -> list[dict]:
    """The fits (wildcard dicts, as :func:`fits`) that figure ``name`` draws individually."""
    kind = FIGURE_FITS.get(name)
    if kind is None:
        return []
    first = dict(rep=0, K=spec["components"][0])
    chosen = [f for f in fits(exp, spec) if all(f[k] == v for k, v in first.items())
              and (f["fix"] != "") == (kind == "fixed")]
    if kind == "posterior":
        chosen = [f for f in chosen if f["method"] in PRIVATE_METHODS
                  and f["inference"] == "mcmc" and f["grid"] == figure_grid(spec)]
    return chosen


def run_settings(spec: Mapping[str, Any], inference: str, fix: str = "",
                 method: str = "") -> dict:
    """Iteration settings of a fit of ``method``; fix_truth fits may have their own MCMC
    settings."""
    run = dict(spec.get(inference) or {})
    if fix and inference == "mcmc" and spec.get("fixed_mcmc"):
        run.update(spec["fixed_mcmc"])
    return for_method(run, method)


def for_method(run: Mapping[str, Any], method: str) -> dict:
    """``run`` with a ``sampler`` given per method (a mapping) resolved for ``method``; a
    method the mapping leaves out gets none (lppf's default)."""
    run = dict(run)
    if isinstance(run.get("sampler"), Mapping):
        run["sampler"] = run["sampler"].get(method)
    return run


def run_args(run: Mapping[str, Any], inference: str) -> str:
    """Options of `lppf fit` for the settings given, and only those: an option left out takes
    its default from :data:`lppf.fitting.DEFAULTS`, the one source of defaults."""
    return " ".join(f"--{key} {run[key]}" for key in RUN_OPTIONS[inference]
                    if run.get(key) is not None)


def reference_args(config: Mapping[str, Any]) -> str:
    """Iteration options of the non-private reference fit (settings of its inference)."""
    inference = config["reference"]["inference"]
    return run_args(for_method(config["reference"].get(inference) or {}, "nonprivate"),
                    inference)


def _check_run(where: str, run: Mapping[str, Any] | None, inference: str,
               methods: Iterable[str] = METHODS) -> None:
    for key in run or {}:
        if key not in RUN_OPTIONS[inference]:
            raise ConfigError(f"{where}.{key}: not an option of {inference} fits "
                              f"(one of {', '.join(RUN_OPTIONS[inference])})")
    sampler = (run or {}).get("sampler")
    for method in sampler if isinstance(sampler, Mapping) else ():
        if method not in methods:
            raise ConfigError(f"{where}.sampler.{method}: not a method of these fits "
                              f"(one of {', '.join(methods)})")


def fit_params(run: Mapping[str, Any], inference: str, **settings: Any) -> dict[str, Any]:
    """The settings of one fit (the keys of :data:`lppf.fitting.DEFAULTS`) from a config's
    iteration settings ``run``, as `lppf fit` gets them (left out: the defaults)."""
    params = {**DEFAULTS, "inference": inference, **settings}
    for name in ("max_iter", "burnin", "thin", "n_chains", "extend", "sampler", "tol",
                 "restarts"):
        key = CONFIG_KEY.get(name, name)
        if key in RUN_OPTIONS[inference] and run.get(key) is not None:
            params[name] = run[key]
    return params


def _check_fit(where: str, section: str, params: dict[str, Any], model: str) -> None:
    """Refuse settings that `lppf fit` would refuse (the same check, one line naming the key)."""
    try:
        check_settings(params, model)
    except InputError as exc:
        key = CONFIG_KEY.get(exc.param, exc.param)
        path = f"{where}.{section}.{key}" if key in RUN_OPTIONS["mcmc"] + RUN_OPTIONS["cavi"] \
            else f"{where}.{key}"
        raise ConfigError(f"{path}: {exc}") from None


def check_fits(where: str, spec: Mapping[str, Any]) -> None:
    """Check the settings of every distinct fit of an experiment as `lppf fit` would."""
    prior = {k: spec[k] for k in ("a0", "b0") if spec.get(k) is not None}
    fixes = [""] + (["-fix"] if spec.get("fix_truth") or spec.get("fixed_mcmc") else [])
    for inference, fix, K, method in itertools.product(
            spec["inference"], fixes, spec["components"], spec["methods"]):
        section = "fixed_mcmc" if fix and inference == "mcmc" and spec.get("fixed_mcmc") \
            else inference
        run = run_settings(spec, inference, fix, method)
        params = fit_params(run, inference, method=method, n_components=K, **prior)
        _check_fit(where, section, params, spec["model"])


def _check_privacy(where: str, privacy: Mapping[str, Any]) -> None:
    """One grid: exactly one of :data:`GRID_PREFIX`'s kinds, or mechanisms with epsilon
    and/or variance levels."""
    kinds = [k for k in GRID_PREFIX if privacy.get(k)]
    matched = [k for k in MATCH_PREFIX if privacy.get(k)]
    if privacy.get("mechanisms"):
        if kinds or not matched:
            raise ConfigError(f"{where}.privacy: mechanisms take levels epsilon and/or "
                              f"variance, and none of {', '.join(GRID_PREFIX)} "
                              f"(found {', '.join(kinds + matched) or 'none'})")
        if len(set(privacy["mechanisms"])) != len(privacy["mechanisms"]):
            raise ConfigError(f"{where}.privacy.mechanisms: {privacy['mechanisms']} repeat")
        kinds = matched
    elif matched or len(kinds) != 1:
        raise ConfigError(f"{where}.privacy: exactly one of {', '.join(GRID_PREFIX)} "
                          f"must be given, or mechanisms with epsilon and/or variance "
                          f"(found {', '.join(kinds + matched) or 'none'})")
    for kind in kinds:
        _check_levels(where, kind, privacy[kind])


def _check_levels(where: str, kind: str, values: list[float]) -> None:
    """Privacy levels as written in file names must be distinct and valid levels."""
    if len({fmt(v) for v in values}) != len(values):
        raise ConfigError(f"{where}.privacy.{kind}: levels {values} repeat once "
                          f"written as labels ({', '.join(fmt(v) for v in values)})")
    for v in values:
        if kind in ("alpha", "beta_mean") and not 0 <= float(fmt(v)) < 1:
            raise ConfigError(f"{where}.privacy.{kind}: level {v!r} is written {fmt(v)} in "
                              "file names; levels must stay below 1 to 6 digits")


def _parse(where: str, argv: list[str]) -> None:
    """Refuse a job's `lppf` command line that the command's own parser would refuse."""
    from lppf.cli import build_parser

    try:
        build_parser((argv[0],)).parse_args(argv)
    except InputError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _words(where: str, text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: {text!r}: {exc}") from None


def mechanism_args(spec: Mapping[str, Any], grid: str) -> str:
    """Options of `lppf privatize` for a mechanism grid point: the guarantee, which the
    privatized file then states (epsilon, precision and, but for the geometric, delta), or
    the parameter of the matched noise variance."""
    kind, value = grids(spec)[grid]
    mechanism, privacy = mechanism_of(grid), spec["privacy"]
    if kind == "variance":
        return f"--mechanism {mechanism} --{NOISE_PARAMS[mechanism]} {noise_param(spec, grid)!r}"
    delta = "" if mechanism == "geometric" else f" --delta {privacy['delta']}"
    return f"--mechanism {mechanism} --epsilon {value} --precision {privacy['precision']}{delta}"


def noise_args(spec: Mapping[str, Any], grid: str) -> tuple[str, str]:
    """Options of `lppf privatize` and of `lppf simulate noise-level` (empty: no such job)
    for one privacy grid point; per-row levels are read from the noise-level file."""
    kind, value = grids(spec)[grid]
    if kind in MATCH_PREFIX:
        return mechanism_args(spec, grid), ""
    if kind == "alpha":
        return f"--alpha {value}", ""
    if kind == "eps_n":
        return f"--epsilon {value} --precision 1", ""
    if kind == "eps_mean":
        return "", f"--epsilon {value}"
    return "", f"--beta-mean {value} --concentration {spec['privacy']['concentration']}"


def _check_gammas(where: str, spec: Mapping[str, Any]) -> None:
    """Gamma shapes and rates of a truth, and the Beta concentration, within the range that
    lppf accepts for priors (outside it the draws are degenerate: all zero or overflowing)."""
    low, high = PRIOR_RANGE
    values = {f"truth.{k}": spec["truth"].get(k) for k in ("shape", "rate")}
    values["privacy.concentration"] = spec["privacy"].get("concentration")
    for key, value in values.items():
        if isinstance(value, int | float) and not low <= value <= high:
            raise ConfigError(f"{where}.{key}: {value:g} lies outside [{low:g}, {high:g}] "
                              "(degenerate draws)")


def check_commands(config: Mapping[str, Any]) -> None:
    """Parse every distinct `lppf simulate`, `privatize` and `enron` command line of the
    config with the command's own parser: options a job would refuse are refused now."""
    enron = config.get("enron", {})
    if enron.get("source", "synthetic") == "synthetic":
        where = "enron.synth_args"
        _parse(where, ["enron", "synth-maildir", "OUT", "--seed", str(enron.get("synth_seed", 0)),
                       *_words(where, enron.get("synth_args", ""))])
    for name, dataset in enron.get("datasets", {}).items():
        where = f"enron.datasets.{name}.args"
        _parse(where, ["enron", dataset.get("command", "network"), "IN", "OUT",
                       *_words(where, dataset.get("args", "")), "--quiet"])
    for exp, spec in config["experiments"].items():
        source = ["REF"] if spec["truth"]["kind"] == "rescale" else []
        if spec["truth"]["kind"] not in DATASET_KINDS or source:
            for e0 in {s["e0"] for s in settings(spec).values()}:
                _parse(f"experiments.{exp}.truth", ["simulate", *truth_args(spec, e0).split(),
                                                    "--seed", "0", *source, "OUT"])
        for grid in grids(spec):
            privatize, noise_level = noise_args(spec, grid)
            where = f"experiments.{exp}.privacy"
            _parse(where, ["privatize", "IN", "OUT", *privatize.split(), "--seed", "0"]
                   + (["--alpha", "ALPHA.npy"] if noise_level else []))
            if noise_level:
                _parse(where, ["simulate", "noise-level", "IN", "OUT", *noise_level.split()])


def check_config(config: Mapping[str, Any], experiments: list[str] | None = None) -> None:
    """Cross-field rules of a (schema-validated) config; raises :class:`ConfigError`."""
    datasets = config.get("enron", {}).get("datasets", {})
    reference = config.get("reference", {})
    for inference in INFERENCES:
        _check_run(f"reference.{inference}", reference.get(inference), inference,
                   ("nonprivate",))
    if reference.get("inference"):
        inference = reference["inference"]
        # the reference fits of both models share these settings
        for model in MODELS:
            run = for_method(reference.get(inference) or {}, "nonprivate")
            _check_fit("reference", inference,
                       fit_params(run, inference, method="nonprivate"), model)
    for exp, spec in config["experiments"].items():
        where = f"experiments.{exp}"
        if spec["model"] not in MODELS:
            raise ConfigError(f"{where}.model: {spec['model']!r} is not one of {MODELS}")
        for key, allowed in (("methods", METHODS), ("inference", INFERENCES)):
            for value in spec[key]:
                if value not in allowed:
                    raise ConfigError(f"{where}.{key}: {value!r} is not one of {allowed}")
        _check_privacy(where, spec["privacy"])
        e0 = spec["truth"].get("e0") or []
        if len({fmt(v) for v in e0}) != len(e0):
            raise ConfigError(f"{where}.truth.e0: values {e0} repeat once written as labels")
        if len(set(spec["heldout"])) != len(spec["heldout"]):
            raise ConfigError(f"{where}.heldout: values {spec['heldout']} repeat")
        if spec["truth"]["kind"] in DATASET_KINDS:
            name = spec["truth"].get("dataset")
            if name not in datasets:
                raise ConfigError(f"{where}.truth.dataset: {name!r} is not in enron.datasets "
                                  f"({', '.join(datasets) or 'none defined'})")
        if max(spec["heldout"]) and spec["model"] != "community":
            raise ConfigError(f"{where}.heldout: held-out actors need model community")
        for inference in ("mcmc", "cavi"):
            _check_run(f"{where}.{inference}", spec.get(inference), inference,
                       spec["methods"])
        _check_run(f"{where}.fixed_mcmc", spec.get("fixed_mcmc"), "mcmc", spec["methods"])
        check_fits(where, spec)
        _check_gammas(where, spec)
        if spec.get("figure_grid") and spec["figure_grid"] not in grids(spec):
            raise ConfigError(f"{where}.figure_grid: {spec['figure_grid']!r} is not a grid "
                              f"point ({', '.join(grids(spec))})")
    check_commands(config)
    for exp in experiments or []:
        if exp not in config["experiments"]:
            raise ConfigError(f"experiments.{exp}: not in the config "
                              f"(configured: {', '.join(config['experiments'])})")
