"""Saved fits, the noise level remembered, users' own data and names, options that apply."""

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV

from lppf.cli import main
from lppf.estimators import CommunityModel, PoissonMF, load
from lppf.mechanisms import privatize
from lppf.validation import InputError

FAST = {"max_iter": 12, "burnin": 4, "thin": 4, "random_state": 0}
CLI_FAST = ["--components", "2", "--iterations", "12", "--burnin", "4", "--thin", "4",
            "--quiet", "--seed", "1"]


@pytest.fixture(scope="module")
def noisy():
    rng = np.random.default_rng(0)
    Y = rng.poisson(rng.gamma(1.0, 1.0, (24, 2)) @ rng.gamma(1.0, 1.0, (2, 10)))
    return privatize(Y, 0.5, rng=1)


def _same(a, b):
    x, y = a.to_arrays(), b.to_arrays()
    assert set(x) == set(y)
    for key in x:
        np.testing.assert_array_equal(x[key], y[key], err_msg=key)


@pytest.mark.parametrize(("cls", "kwargs"), [(PoissonMF, {"method": "private"}),
                                             (CommunityModel, {"inference": "cavi"})])
def test_load_round_trips_a_fitted_estimator(cls, kwargs, noisy, tmp_path):
    Y = noisy[:10, :10] if cls is CommunityModel else noisy
    model = cls(2, **kwargs, **FAST).fit(Y, alpha=0.5)
    model.save(tmp_path / "fit.npz")
    again = cls.load(tmp_path / "fit.npz")
    _same(model, again)
    assert again.get_params() == model.get_params() and again.n_features_in_ == Y.shape[1]
    assert type(load(tmp_path / "fit.npz")) is cls
    np.testing.assert_array_equal(again.transform(Y[:3]), model.transform(Y[:3]))
    assert again.score(Y[:4]) == model.score(Y[:4])
    other = PoissonMF if cls is CommunityModel else CommunityModel
    with pytest.raises(InputError, match=r"fit.npz: a .* fit, not"):
        other.load(tmp_path / "fit.npz")
    with pytest.raises(InputError, match="not a fit file"):
        np.savez(tmp_path / "other.npz", Y=Y)
        load(tmp_path / "other.npz")


def test_alpha_given_at_fit_is_remembered(noisy):
    model = PoissonMF(2, **FAST).fit(noisy, alpha=0.5)
    np.testing.assert_array_equal(model.transform(noisy[:3]),
                                  model.transform(noisy[:3], alpha=0.5))
    assert model.score(noisy[:4]) == model.score(noisy[:4], alpha=0.5)
    assert model.score(noisy[:4], alpha=0.9) != model.score(noisy[:4])
    rows = PoissonMF(2, **FAST).fit(noisy, alpha=np.full(len(noisy), 0.5))
    with pytest.raises(InputError, match="one value per fitted row"):
        rows.transform(noisy[:3])


def test_positional_alpha_is_refused_clearly(noisy):
    with pytest.raises(InputError, match=r"fit\(Y, alpha=0.5\)"):
        PoissonMF(2, **FAST).fit(noisy, 0.5)


def test_search_without_routing_scores_with_the_fitted_alpha(noisy):
    search = GridSearchCV(PoissonMF(2, inference="cavi", **FAST), {"n_components": [1, 2]},
                          cv=2).fit(noisy, alpha=0.5)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all()
    best = PoissonMF(search.best_params_["n_components"], inference="cavi", **FAST)
    assert best.get_params()["n_components"] in (1, 2)


def test_dataframe_names_reach_the_fit_file_and_top_words(noisy, tmp_path):
    words = [f"w{j}" for j in range(noisy.shape[1])]
    frame = pd.DataFrame(noisy, index=[f"d{i}" for i in range(len(noisy))], columns=words)
    model = PoissonMF(2, **FAST).fit(frame, alpha=0.5)
    assert list(model.feature_names_in_) == words and model.row_names_[0] == "d0"
    top = model.top_words(3)
    assert len(top) == 2 and all(len(t) == 3 and set(t) <= set(words) for t in top)
    for k, t in enumerate(top):  # largest weight first
        weights = model.components_[k, [words.index(w) for w in t]]
        assert (np.diff(weights) <= 0).all() and weights[0] == model.components_[k].max()
    model.save(tmp_path / "fit.npz")
    with np.load(tmp_path / "fit.npz") as z:
        assert list(z["columns"]) == words and z["rows"][1] == "d1"
    assert PoissonMF.load(tmp_path / "fit.npz").top_words(3) == top
    assert PoissonMF(2, **FAST).fit(noisy, alpha=0.5).top_words(1)[0][0].isdigit()


def test_fixed_factors_beyond_the_count_range_are_refused(noisy):
    with pytest.raises(InputError, match="below 2\\*\\*31"):
        PoissonMF(2, **FAST).fit(noisy, alpha=0.5, fix={"phi": np.full((2, 10), 1e300)})
    with pytest.raises(InputError, match="n_chains must be at most 1000"):
        PoissonMF(2, n_chains=100_000, **FAST).fit(noisy, alpha=0.5)


# --- the command line


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def files(noisy, tmp_path):
    header = ",".join(["doc", *(f"w{j}" for j in range(noisy.shape[1]))])
    body = "\n".join(f"d{i}," + ",".join(map(str, row)) for i, row in enumerate(noisy))
    (tmp_path / "noisy.csv").write_text(f"{header}\n{body}\n")
    (tmp_path / "plain.tsv").write_text("\n".join("\t".join(map(str, r)) for r in noisy))
    scipy.io.mmwrite(tmp_path / "true.mtx", sp.coo_matrix(np.abs(noisy)))
    return tmp_path


