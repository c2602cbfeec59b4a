"""``lppf privatize``: happy paths and every bad-input path."""

import math
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from lppf.cli import main

Y = np.arange(24).reshape(4, 6) % 5


@pytest.fixture
def counts(tmp_path):
    path = tmp_path / "counts.npz"
    np.savez(path, Y=Y)
    return path


def run_ok(*argv):
    assert main([str(a) for a in argv]) == 0
    with np.load(argv[2]) as z:
        return {k: z[k] for k in z.files}


def test_seeded_output_is_reproducible_and_hides_the_counts(counts, tmp_path):
    first = run_ok("privatize", counts, tmp_path / "a.npz", "--alpha", "0.6", "--seed", "5")
    again = run_ok("privatize", counts, tmp_path / "b.npz", "--alpha", "0.6", "--seed", "5")
    other = run_ok("privatize", counts, tmp_path / "c.npz", "--alpha", "0.6", "--seed", "6")
    assert set(first) == {"Y_noisy", "mechanism", "alpha", "noise"}  # the seed stays hidden
    assert first["Y_noisy"].dtype == np.int64 and first["Y_noisy"].shape == Y.shape
    np.testing.assert_array_equal(first["Y_noisy"], again["Y_noisy"])
    assert not np.array_equal(first["Y_noisy"], other["Y_noisy"])
    assert first["alpha"] == 0.6 and str(first["noise"]) == "seeded"


def test_epsilon_and_precision_are_stored(counts, tmp_path):
    out = run_ok("privatize", counts, tmp_path / "o.npz", "--epsilon", "1", "--precision", "10",
                 "--seed", "1")
    assert out["epsilon"] == 1.0 and out["precision"] == 10.0
    assert out["alpha"] == pytest.approx(math.exp(-0.1))
    assert "Y" not in out


def test_sparse_input_and_per_row_alpha_file(tmp_path):
    sp.save_npz(tmp_path / "sparse.npz", sp.csr_matrix(Y))
    np.save(tmp_path / "alpha.npy", np.array([0.0, 0.5, 0.0, 0.9]))
    out = run_ok("privatize", tmp_path / "sparse.npz", tmp_path / "o.npz",
                 "--alpha", tmp_path / "alpha.npy", "--seed", "3")
    np.testing.assert_array_equal(out["Y_noisy"][[0, 2]], Y[[0, 2]])
    assert out["alpha"].shape == (4, 1)


@pytest.mark.parametrize("secure", [[], ["--secure"]])
def test_secure_by_default_with_a_privacy_statement(secure, counts, tmp_path, capsys):
    out = run_ok("privatize", counts, tmp_path / "o.npz", "--epsilon", "2", "--precision", "4",
                 *secure)
    assert set(out) == {"Y_noisy", "mechanism", "alpha", "noise", "epsilon", "precision"}
    assert str(out["noise"]) == "secure" and out["Y_noisy"].dtype == np.int64
    err = capsys.readouterr().err
    assert "local privacy for every cell: epsilon = 2 at precision N = 4" in err
    assert "noise secure" in err


def test_a_seeded_release_cannot_be_regenerated_from_the_file(counts, tmp_path):
    """Nothing in the file regenerates the noise: no seed under any key."""
    out = run_ok("privatize", counts, tmp_path / "o.npz", "--alpha", "0.6", "--seed", "5")
    for value in out.values():
        if value.dtype.kind in "iu" and value.size == 1:
            assert int(value) != 5


def test_tables_with_names_travel_to_the_release(tmp_path):
    (tmp_path / "c.csv").write_text("doc,w1,w2\nd1,1,2\nd2,0,4\n")
    out = run_ok("privatize", tmp_path / "c.csv", tmp_path / "o.npz", "--alpha", "0.5")
    assert out["Y_noisy"].shape == (2, 2)
    assert list(out["rows"]) == ["d1", "d2"] and list(out["columns"]) == ["w1", "w2"]


