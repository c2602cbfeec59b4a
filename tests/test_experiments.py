"""The workflow's experiment grid and config checks (lppf.experiments), and one source of
defaults for the Python API, the CLI and the workflow."""

import argparse
from pathlib import Path

import pytest
import yaml

from lppf import experiments as grid
from lppf.commands import fit as fit_command
from lppf.estimators import DEFAULTS
from lppf.validation import INFERENCES, METHODS, MODELS, SAMPLERS

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())


def spec(**changes):
    base = dict(model="community", truth={"kind": "rescale", "dataset": "network",
                                          "e0": [0.75, 1.5], "f0": 0.1},
                privacy={"alpha": [0.1, 0.9]}, components=[5], heldout=[0], replicates=2,
                methods=["private", "naive", "nonprivate"], inference=["mcmc"], fix_truth=[],
                mcmc={"iterations": 100, "burnin": 50})
    return {**base, **changes}


def config(**changes):
    return {"enron": {"datasets": {"network": {"command": "network"}}},
            "reference": {"inference": "cavi", "cavi": {"iterations": 10}},
            "experiments": {"e1": spec(**changes)}}


def test_settings_grids_and_fits():
    s = spec(heldout=[0, 10])
    assert list(grid.settings(s)) == ["e0-0.75", "e0-0.75_heldout-10", "e0-1.5",
                                      "e0-1.5_heldout-10"]
    assert grid.grids(s) == {"alpha-0.1": ("alpha", 0.1), "alpha-0.9": ("alpha", 0.9)}
    fits = grid.fits("e1", s)
    # 4 settings x 2 replicates x (2 noisy methods x 2 levels + 1 non-private)
    assert len(fits) == 4 * 2 * 5
    assert {f["grid"] for f in fits if f["method"] == "nonprivate"} == {"true"}
    assert len({tuple(sorted(f.items())) for f in fits}) == len(fits)


def test_figures_are_declared_by_what_an_experiment_measures():
    assert grid.figures(spec()) == ["kl_vs_privacy", "rhat"]
    assert grid.figures(spec(inference=["cavi"])) == ["kl_vs_privacy"]
    assert grid.figures(spec(truth={"kind": "data", "dataset": "network"}, heldout=[0, 5])) == [
        "heldout_by_components", "rhat"]
    assert grid.figures(spec(truth={"kind": "pmf"}, fix_truth=["phi"],
                             inference=["mcmc", "cavi"])) == ["posterior_y", "theta_kl",
                                                             "time_vs_error", "rhat"]


def test_run_args_pass_only_the_options_given():
    assert grid.run_args({}, "mcmc") == ""
    assert grid.run_args({"iterations": 10, "thin": 2}, "mcmc") == "--iterations 10 --thin 2"
    assert grid.run_args({"iterations": 10, "tol": 0.0}, "cavi") == "--iterations 10 --tol 0.0"
    assert grid.run_args({"chains": 4}, "mcmc") == "--chains 4"
    assert grid.run_settings(spec(fixed_mcmc={"burnin": 0}), "mcmc", "-fix-phi") == {
        "iterations": 100, "burnin": 0}


def test_one_source_of_defaults():
    """The workflow passes no option it was not given, its schema sets no fit default, and
    `lppf fit`'s defaults are the API's DEFAULTS."""
    run = SCHEMA["$defs"]["run"]["properties"]
    assert not [k for k, v in run.items() if "default" in v]
    experiment = SCHEMA["$defs"]["experiment"]["properties"]
    assert "default" not in experiment["components"]
    assert experiment["a0"]["default"] is None and experiment["b0"]["default"] is None
    parser = argparse.ArgumentParser()
    fit_command.register(parser.add_subparsers())
    args = parser.parse_args(["fit", "in.npz", "out.npz", "--components", "3"])
    for option, key in (("iterations", "max_iter"), ("burnin", "burnin"), ("thin", "thin"),
                        ("tol", "tol"), ("restarts", "restarts"), ("a0", "a0"), ("b0", "b0"),
                        ("method", "method"), ("inference", "inference")):
        # None where `lppf fit` must know whether an option was given (an option of the
        # other inference is refused only then); it then takes DEFAULTS[key]
        value = getattr(args, option)
        assert (DEFAULTS[key] if value is None else value) == DEFAULTS[key], option