@pytest.mark.parametrize("noise", [["--alpha", "0.5"], ["--epsilon", "0.693147", "--precision",
                                                        "1"]])
def test_a_csv_fits_with_the_noise_level_on_the_command_line(noise, noisy, files, capsys):
    code, _, err = run(capsys, "fit", files / "noisy.csv", files / "fit.npz", *CLI_FAST, *noise)
    assert code == 0, err
    model = PoissonMF.load(files / "fit.npz")
    assert model.alpha_.item() == pytest.approx(0.5, rel=1e-6)
    assert list(model.feature_names_in_)[:2] == ["w0", "w1"] and model.row_names_[0] == "d0"
    code, out, err = run(capsys, "topics", files / "fit.npz", "-n", "3")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("0: w") and len(lines[0].split()) == 4
    code, _, err = run(capsys, "transform", files / "fit.npz", files / "noisy.csv",
                       files / "theta.npz")
    assert code == 0, err
    with np.load(files / "theta.npz") as z:
        frame = pd.DataFrame(noisy, columns=model.feature_names_in_)
        np.testing.assert_array_equal(z["theta"], model.transform(frame))
        assert z["theta"].shape == (24, 2) and z["rows"][0] == "d0"


def test_tables_and_matrix_market_inputs(files, capsys):
    code, _, err = run(capsys, "fit", files / "plain.tsv", files / "a.npz", *CLI_FAST,
                       "--alpha", "0.5", "--inference", "cavi")
    assert code == 0, err
    code, _, err = run(capsys, "fit", files / "true.mtx", files / "b.npz", *CLI_FAST,
                       "--method", "nonprivate")
    assert code == 0, err
    code, _, err = run(capsys, "privatize", files / "true.mtx", files / "c.npz", "--alpha",
                       "0.5")
    assert code == 0, err
    with np.load(files / "c.npz") as z:
        assert z["Y_noisy"].shape == (24, 10)


OPTION_ERRORS = [
    (["noisy.csv"], "noisy.csv: carries no noise level; give --alpha"),
    (["noisy.csv", "--alpha", "0.5", "--epsilon", "1", "--precision", "1"], "not both"),
    (["noisy.csv", "--alpha", "0.5", "--inference", "cavi", "--chains", "2"],
     "--chains applies to --inference mcmc only"),
    (["noisy.csv", "--alpha", "0.5", "--inference", "cavi", "--idata", "x.nc"],
     "--idata applies to --inference mcmc only"),
    (["noisy.csv", "--alpha", "0.5", "--tol", "0.1"], "--tol applies to --inference cavi"),
    (["noisy.csv", "--alpha", "0.5", "--inference", "cavi", "--sampler", "gibbs"],
     "--sampler applies to --inference mcmc only"),
    (["noisy.csv", "--alpha", "0.5", "--sampler", "hmc"],
     "--sampler: sampler 'hmc' applies to the community model only, not 'pmf'"),
    (["noisy.csv", "--alpha", "0.5", "--restarts", "2"], "--restarts applies to --inference"),
    (["noisy.csv", "--alpha", "0.5", "--components", "11"],
     "--components 11 exceeds the smaller side of the 24 x 10 counts"),
    (["noisy.csv", "--alpha", "0.5", "--idata", "noisy.csv"], "the same file as"),
    (["noisy.csv", "--alpha", "0.5", "--idata", "."], "is a directory"),
    (["noisy.csv", "--alpha", "0.5", "--chains", "100000"], "--chains must be at most 1000"),
    (["true.mtx", "--alpha", "0.5", "--method", "nonprivate"], "method 'nonprivate' fits true"),
]


@pytest.mark.parametrize(("args", "message"), OPTION_ERRORS)
def test_options_that_do_not_apply_are_refused_before_any_work(args, message, files, capsys):
    args = [files / a if a.endswith((".csv", ".mtx", ".nc")) or a == "." else a for a in args]
    code, _, err = run(capsys, "fit", args[0], files / "out.npz", *CLI_FAST, *args[1:])
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert "numba threads" not in err  # nothing started
    assert not (files / "out.npz").exists() and not (files / "x.nc").exists()


def test_idata_is_written_with_the_fit(files, capsys):
    code, _, err = run(capsys, "fit", files / "noisy.csv", files / "f.npz", *CLI_FAST,
                       "--alpha", "0.5", "--idata", files / "f.nc")
    assert code == 0, err
    assert (files / "f.nc").stat().st_size > 0 and not list(files.glob(".f.nc.*"))


@pytest.mark.parametrize("model", ["pmf", "community"])
def test_the_command_line_fit_file_loads_back_whole(model, noisy, tmp_path, capsys):
    import json

    Y = noisy[:10, :10]
    np.savez(tmp_path / "in.npz", Y_noisy=Y, alpha=np.array(0.5))
    code, _, err = run(capsys, "fit", tmp_path / "in.npz", tmp_path / "fit.npz", "--model",
                       model, *CLI_FAST)
    assert code == 0, err
    saved = dict(np.load(tmp_path / "fit.npz"))
    fitted = load(tmp_path / "fit.npz")
    arrays = fitted.to_arrays(input_path=tmp_path / "in.npz")
    assert set(arrays) == set(saved)
    for key in set(saved) - {"config"}:
        np.testing.assert_array_equal(arrays[key], saved[key], err_msg=key)
    assert json.loads(str(arrays["config"])) == json.loads(str(saved["config"]))
    assert fitted.transform(Y[:2]).shape == (2, 2)