def test_console_script_reports_one_line_errors(counts, tmp_path):
    target = tmp_path / "o.npz"
    result = subprocess.run(
        [sys.executable, "-m", "lppf", "privatize", str(counts), str(target), "--alpha", "2"],
        capture_output=True, text=True,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "lppf: error: --alpha must lie in [0, 1), got 2.0"
    assert not target.exists()


def _write_inputs(tmp_path):
    np.savez(tmp_path / "negative.npz", Y=-Y)
    np.savez(tmp_path / "fraction.npz", Y=Y + 0.5)
    np.savez(tmp_path / "nan.npz", Y=np.where(Y > 2, np.nan, Y))
    np.savez(tmp_path / "nokey.npz", X=Y)
    np.save(tmp_path / "short.npy", np.full(3, 0.5))
    np.save(tmp_path / "high.npy", np.full(Y.shape, 1.0))
    (tmp_path / "garbage.npz").write_bytes(b"not a zip archive")
    (tmp_path / "garbage.npy").write_bytes(b"not an array")
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    crafted = sp.csr_matrix((np.array([1, 2]), np.array([0, 10**9]), np.array([0, 1, 2, 2])),
                            shape=(3, 3))  # a column index far outside the matrix
    sp.save_npz(tmp_path / "crafted.npz", crafted)


BAD = [
    (["--alpha", "1.5"], r"--alpha must lie in \[0, 1\), got 1.5"),
    (["--alpha", "-0.1"], r"--alpha must lie in \[0, 1\), got -0.1"),
    (["--alpha", "nan"], r"--alpha must lie in \[0, 1\), got nan"),
    (["--alpha", "lots"], "--alpha: 'lots' is neither a number nor a file"),
    (["--alpha", "{d}/short.npy"], r"--alpha .*short.npy: shape \(3, 1\) does not match"),
    (["--alpha", "{d}/high.npy"], r"--alpha .*high.npy must lie in \[0, 1\), got 1.0"),
    (["--alpha", "{d}/garbage.npy"], "garbage.npy: not a readable .npy file"),
    (["--alpha", "0.5", "--epsilon", "1", "--precision", "2"], "exactly one of --alpha or"),
    ([], "exactly one of --alpha or --epsilon"),
    (["--epsilon", "1"], "--epsilon and --precision go together"),
    (["--alpha", "0.5", "--precision", "3"], "--epsilon and --precision go together"),
    (["--epsilon", "0", "--precision", "3"], "epsilon must be finite and > 0, got 0.0"),
    (["--epsilon", "1", "--precision", "-2"], r"precision must be finite and > 0, got -2.0"),
    (["--epsilon", "one", "--precision", "2"], "--epsilon: expected a number, got 'one'"),
    (["--alpha", "0.5", "--seed", "x"], "--seed: expected a number, got 'x'"),
    (["--alpha", "0.5", "--seed", "-3"], "--seed must be >= 0, got -3"),
    (["--alpha", "0.5", "--seed", "1", "--secure"], "--secure noise cannot be seeded"),
    (["--alpha", str(1 - 1e-16)], r"--alpha = 0.9999999999999999 is too close to 1"),
    (["--epsilon", "1e-9", "--precision", "1"], "alpha = exp.* is too close to 1"),
]
BAD_FILES = [
    ("negative.npz", "negative.npz: key 'Y': contains negative counts"),
    ("fraction.npz", "fraction.npz: key 'Y': contains non-integer values"),
    ("nan.npz", "nan.npz: key 'Y': contains NaN"),
    ("nokey.npz", r"nokey.npz: missing key 'Y' \(found: X\)"),
    ("garbage.npz", "garbage.npz: not a readable .npz file"),
    ("absent.npz", "absent.npz: no such file"),
    ("crafted.npz", r"crafted.npz: not a valid sparse matrix \(ValueError: indices must be"),
    ("bad.csv", "bad.csv: row 2, column 2: expected a count, got 'x'"),
]


@pytest.mark.parametrize(("options", "message"), BAD)
def test_bad_options_fail_with_one_line(options, message, counts, tmp_path, capsys):
    _expect_error(["privatize", str(counts)], options, message, tmp_path, capsys)


@pytest.mark.parametrize(("name", "message"), BAD_FILES)
def test_bad_input_files_fail_with_one_line(name, message, tmp_path, capsys):
    _expect_error(["privatize", str(tmp_path / name)], ["--alpha", "0.5"], message, tmp_path,
                  capsys)


def _expect_error(head, options, message, tmp_path, capsys):
    _write_inputs(tmp_path)
    target = tmp_path / "out" / "noisy.npz"
    target.parent.mkdir()
    argv = [*head, str(target), *(o.format(d=tmp_path) for o in options)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lppf: error: "), err
    assert re.search(message, err), err
    assert not target.exists()
    assert not target.parent.exists() or not any(target.parent.iterdir())
