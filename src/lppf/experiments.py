"""The reproduction's experiment grid, as pure functions of the workflow's config.

An experiment crosses truth settings (``e0`` values x held-out settings), privacy grid
points, replicates, methods, inference algorithms, numbers of components and fixed-truth
diagnostics; every fit is a dict of the workflow's wildcards. The same module checks the
config's cross-field rules (what a JSON schema cannot say) before any job runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from lppf.fitting import DEFAULTS
from lppf.results import INFERENCES, METHODS, MODELS, PRIVATE_METHODS

# privacy grid kind -> prefix of its grid point names (alpha-0.5, epsn-1, ...)
GRID_PREFIX = {"alpha": "alpha", "eps_n": "epsn", "eps_mean": "epsmean", "beta_mean": "beta"}
# figures of an experiment, from what it measures (each drawn by workflow/scripts/figures.py)
FIGURES_BY_TRUTH = {"rescale": ["kl_vs_privacy"], "blocks": ["topics", "topic_error_vs_privacy"],
                    "community": ["blocks"]}
# figures that draw individual fits besides the table, and which fits (first replicate and K):
# "free" every fit with free factors, "fixed" the fix_truth fits, "posterior" the free private
# MCMC fits at the figure grid; every other figure reads the experiment's table only
FIGURE_FITS = {"topics": "free", "blocks": "free", "posterior_y": "posterior",
               "theta_kl": "fixed"}
# the options of `lppf fit` that an iteration setting maps to, and the inference using each
RUN_OPTIONS = {"mcmc": ("iterations", "burnin", "thin", "chains"),
               "cavi": ("iterations", "tol", "restarts")}
DATASET_KINDS = ("rescale", "data")


class ConfigError(ValueError):
    """A config that the workflow refuses; the message is one line naming the key."""


def fmt(value: float) -> str:
    """A number as it appears in file names: 0.5, 1, 2.5."""
    return f"{value:g}"


def settings(spec: Mapping[str, Any]) -> dict[str, dict]:
    """Truth variants of an experiment: {name: {"e0": float | None, "heldout": int}}."""
    out = {}
    for e0, top in itertools.product(spec["truth"].get("e0") or [None], spec["heldout"]):
        parts = ([f"e0-{fmt(e0)}"] if e0 is not None else []) + ([f"heldout-{top}"] if top else [])
        out["_".join(parts) or "base"] = {"e0": e0, "heldout": top}
    return out


def grids(spec: Mapping[str, Any]) -> dict[str, tuple[str, float]]:
    """Privacy grid points: {name: (kind, value)}, e.g. {"alpha-0.5": ("alpha", 0.5)}."""
    privacy = spec["privacy"]
    return {f"{prefix}-{fmt(v)}": (kind, v)
            for kind, prefix in GRID_PREFIX.items() for v in privacy.get(kind) or []}


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


def run_settings(spec: Mapping[str, Any], inference: str, fix: str = "") -> dict:
    """Iteration settings of a fit; fix_truth fits may have their own MCMC settings."""
    run = dict(spec.get(inference) or {})
    if fix and inference == "mcmc" and spec.get("fixed_mcmc"):
        run.update(spec["fixed_mcmc"])
    return run


def run_args(run: Mapping[str, Any], inference: str) -> str:
    """Options of `lppf fit` for the settings given, and only those: an option left out takes
    its default from :data:`lppf.fitting.DEFAULTS`, the one source of defaults."""
    return " ".join(f"--{key} {run[key]}" for key in RUN_OPTIONS[inference]
                    if run.get(key) is not None)


def reference_args(config: Mapping[str, Any]) -> str:
    """Iteration options of the non-private reference fit (settings of its inference)."""
    inference = config["reference"]["inference"]
    return run_args(config["reference"].get(inference) or {}, inference)


def _check_run(where: str, run: Mapping[str, Any] | None, inference: str) -> None:
    run = run or {}
    for key in run:
        if key not in RUN_OPTIONS[inference]:
            raise ConfigError(f"{where}.{key}: not an option of {inference} fits "
                              f"(one of {', '.join(RUN_OPTIONS[inference])})")
    if inference == "mcmc":
        burnin = run.get("burnin", DEFAULTS["burnin"])
        iterations = run.get("iterations", DEFAULTS["max_iter"])
        if burnin >= iterations:
            raise ConfigError(f"{where}.burnin: {burnin} must be below iterations {iterations}")


def check_config(config: Mapping[str, Any], experiments: list[str] | None = None) -> None:
    """Cross-field rules of a (schema-validated) config; raises :class:`ConfigError`."""
    datasets = config.get("enron", {}).get("datasets", {})
    for inference in INFERENCES:
        _check_run(f"reference.{inference}", config.get("reference", {}).get(inference), inference)
    for exp, spec in config["experiments"].items():
        where = f"experiments.{exp}"
        if spec["model"] not in MODELS:
            raise ConfigError(f"{where}.model: {spec['model']!r} is not one of {MODELS}")
        for key, allowed in (("methods", METHODS), ("inference", INFERENCES)):
            for value in spec[key]:
                if value not in allowed:
                    raise ConfigError(f"{where}.{key}: {value!r} is not one of {allowed}")
        kinds = [k for k in GRID_PREFIX if spec["privacy"].get(k)]
        if len(kinds) != 1:
            raise ConfigError(f"{where}.privacy: exactly one of {', '.join(GRID_PREFIX)} "
                              f"must be given (found {', '.join(kinds) or 'none'})")
        values = spec["privacy"][kinds[0]]
        if len({fmt(v) for v in values}) != len(values):
            raise ConfigError(f"{where}.privacy.{kinds[0]}: levels {values} repeat once "
                              f"written as labels ({', '.join(fmt(v) for v in values)})")
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
            _check_run(f"{where}.{inference}", spec.get(inference), inference)
        _check_run(f"{where}.fixed_mcmc", spec.get("fixed_mcmc"), "mcmc")
        merged = run_settings(spec, "mcmc", "-fix")
        _check_run(f"{where}.fixed_mcmc", merged, "mcmc")
        if spec.get("figure_grid") and spec["figure_grid"] not in grids(spec):
            raise ConfigError(f"{where}.figure_grid: {spec['figure_grid']!r} is not a grid "
                              f"point ({', '.join(grids(spec))})")
    for exp in experiments or []:
        if exp not in config["experiments"]:
            raise ConfigError(f"experiments.{exp}: not in the config "
                              f"(configured: {', '.join(config['experiments'])})")
