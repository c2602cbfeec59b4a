"""``lppf fit``: happy paths, error paths, thread-count reproducibility."""

import json
import subprocess
import sys

import numpy as np
import pytest

from lppf.cli import main

FAST = ["--components", "2", "--iterations", "12", "--burnin", "4", "--thin", "4", "--quiet"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("fit")
    rng = np.random.default_rng(0)
    Y = rng.poisson(rng.gamma(1.0, 1.0, (70, 2)) @ rng.gamma(1.0, 1.0, (2, 15)))
    np.savez(d / "true.npz", Y=Y)
    np.savez(d / "private.npz", Y_noisy=Y + rng.integers(-2, 3, Y.shape), alpha=np.array(0.5))
    np.save(d / "mask.npy", rng.random(Y.shape) < 0.1)
    np.save(d / "phi.npy", rng.gamma(1.0, 1.0, (2, 15)))
    return d


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("method", "source"), [("private", "private.npz"),
                                                ("naive", "private.npz"),
                                                ("nonprivate", "true.npz")])
def test_fit_writes_the_npz(inputs, capsys, method, source):
    out = inputs / f"fit-{method}.npz"
    code, err = run(capsys, "fit", inputs / source, out, "--method", method, "--seed", 3,
                    "--mask", inputs / "mask.npy", "--fix-phi", inputs / "phi.npy", *FAST)
    assert code == 0, err
    assert err.startswith("lppf fit: numba threads = ")
    assert "cpus available=" in err.splitlines()[0]
    with np.load(out) as z:
        config = json.loads(str(z["config"]))
        assert z["mu_hat"].shape == (70, 15) and z["theta_samples"].shape == (2, 70, 2)
        np.testing.assert_array_equal(z["phi"], np.load(inputs / "phi.npy"))
    assert config["method"] == method and config["seed"] == 3 and config["max_iter"] == 12
    assert config["input"] == str(inputs / source) and config["numba_threads"] >= 1


def test_same_output_for_one_and_two_threads(inputs, capsys):
    fits = []
    for n in (1, 2):
        out = inputs / f"threads{n}.npz"
        code, err = run(capsys, "fit", inputs / "private.npz", out, "--seed", 5,
                        "--threads", n, "--method", "private-collapsed", *FAST)
        assert code == 0, err
        assert f"numba threads = {n} " in err
        fits.append(dict(np.load(out)))
    for key in ("mu_hat", "y_hat", "theta_samples", "phi_samples", "log_joint", "trace_loglik"):
        np.testing.assert_array_equal(fits[0][key], fits[1][key])
    assert json.loads(str(fits[1]["config"]))["threads"] == 2


ERRORS = [
    (["true.npz", "--method", "private"], "true.npz: method 'private' needs privatized counts "
                                          "under key 'Y_noisy'"),
    (["private.npz", "--method", "nonprivate"], "private.npz: method 'nonprivate' needs the "
                                                "true counts under key 'Y'"),
    (["missing.npz"], "missing.npz: no such file"),
    (["private.npz", "--mask", "nope.npy"], "nope.npy: no such file (--mask)"),
    (["private.npz", "--mask", "private.npz"], "private.npz: not a readable .npy file"),
    (["private.npz", "--fix-pi", "phi.npy"], "fix: unknown factor 'pi'"),
    (["private.npz", "--fix-phi", "mask.npy"],
     "mask.npy: fix['phi']: expected numbers (real, not bool"),
    (["private.npz", "--mask", "phi.npy"], "phi.npy: mask: expected a boolean"),
    (["private.npz", "--threads", "0"], "--threads must be >= 1"),
    (["private.npz", "--burnin", "12"], "--iterations (12) must exceed --burnin (12)"),
]


@pytest.mark.parametrize(("args", "message"), ERRORS)
def test_bad_input_exits_2_with_one_line(inputs, capsys, args, message):
    args = [inputs / a if a.endswith((".npz", ".npy")) else a for a in args]
    code, err = run(capsys, "fit", *args[:1], inputs / "never.npz", *FAST, *args[1:])
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("lppf: error: ") and message in last, err
    assert not (inputs / "never.npz").exists()


def test_entry_point_runs(inputs):
    out = inputs / "entry.npz"
    result = subprocess.run([sys.executable, "-m", "lppf", "fit", inputs / "true.npz", out,
                             "--method", "nonprivate", "--seed", "1", *FAST],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("lppf fit: numba threads = ")
    with np.load(out) as z:  # complete although the collector was frozen at exit
        assert z["mu_hat"].shape == (70, 15) and int(z["iterations"]) == 12


def test_console_script_is_the_entry_point_that_freezes_the_collector():
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="lppf")
    assert script.value == "lppf.cli:run"


def test_chains_idata_and_rhat_warning(inputs, capsys, tmp_path):
    out, nc = tmp_path / "fit.npz", tmp_path / "fit.nc"
    code, err = run(capsys, "fit", inputs / "private.npz", out, "--chains", 3, "--seed", 1,
                    "--idata", nc, *FAST, "--iterations", 24)
    assert code == 0, err
    with np.load(out) as z:
        assert int(z["extra_n_chains"]) == 3 and z["theta_samples"].shape == (15, 70, 2)
        assert z["trace_loglik"].shape == (3, 24) and z["diag_rhat_mu"].shape == (16,)
    # 3 chains miss the criterion, whatever their R-hat: one line names why
    (line,) = [x for x in err.splitlines() if "not converged" in x]
    assert line.startswith(f"lppf fit: {out}: warning: not converged: 3 chains < 4")
    import xarray

    with xarray.open_dataset(nc, group="posterior") as posterior:
        assert posterior["theta"].shape == (3, 5, 70, 2)