def test_names_come_from_one_constant():
    experiment = SCHEMA["$defs"]["experiment"]["properties"]
    assert experiment["methods"]["items"] == {"$ref": "#/$defs/method"}
    assert tuple(SCHEMA["$defs"]["method"]["enum"]) == METHODS
    assert tuple(SCHEMA["$defs"]["sampler"]["enum"]) == SAMPLERS
    assert tuple(experiment["inference"]["items"]["enum"]) == INFERENCES
    assert tuple(experiment["model"]["enum"]) == MODELS


def test_the_schema_refuses_unknown_keys_everywhere():
    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, path
            for key, child in node.items():
                walk(child, f"{path}.{key}")
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, f"{path}[{i}]")

    walk(SCHEMA, "schema")
    assert SCHEMA["additionalProperties"] is False


@pytest.mark.parametrize("changes, key", [
    ({"mcmc": {"iterations": 100, "burnin": 100}}, "experiments.e1.mcmc.burnin"),
    ({"mcmc": {"burnin": DEFAULTS["max_iter"]}}, "experiments.e1.mcmc.burnin"),
    ({"fixed_mcmc": {"iterations": 10}}, "experiments.e1.fixed_mcmc.burnin"),
    ({"privacy": {"alpha": [0.5, 0.5000001]}}, "experiments.e1.privacy.alpha"),
    ({"privacy": {"alpha": [0.5], "eps_n": [1.0]}}, "experiments.e1.privacy"),
    ({"privacy": {"concentration": 10}}, "experiments.e1.privacy"),
    ({"truth": {"kind": "rescale", "dataset": "emails"}}, "experiments.e1.truth.dataset"),
    ({"truth": {"kind": "rescale", "dataset": "network", "e0": [1, 1.0], "f0": 0.1}},
     "experiments.e1.truth.e0"),
    ({"cavi": {"thin": 2}}, "experiments.e1.cavi.thin"),
    ({"figure_grid": "alpha-0.3"}, "experiments.e1.figure_grid"),
    ({"model": "pmf", "heldout": [0, 5]}, "experiments.e1.heldout"),
    ({"model": "pmf", "mcmc": {"sampler": "hmc"}}, "experiments.e1.mcmc.sampler"),
    ({"model": "pmf", "mcmc": {"sampler": {"naive": "hmc"}}}, "experiments.e1.mcmc.sampler"),
    ({"mcmc": {"sampler": {"private-collapsed": "gibbs"}}},
     "experiments.e1.mcmc.sampler.private-collapsed"),
])
def test_cross_field_rules_name_the_key(changes, key):
    with pytest.raises(grid.ConfigError) as info:
        grid.check_config(config(**changes))
    message = str(info.value)
    assert message.startswith(key + ":") and "\n" not in message


# settings that every `lppf fit` of the experiment would refuse: refused before any job, by
# the same check (lppf.fitting.check_settings), naming the config key
FIT_REFUSALS = [
    ({"mcmc": {"iterations": 400, "burnin": 390, "thin": 20}}, "experiments.e1.mcmc.burnin"),
    ({"mcmc": {"iterations": 2**31, "burnin": 10}}, "experiments.e1.mcmc.iterations"),
    ({"mcmc": {"iterations": 100, "burnin": 50, "chains": 2**31}}, "experiments.e1.mcmc.chains"),
    ({"a0": -1}, "experiments.e1.a0"),
    ({"a0": 0}, "experiments.e1.a0"),
    ({"b0": 1e20}, "experiments.e1.b0"),
    ({"components": [5, 2**40]}, "experiments.e1.components"),
    ({"inference": ["cavi"], "cavi": {"restarts": 0}}, "experiments.e1.cavi.restarts"),
    ({"fix_truth": ["phi"], "fixed_mcmc": {"burnin": 100}}, "experiments.e1.fixed_mcmc.burnin"),
]


@pytest.mark.parametrize("changes, key", FIT_REFUSALS)
def test_fit_settings_are_refused_by_the_check_of_lppf_fit(changes, key):
    from lppf.fitting import check_settings
    from lppf.validation import InputError

    with pytest.raises(grid.ConfigError) as info:
        grid.check_config(config(**changes))
    message = str(info.value)
    assert message.startswith(key + ": ") and "\n" not in message
    # the same words as the API's (and `lppf fit`'s) refusal of that fit
    s = spec(**changes)
    run = grid.run_settings(s, s["inference"][0], "-fix" if s["fix_truth"] else "")
    params = grid.fit_params(run, s["inference"][0], method="private",
                             n_components=max(s["components"]),
                             **{k: s[k] for k in ("a0", "b0") if k in s})
    with pytest.raises(InputError) as api:
        check_settings(params)
    assert message == f"{key}: {api.value}"


