"""lppf fit on files released with the discrete Gaussian or Skellam mechanism."""

import json

import numpy as np
import pytest

from lppf.cli import main

FIT = ["--components", "2", "--iterations", "30", "--burnin", "10", "--thin", "5", "--seed",
       "0", "--quiet", "--method", "private-collapsed"]


@pytest.fixture
def counts(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "y.npz"
    np.savez(path, Y=rng.poisson(rng.gamma(0.5, 2.0, (12, 2)) @ rng.gamma(0.5, 2.0, (2, 9))))
    return path


def config_of(path):
    with np.load(path) as z:
        return json.loads(str(z["config"])), z["alpha"]


@pytest.mark.parametrize(("mechanism", "option", "value"),
                         [("skellam", "--mu", "2.5"), ("discrete-gaussian", "--sigma", "1.5")])
def test_fit_reads_the_mechanism_from_the_file(counts, tmp_path, mechanism, option, value):
    released = tmp_path / "r.npz"
    assert main(["privatize", str(counts), str(released), "--mechanism", mechanism, option,
                 value, "--seed", "3"]) == 0
    for inference in ("mcmc", "cavi"):
        out = tmp_path / f"{inference}.npz"
        extra = [] if inference == "mcmc" else ["--inference", "cavi"]
        args = [a for a in FIT if inference == "mcmc" or a not in ("--burnin", "10",
                                                                   "--thin", "5")]
        assert main(["fit", str(released), str(out), *args, *extra]) == 0
        config, param = config_of(out)
        assert config["mechanism"] == mechanism and np.all(param == float(value))


def test_flags_for_files_released_elsewhere(counts, tmp_path, capsys):
    released = tmp_path / "r.npz"
    assert main(["privatize", str(counts), str(released), "--mechanism", "discrete-gaussian",
                 "--sigma", "2", "--seed", "3"]) == 0
    with np.load(released) as z:
        table = tmp_path / "r.csv"
        np.savetxt(table, z["Y_noisy"], fmt="%d", delimiter=",")
        np.savez(tmp_path / "bare.npz", Y_noisy=z["Y_noisy"])
    assert main(["fit", str(table), str(tmp_path / "a.npz"), *FIT, "--sigma", "2"]) == 0
    assert config_of(tmp_path / "a.npz")[0]["mechanism"] == "discrete-gaussian"
    assert main(["fit", str(tmp_path / "bare.npz"), str(tmp_path / "b.npz"), *FIT,
                 "--mechanism", "skellam", "--mu", "2"]) == 0
    assert config_of(tmp_path / "b.npz")[0]["mechanism"] == "skellam"
    capsys.readouterr()
    for argv, message in [
            ([str(released), "--mu", "2"], "was released with the discrete-gaussian mechanism"),
            ([str(released), "--sigma", "2"], "carries its noise level (key 'sigma')"),
            ([str(table), "--mechanism", "skellam", "--sigma", "2"], "different mechanisms"),
            ([str(tmp_path / "bare.npz"), "--mechanism", "skellam"], "missing key 'mu'")]:
        assert main(["fit", argv[0], str(tmp_path / "x.npz"), *FIT, *argv[1:]]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "x.npz").exists()
    assert main(["fit", str(released), str(tmp_path / "x.npz"), *FIT[:-1], "private"]) == 2
    assert "needs the geometric mechanism" in capsys.readouterr().err


def test_transform_takes_the_noise_of_the_fit(counts, tmp_path, capsys):
    released, fit = tmp_path / "r.npz", tmp_path / "f.npz"
    assert main(["privatize", str(counts), str(released), "--mechanism", "skellam", "--mu",
                 "1.5", "--seed", "3"]) == 0
    assert main(["fit", str(released), str(fit), "--method", "private-collapsed", "--inference",
                 "cavi", "--components", "2", "--seed", "0", "--quiet"]) == 0
    assert main(["transform", str(fit), str(released), str(tmp_path / "t.npz")]) == 0
    with np.load(tmp_path / "t.npz") as z:
        assert z["theta"].shape == (12, 2)
    capsys.readouterr()
    assert main(["transform", str(fit), str(released), str(tmp_path / "u.npz"), "--sigma",
                 "1"]) == 2
    assert "the fit is to a skellam release" in capsys.readouterr().err


def test_evaluate_covers_with_the_noise_of_the_release(counts, tmp_path):
    released, fit = tmp_path / "r.npz", tmp_path / "f.npz"
    assert main(["privatize", str(counts), str(released), "--mechanism", "discrete-gaussian",
                 "--sigma", "1.5", "--seed", "3"]) == 0
    assert main(["fit", str(released), str(fit), *FIT]) == 0
    out = tmp_path / "m.json"
    assert main(["evaluate", str(fit), str(out), "--truth", str(counts), "--model", "pmf",
                 "--privatized", str(released)]) == 0
    assert 0.5 < json.loads(out.read_text())["coverage90"] <= 1.0