def test_extend_runs_on_and_records_the_schedule_run(inputs, capsys, tmp_path):
    out = tmp_path / "fit.npz"
    code, err = run(capsys, "fit", inputs / "private.npz", out, "--chains", 4, "--seed", 1,
                    *FAST, "--iterations", 24, "--extend", 1)
    assert code == 0, err
    with np.load(out) as z:
        config = json.loads(str(z["config"]))
        n_iter, burnin, thin = (int(z[k]) for k in ("iterations", "extra_burnin", "extra_thin"))
        assert int(z["extra_extended"]) == 1 and n_iter == z["trace_loglik"].shape[1]
        assert n_iter - burnin == 2 * (24 - config["burnin"]) and thin == 2 * config["thin"]


def test_the_warning_names_the_diagnostic_its_value_and_the_cell(inputs, capsys, tmp_path):
    out = tmp_path / "fit.npz"
    code, err = run(capsys, "fit", inputs / "private.npz", out, "--chains", 4, "--seed", 1,
                    *FAST, "--iterations", 24)
    assert code == 0, err
    from lppf.diagnostics import convergence_problem

    with np.load(out) as z:
        diagnostics = {k[5:]: z[k] for k in z.files if k.startswith("diag_")}
    problem = convergence_problem(diagnostics, 4)
    assert problem is not None and (problem.startswith("R-hat") or problem.startswith("bulk ESS"))
    (line,) = [x for x in err.splitlines() if "not converged" in x]
    assert f"not converged: {problem} (criterion:" in line


@pytest.mark.parametrize("inference", ["mcmc", "cavi"])
def test_fit_imports_neither_sklearn_nor_arviz(inputs, tmp_path, inference):
    """Every workflow job is an ``lppf fit`` process: its start-up does not pay for
    scikit-learn or ArviZ (with pandas, xarray and matplotlib), scipy.stats (0.7 s),
    scipy.optimize, joblib, nor tqdm when no progress is shown."""
    argv = ["fit", str(inputs / "private.npz"), str(tmp_path / "fit.npz"), "--seed", "1",
            "--inference", inference, *FAST]
    code = ("import sys; from lppf.cli import main; "
            f"assert main({argv!r}) == 0; "
            "heavy = {'sklearn', 'arviz', 'pandas', 'xarray', 'matplotlib', 'scipy.stats', "
            "'scipy.optimize', 'joblib', 'tqdm'} & set(sys.modules); "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)
    if inference == "mcmc":
        assert np.load(tmp_path / "fit.npz")["diag_rhat_loglik"].shape == ()


@pytest.mark.parametrize("model", ["pmf", "community"])
@pytest.mark.parametrize("method", ["private", "private-collapsed"])
def test_private_mcmc_fit_imports_neither_scipy_special_nor_fft(tmp_path, model, method):
    """A private MCMC fit loads numba kernels only: scipy.special and scipy.fft (about 0.1 s
    of a 1 s job) are imported by the functions that need them, none of which it calls."""
    rng = np.random.default_rng(3)
    Y = rng.poisson(2.0, (12, 12))
    np.savez(tmp_path / "in.npz", Y_noisy=Y + rng.integers(-2, 3, Y.shape), alpha=np.array(0.5))
    argv = ["fit", str(tmp_path / "in.npz"), str(tmp_path / "fit.npz"), "--model", model,
            "--method", method, "--seed", "1", *FAST]
    code = ("import sys; from lppf.cli import main; "
            f"assert main({argv!r}) == 0; "
            "loaded = {'scipy.special', 'scipy.fft'} & set(sys.modules); "
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("model", "inference"), [("pmf", "mcmc"), ("community", "cavi")])
def test_fit_equals_the_estimator_bit_for_bit(tmp_path, capsys, model, inference):
    """``lppf fit`` and the estimators run one fit function (lppf.fitting) with one set of
    defaults: same seed, same arrays."""
    from lppf.estimators import CommunityModel, PoissonMF

    rng = np.random.default_rng(5)
    Y = rng.poisson(2.0, (12, 12)) + rng.integers(-2, 3, (12, 12))
    np.savez(tmp_path / "private.npz", Y_noisy=Y, alpha=np.array(0.5))
    code, err = run(capsys, "fit", tmp_path / "private.npz", tmp_path / "fit.npz", "--model",
                    model, "--inference", inference, "--seed", 7, *FAST)
    assert code == 0, err
    cli = np.load(tmp_path / "fit.npz")
    est = {"pmf": PoissonMF, "community": CommunityModel}[model](
        2, inference=inference, max_iter=12, burnin=4, thin=4, random_state=7)
    api = est.fit(Y, alpha=0.5).to_arrays(input_path=tmp_path / "private.npz")
    assert set(cli) == set(api)
    for key in set(api) - {"config"} - {k for k in api if k.startswith("elapsed")}:
        np.testing.assert_array_equal(cli[key], api[key], err_msg=key)
    assert json.loads(str(cli["config"])) == json.loads(str(api["config"]))