def test_reference_fit_settings_are_checked_too():
    c = config()
    c["reference"]["cavi"] = {"iterations": 2**31}
    with pytest.raises(grid.ConfigError, match=r"^reference\.cavi\.iterations: "):
        grid.check_config(c)
    c = config()
    c["reference"].update(inference="mcmc", mcmc={"sampler": "hmc"})  # fits topics too
    with pytest.raises(grid.ConfigError, match=r"^reference\.mcmc\.sampler: .*'pmf'"):
        grid.check_config(c)


def test_a_sampler_is_passed_to_the_fits_that_set_it():
    grid.check_config(config(mcmc={"sampler": "hmc"}))  # the community model: accepted
    assert "--sampler gibbs" in grid.run_args({"sampler": "gibbs"}, "mcmc")
    assert "--sampler" not in grid.run_args({"iterations": 10}, "mcmc")


def test_a_sampler_per_method_reaches_that_method_only():
    mcmc = {"iterations": 100, "burnin": 50, "sampler": {"private": "auto", "naive": "hmc"}}
    s = spec(mcmc=mcmc)
    grid.check_config(config(mcmc=mcmc))
    args = {m: grid.run_args(grid.run_settings(s, "mcmc", "", m), "mcmc")
            for m in s["methods"]}
    assert "--sampler auto" in args["private"] and "--sampler hmc" in args["naive"]
    assert "--sampler" not in args["nonprivate"]  # left out: lppf's default
    assert mcmc["sampler"] == {"private": "auto", "naive": "hmc"}  # the spec is not changed
    c = config()
    c["reference"].update(inference="mcmc", mcmc={"sampler": {"nonprivate": "gibbs"}})
    grid.check_config(c)
    assert "--sampler gibbs" in grid.reference_args(c)
    c["reference"]["mcmc"]["sampler"] = {"naive": "gibbs"}
    with pytest.raises(grid.ConfigError, match=r"^reference\.mcmc\.sampler\.naive: "):
        grid.check_config(c)


@pytest.mark.parametrize("sampler, ok", [
    ("gibbs", True), ({"private-collapsed": "auto", "naive": "gibbs"}, True),
    ("fast", False), ({"naive": "fast"}, False), ({"everyone": "gibbs"}, False),
])
def test_the_schema_takes_a_sampler_or_one_per_method(sampler, ok):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    merged = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    merged["experiments"]["e4"]["mcmc"]["sampler"] = sampler
    if ok:
        validate(merged, str(ROOT / "workflow/schemas/config.schema.yaml"))
    else:
        with pytest.raises(WorkflowError):
            validate(merged, str(ROOT / "workflow/schemas/config.schema.yaml"))


def with_enron(**enron):
    c = config()
    c["enron"].update(enron)
    return c


@pytest.mark.parametrize("make, key", [
    (lambda: config(truth={"kind": "pmf", "cols": 5, "components": 2}), "experiments.e1.truth"),
    (lambda: config(truth={"kind": "community", "actors": 5, "communities": 2, "shape": "x"}),
     "experiments.e1.truth"),
    (lambda: config(privacy={"alpha": [0.5, 1 - 1e-16]}), "experiments.e1.privacy.alpha"),
    (lambda: with_enron(datasets={"network": {"command": "network", "args": "--bogus 3"}}),
     "enron.datasets.network.args"),
    (lambda: with_enron(datasets={"network": {"command": "network", "args": "--min-total 'x"}}),
     "enron.datasets.network.args"),
    (lambda: with_enron(synth_args="--people 12; touch x"), "enron.synth_args"),
    (lambda: config(truth={"kind": "community", "actors": 5, "communities": 2, "shape": 1e308}),
     "experiments.e1.truth.shape"),
    (lambda: config(privacy={"beta_mean": [0.5], "concentration": 1e-300}),
     "experiments.e1.privacy.concentration"),
])
def test_job_command_lines_are_parsed_by_the_commands_parsers(make, key):
    with pytest.raises(grid.ConfigError) as info:
        grid.check_config(make())
    message = str(info.value)
    assert message.startswith(key + ": ") and "\n" not in message


def test_labels_never_use_exponents():
    assert [grid.fmt(v) for v in (0.5, 1.0, 2.5, 1e-5, 1e6, 0.1 + 0.2)] == [
        "0.5", "1", "2.5", "0.00001", "1000000", "0.3"]
    assert list(grid.grids({"privacy": {"eps_n": [1e-5, 1e6]}})) == ["epsn-0.00001",
                                                                     "epsn-1000000"]


def test_config_values_are_read_as_typed():
    assert grid.typed({"e1": {"privacy": {"alpha": ["0.3", "1"]}, "x": ["a", "True"]}}) == {
        "e1": {"privacy": {"alpha": [0.3, 1]}, "x": ["a", True]}}


def test_a_config_alone_must_mean_what_it_means_merged(tmp_path):
    """--replace-workflow-config does not reach cluster jobs, which merge the default back in:
    a config that the merge would change is refused, naming the first key."""
    default = tmp_path / "default.yaml"
    default.write_text("seed: 1\nexperiments: {e1: {a0: 1, b0: 1}}\n")
    grid.check_alone({"seed": 2, "experiments": {"e1": {"a0": 2, "b0": 1}}}, default, ["x.yaml"])
    with pytest.raises(grid.ConfigError, match=r"^experiments\.e1\.a0: set in .* x\.yaml"):
        grid.check_alone({"seed": 2, "experiments": {"e1": {"b0": 2}}}, default, ["x.yaml"])
    with pytest.raises(grid.ConfigError, match=r"^seed: "):
        grid.check_alone({"experiments": {"e1": {"a0": 1, "b0": 1}}}, default, ["x.yaml"])


def test_a_good_config_passes_and_absent_targets_are_named():
    grid.check_config(config())
    assert grid.reference_args(config()) == "--iterations 10"
    with pytest.raises(grid.ConfigError, match=r"^experiments\.e3: not in the config"):
        grid.check_config(config(), experiments=["e3"])


@pytest.mark.parametrize("name", ["config/paper.yaml", "config/design.yaml",
                                  ".test/config/config.yaml"])
def test_other_configs_mean_the_same_merged_or_alone(name):
    """`--configfile X` extends config/config.yaml (Snakemake's merge): every key the default
    sets is set again by X, so the merged config equals X alone (--replace-workflow-config,
    which cluster jobs do not get)."""
    from snakemake.utils import validate

    other = yaml.safe_load((ROOT / name).read_text())
    grid.check_alone(other, ROOT / "config/config.yaml", [name])
    validate(other, str(ROOT / "workflow/schemas/config.schema.yaml"))
    grid.check_config(other)


def test_the_real_data_config_sets_every_enron_experiment_and_keeps_the_default_simulations():
    """config/enron.yaml extends the default: E1-E4 are its own (every key the default sets is
    set again, so nothing leaks from the offline sizes), S1-S3 and V1 are the default's, and
    M1 (semi-synthetic, this project's) is the default's, left out of ``all``."""
    from snakemake.utils import update_config, validate

    default = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    real = yaml.safe_load((ROOT / "config/enron.yaml").read_text())
    merged = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    update_config(merged, real)
    assert real["experiments"]["m1"].pop("enabled") is False
    assert real["experiments"]["m1"] == default["experiments"]["m1"]
    for exp, spec_ in merged["experiments"].items():
        want = real["experiments"][exp] if exp.startswith("e") else default["experiments"][exp]
        assert {k: v for k, v in spec_.items() if k in want} == want, exp
        if exp.startswith("e"):
            assert set(default["experiments"][exp]) <= set(want), exp
    assert merged["results"] != default["results"]
    assert "--top-actors 161" in merged["enron"]["datasets"]["network"]["args"]
    validate(merged, str(ROOT / "workflow/schemas/config.schema.yaml"))  # fills defaults
    grid.check_config(merged)


@pytest.mark.parametrize("enron, ok", [
    ({"size": 1_000, "sha256": "ab" * 32}, True),
    ({"size": None, "sha256": None}, True),
    ({"sha256": "not-a-hash"}, False),
    ({"size": 0}, False),
])
def test_the_schema_takes_the_download_checks(enron, ok):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    merged = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    merged["enron"].update(enron)
    if ok:
        validate(merged, str(ROOT / "workflow/schemas/config.schema.yaml"))
    else:
        with pytest.raises(WorkflowError):
            validate(merged, str(ROOT / "workflow/schemas/config.schema.yaml"))


def test_figure_fits_are_chosen_from_the_figure_name():
    s = spec(truth={"kind": "pmf"}, fix_truth=["phi"], privacy={"alpha": [0.1, 0.5, 0.9]},
             components=[3, 4], methods=["private", "naive", "nonprivate"])
    assert grid.figure_grid(s) == "alpha-0.5"
    assert grid.figure_grid({**s, "figure_grid": "alpha-0.9"}) == "alpha-0.9"
    posterior = grid.figure_fits("s1", s, "posterior_y")
    assert [(f["method"], f["grid"], f["fix"]) for f in posterior] == [("private", "alpha-0.5", "")]
    fixed = grid.figure_fits("s1", s, "theta_kl")
    assert {f["fix"] for f in fixed} == {"-fix-phi"} and len(fixed) == 2 * 3 + 1
    free = grid.figure_fits("s1", s, "blocks")
    assert {(f["rep"], f["K"], f["fix"]) for f in free} == {(0, 3, "")} and len(free) == 7
    assert grid.figure_fits("s1", s, "rhat") == []
    assert set(grid.FIGURE_FITS) <= {n for t in ("blocks", "community") for n in
                                     grid.figures(spec(truth={"kind": t}))} | {
        "posterior_y", "theta_kl"}


def test_the_default_config_runs_every_mcmc_fit_on_enough_chains():
    """R-hat and ESS are judged over at least 4 chains (lppf.diagnostics.MIN_CHAINS)."""
    from lppf.diagnostics import MIN_CHAINS

    default = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    for name, exp in default["experiments"].items():
        for key in ("mcmc", "fixed_mcmc"):
            if key in exp:
                assert exp[key].get("chains", 1) >= MIN_CHAINS, (name, key)


MECHANISM_PRIVACY = {"mechanisms": ["geometric", "discrete-gaussian", "skellam"],
                     "epsilon": [0.5, 2], "delta": 1e-6, "precision": 1, "variance": [4]}


def test_a_mechanism_grid_crosses_mechanisms_with_matched_levels():
    from lppf.mechanisms import noise_variance, privacy

    s = spec(privacy=MECHANISM_PRIVACY, methods=["private-collapsed", "naive"])
    points = grid.grids(s)
    assert len(points) == 3 * 3 and points["skellam-eps-0.5"] == ("epsilon", 0.5)
    assert points["discrete-gaussian-var-4"] == ("variance", 4)
    assert [grid.mechanism_of(p) for p in points][::3] == MECHANISM_PRIVACY["mechanisms"]
    assert grid.mechanism_of("alpha-0.5") == "geometric"
    assert grid.figures(s) == ["mechanisms", "rhat"]
    for point, (kind, value) in points.items():
        labels = grid.grid_labels(s, point)
        mechanism, param = labels["mechanism"], labels["noise_param"]
        assert labels["match"] == kind and labels[kind] == value
        if kind == "variance":  # the same variance under every mechanism
            assert noise_variance(mechanism, param) == pytest.approx(4, rel=1e-6)
        else:  # the same (epsilon, delta) at precision 1
            assert privacy(mechanism, param, 1, 1e-6)["epsilon"] == pytest.approx(value, 1e-6)
            assert labels["delta"] == 1e-6 and labels["precision"] == 1
    assert grid.noise_args(s, "geometric-eps-2") == (
        "--mechanism geometric --epsilon 2 --precision 1", "")
    assert grid.noise_args(s, "skellam-eps-0.5") == (
        "--mechanism skellam --epsilon 0.5 --precision 1 --delta 1e-06", "")
    assert grid.noise_args(s, "skellam-var-4") == ("--mechanism skellam --mu 2.0", "")
    grid.check_config(config(privacy=MECHANISM_PRIVACY))


@pytest.mark.parametrize("privacy", [
    {**MECHANISM_PRIVACY, "alpha": [0.5]},
    {"mechanisms": ["skellam"]},
    {"alpha": [0.5], "epsilon": [1.0]},
    {**MECHANISM_PRIVACY, "mechanisms": ["skellam", "skellam"]},
    {**MECHANISM_PRIVACY, "variance": [4, 4.0000001]},
])
def test_a_mechanism_grid_is_one_grid(privacy):
    with pytest.raises(grid.ConfigError) as info:
        grid.check_config(config(privacy=privacy))
    assert str(info.value).startswith("experiments.e1.privacy")
