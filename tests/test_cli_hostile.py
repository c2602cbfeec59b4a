"""Hostile input to every sub-command: the promise is exit status 2, one line
``lppf: error: ...`` naming the file, option or value at fault, and nothing written.

Explicit cases cover each kind of damage (files, options, degenerate problems, output
paths, Enron sources); hypothesis then throws damaged archives, arbitrary arrays and arbitrary
option values at the commands. ``python tests/test_cli_hostile.py`` counts how many of the
explicit cases, plus a sample of damaged archives, keep the promise (with whatever ``lppf`` is
importable).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FAST = ["--components", "2", "--iterations", "6", "--burnin", "2", "--thin", "2", "--quiet"]
MAIL = "From: {0}@x.com\nTo: {1}@x.com\nDate: Mon, 1 Jan 2001 00:00:{2:02d} +0000\n\nhi {2}\n"


def make_inputs(d: Path) -> Path:
    """Valid inputs of every command, and damaged variants, under ``d``."""
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    Y = rng.poisson(2.0, (8, 8))
    np.fill_diagonal(Y, 0)
    np.savez(d / "true.npz", Y=Y, mu=np.full(Y.shape, 2.0))
    np.savez(d / "private.npz", Y_noisy=Y + rng.integers(-2, 3, Y.shape), alpha=np.array(0.5))
    np.save(d / "mask.npy", rng.random(Y.shape) < 0.2)
    np.save(d / "phi.npy", rng.gamma(1.0, 1.0, (2, 8)))
    theta, phi = rng.gamma(1.0, 1.0, (8, 2)), rng.gamma(1.0, 1.0, (2, 8))
    np.savez(d / "fit.npz", mu_hat=theta @ phi, theta=theta, phi=phi,
             theta_samples=theta[None], phi_samples=phi[None], seed=np.int64(0))
    good = (d / "true.npz").read_bytes()
    (d / "cut.npz").write_bytes(good[: len(good) // 2])
    np.savez_compressed(d / "zipped.npz", Y=Y)
    flipped = bytearray((d / "zipped.npz").read_bytes())
    for i in range(40, 60):
        flipped[i] ^= 0xFF
    (d / "flipped.npz").write_bytes(bytes(flipped))
    bad_Y = {
        "object": np.array([[1, None], [2, 3]], dtype=object),
        "strings": np.array([["a", "b"], ["c", "d"]]),
        "complex": np.ones((3, 3), dtype=complex),
        "huge": np.full((3, 3), 1e30),
        "near63": np.full((3, 3), 2**63 - 5, dtype=np.int64),
        "uint64": np.full((3, 3), 2**64 - 1, dtype=np.uint64),
        "nan": np.full((3, 3), np.nan),
        "negative": -np.ones((3, 3), dtype=np.int64),
        "cube": np.ones((2, 2, 2), dtype=np.int64),
        "empty": np.zeros((0, 0), dtype=np.int64),
        "single": np.ones((1, 1), dtype=np.int64),
        "rect": np.ones((8, 5), dtype=np.int64),
    }
    for name, value in bad_Y.items():
        np.savez(d / f"{name}.npz", Y=value, Y_noisy=value, alpha=np.array(0.5),
                 allow_pickle=True)
    import scipy.sparse as sp

    sp.save_npz(d / "crafted.npz", sp.csr_matrix(  # a column index far outside the matrix
        (np.array([1, 2]), np.array([0, 10**9]), np.array([0, 1, 2, 2])), shape=(3, 3)))
    np.savez(d / "near_one.npz", Y_noisy=Y, alpha=np.array(1 - 1e-16))
    np.save(d / "phi_huge.npy", np.full((2, 8), 1e300))
    (d / "text.npz").write_text("not an archive\n")
    (d / "empty-file.npz").write_bytes(b"")
    (d / "folder.npz").mkdir(exist_ok=True)
    np.save(d / "array.npy", Y)
    np.save(d / "mask_all.npy", np.ones(Y.shape, bool))
    np.save(d / "mask_rect.npy", np.zeros((8, 5), bool))
    np.save(d / "mask_float.npy", np.full(Y.shape, 0.5))
    np.save(d / "mask_obj.npy", np.array([[None]], dtype=object), allow_pickle=True)
    np.save(d / "phi_neg.npy", -np.ones((2, 8)))
    np.save(d / "phi_zero.npy", np.zeros((2, 8)))
    np.save(d / "phi_nan.npy", np.full((2, 8), np.nan))
    np.save(d / "phi_shape.npy", np.ones((3, 8)))
    (d / "out").mkdir(exist_ok=True)
    (d / "out" / "taken.npz").mkdir(exist_ok=True)
    (d / "maildir-empty").mkdir(exist_ok=True)
    garbage = d / "maildir-garbage" / "maildir" / "a" / "inbox"
    garbage.mkdir(parents=True, exist_ok=True)
    (garbage / "1").write_bytes(bytes(rng.integers(0, 256, 400, dtype=np.uint8)))
    box = d / "mail" / "maildir" / "a" / "sent"
    box.mkdir(parents=True, exist_ok=True)
    for i in range(6):
        (box / str(i)).write_text(MAIL.format("ann" if i % 2 else "bob", "cy", i))
    with tarfile.open(d / "mail.tar", "w") as tar:
        tar.add(d / "mail" / "maildir", arcname="maildir")
    with tarfile.open(d / "mail.tar") as tar:
        members = tar.getmembers()
    whole = (d / "mail.tar").read_bytes()
    (d / "cut.tar").write_bytes(whole[: members[-1].offset])
    return d


BAD_Y = ["crafted", "cut", "flipped", "object", "strings", "complex", "huge", "near63",
         "uint64", "nan", "cube", "empty", "text", "empty-file", "folder", "missing"]


class _Files(dict):
    """name -> path of an input made by :func:`make_inputs` (``.npy`` for masks and factors)."""

    def __init__(self, d: Path) -> None:
        super().__init__()
        self.d = d

    def __missing__(self, name: str) -> str:
        npy = name.startswith(("mask", "phi")) or name == "array"
        return str(self.d / f"{name}{'.npy' if npy else '.npz'}")


def cases(d: Path) -> list[tuple[list[str], str, str]]:
    """(argv, culprit named in the message, output that must not appear)."""
    out = str(d / "out" / "new.npz")
    json_out = str(d / "out" / "new.json")
    f = _Files(d)
    c: list[tuple[list[str], str, str]] = []
    priv = ["--alpha", "0.5", "--seed", "1"]
    for name in [*BAD_Y, "negative", "array"]:
        c.append((["privatize", f[name], out, *priv], f[name], out))
    for args, culprit in [(["--alpha", "1.5", "--seed", "1"], "--alpha"),
                          (["--alpha", "nan", "--seed", "1"], "--alpha"),
                          (["--alpha", "nofile", "--seed", "1"], "--alpha"),
                          (["--alpha", "0.5", "--seed", str(2**70)], "--seed"),
                          (["--alpha", "0.5", "--seed", "-1"], "--seed"),
                          (["--alpha", "0.5", "--seed", "x"], "--seed"),
                          (["--epsilon", "-1", "--precision", "1", "--seed", "1"], "epsilon"),
                          (["--epsilon", "nan", "--precision", "1", "--seed", "1"], "epsilon"),
                          (["--alpha", "0.5", "--seed", "1", "--secure"], "--secure"),
                          (["--alpha", str(d / "mask_rect.npy"), "--seed", "1"], "mask_rect")]:
        c.append((["privatize", f["true"], out, *args], culprit, out))
    fit = ["--method", "nonprivate", *FAST]
    for name in [*BAD_Y, "negative"]:
        c.append((["fit", f[name], out, *fit], f[name], out))
    c.append((["fit", f["single"], out, "--model", "community", *fit], f["single"], out))
    c.append((["fit", f["rect"], out, "--model", "community", *fit], f["rect"], out))
    c.append((["fit", f["array"], out, *fit], f["array"], out))
    for mask in ("mask_all", "mask_rect", "mask_float", "mask_obj", "true"):
        c.append((["fit", f["private"], out, "--mask", f[mask], *FAST], f[mask], out))
    c.append((["fit", f["near_one"], out, *FAST], f["near_one"], out))
    c.append((["fit", f["private"], out, *FAST, "--chains", "100000"], "--chains", out))
    for extend in ("-1", "40"):  # negative; 2^41 windows: past 2**31 sweeps
        c.append((["fit", f["private"], out, *FAST, "--extend", extend], "--extend", out))
    c.append((["fit", f["private"], out, *FAST, "--inference", "cavi", "--extend", "1"],
              "--extend", out))
    for idata, culprit in [(f["private"], f["private"]), (out, "--idata"),
                           (str(d / "out" / "taken.npz"), "taken.npz")]:
        c.append((["fit", f["private"], out, *FAST, "--idata", idata], culprit, out))
    c.append((["fit", f["private"], out, *FAST, "--inference", "cavi", "--idata",
               str(d / "out" / "x.nc")], "--idata", out))
    for phi in ("phi_neg", "phi_zero", "phi_nan", "phi_shape", "phi_huge", "true"):
        c.append((["fit", f["private"], out, "--fix-phi", f[phi], *FAST], f[phi], out))
    for opt, value in [("--components", "0"), ("--components", "10000000000"),
                       ("--components", "100000000"), ("--seed", str(2**70)), ("--seed", "-1"),
                       ("--iterations", "0"), ("--burnin", "20"), ("--thin", "0"),
                       ("--a0", "nan"), ("--b0", "-1"), ("--tol", "-1"), ("--threads", "0"),
                       ("--method", "bogus"), ("--inference", "vb"), ("--model", "lda"),
                       ("--restarts", "0"), ("--components", "two")]:
        c.append((["fit", f["private"], out, *FAST, opt, value], opt, out))
    c.append((["fit", f["private"], str(d / "out" / "taken.npz"), *FAST], "taken.npz",
              str(d / "out" / "taken.npz" / "x")))
    c.append((["fit", f["private"], "/proc/lppf-none/x.npz", *FAST], "/proc/lppf-none",
              "/proc/lppf-none/x.npz"))
    ev = ["--truth", f["true"], "--model", "pmf"]
    for name in BAD_Y:
        c.append((["evaluate", f[name], json_out, *ev], f[name], json_out))
        c.append((["evaluate", f["fit"], json_out, "--truth", f[name], "--model", "pmf"],
                  f[name], json_out))
    for args, culprit in [(["--mask", f["mask_rect"]], f["mask_rect"]),
                          (["--mask", f["true"]], f["true"]),
                          (["--mask", f["mask_obj"]], f["mask_obj"]),
                          (["--privatized", f["rect"]], f["rect"]),
                          (["--privatized", f["cut"]], f["cut"]),
                          (["--privatized", f["private"], "--coverage-cells", "-5"],
                           "--coverage-cells"),
                          (["--seed", "-1"], "--seed"), (["--seed", str(2**70)], "--seed"),
                          (["--label", "novalue"], "--label")]:
        c.append((["evaluate", f["fit"], json_out, *ev, *args], culprit, json_out))
    c.append((["evaluate", f["fit"], json_out, "--truth", f["rect"], "--model", "pmf"],
              f["rect"], json_out))
    c.append((["evaluate", f["fit"], json_out, "--truth", f["true"], "--model", "nmf"],
              "--model", json_out))
    npy = str(d / "out" / "new.npy")
    sim = [(["pmf", out, "--rows", "3", "--cols", "3", "--components", "2", "--shape", "nan"],
            "--shape"),
           (["pmf", out, "--rows", "3", "--cols", "3", "--components", "2", "--rate", "-1"],
            "--rate"),
           (["pmf", out, "--rows", "0", "--cols", "3", "--components", "2"], "--rows"),
           (["pmf", out, "--rows", "3", "--cols", "3", "--components", "2", "--seed", "-1"],
            "--seed"),
           (["pmf", out, "--rows", "3", "--cols", "3", "--components", "2", "--seed",
             str(2**70)], "--seed"),
           (["pmf", out, "--rows", str(10**7), "--cols", str(10**7), "--components", "2"],
            "--rows"),
           (["pmf", out, "--rows", "3", "--cols", "3", "--components", "2", "--shape", "1e300"],
            "simulate"),
           (["community", out, "--actors", str(10**9), "--communities", "2"], "--actors"),
           (["blocks", out, "--topics", "1"], "--topics"),
           (["noise-level", f["true"], npy, "--beta-mean", "1.5"], "--beta-mean"),
           (["noise-level", f["true"], npy, "--beta-mean", "nan"], "--beta-mean"),
           (["noise-level", f["true"], npy, "--epsilon", "-2"], "--epsilon"),
           (["mask", f["rect"], npy, "--top", "1"], f["rect"]),
           (["mask", f["true"], npy, "--top", "-1"], "--top"),
           (["factor", f["true"], npy, "nope"], "nope"),
           (["rescale", f["true"], out, "--model", "pmf", "--e0", "1", "--f0", "1"], f["true"])]
    for args, culprit in sim:
        c.append((["simulate", *args], culprit, out if out in args else npy))
    for name in ("cut", "object", "huge", "folder", "missing"):
        c.append((["simulate", "noise-level", f[name], npy, "--epsilon", "1"], f[name], npy))
    for source in ("maildir-empty", "maildir-garbage", "cut", "missing"):
        path = str(d / ("cut.tar" if source == "cut" else source))
        c.append((["enron", "network", path, out, "--quiet"], path, out))
    for args, culprit in [(["--min-total", "-1"], "--min-total"),
                          (["--min-total", "100"], "--min-total")]:
        c.append((["enron", "network", str(d / "mail"), out, "--quiet", *args], culprit, out))
    c.append((["enron", "docterm", str(d / "mail"), out, "--max-df", "2"], "--max-df", out))
    c.append((["enron", "network", str(d / "mail"), str(d / "out" / "new.txt")], "new.txt",
              str(d / "out" / "new.txt")))
    c.append((["nosuchcommand"], "nosuchcommand", out))
    return c


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``lppf.cli.main`` in this process; (exit status, stderr)."""
    from lppf.cli import main

    err = io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # a traceback: the promise is broken
        return -1, f"{type(exc).__name__}: {exc}"
    return code, err.getvalue()


def leftovers(output: str) -> list[str]:
    """The output and any temporary file beside it."""
    out = Path(output)
    if not out.parent.is_dir():
        return []
    found = [str(out)] if out.exists() else []
    return found + [str(p) for p in out.parent.glob(f".{out.name}.*")]


def promise_kept(argv: list[str], culprit: str, output: str) -> tuple[bool, str]:
    code, err = run_cli(argv)
    lines = err.strip().splitlines()
    ok = (code == 2 and len(lines) == 1 and lines[0].startswith("lppf: error: ")
          and culprit in lines[0] and not leftovers(output))
    return ok, f"exit {code}: {err.strip()[-500:]}; leftovers {leftovers(output)}"


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("hostile"))


CASES = cases(Path("/D"))


@pytest.mark.parametrize("index", range(len(CASES)),
                         ids=[" ".join(a[:2]).replace("/D/", "") + f"-{i}"
                              for i, (a, _, _) in enumerate(CASES)])
def test_explicit_case_keeps_the_promise(d, index):
    argv, culprit, output = cases(d)[index]
    ok, detail = promise_kept(argv, culprit, output)
    assert ok, f"{argv}: {detail}"


def _outcome(argv: list[str], culprit: str, output: str) -> None:
    """Either success (output written, no temporary file) or the promise."""
    code, err = run_cli(argv)
    if code == 0:
        assert Path(output).exists() and leftovers(output) == [output], err
        Path(output).unlink()
        return
    ok, detail = promise_kept(argv, culprit, output)
    assert ok, f"{argv}: {detail}"


SLOW_OK = settings(max_examples=30, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW_OK
@given(cut=st.integers(0, 10_000), flips=st.lists(st.tuples(st.integers(0, 10_000),
                                                             st.integers(1, 255)), max_size=4))
def test_damaged_archives(d, cut, flips):
    data = bytearray((d / "zipped.npz").read_bytes())
    data = data[: cut % (len(data) + 1)] if not flips else data
    for pos, mask in flips:
        if data:
            data[pos % len(data)] ^= mask
    bad = d / "damaged.npz"
    bad.write_bytes(bytes(data))
    out = str(d / "out" / "damaged-out.npz")
    _outcome(["privatize", str(bad), out, "--alpha", "0.5", "--seed", "0"], str(bad), out)
    _outcome(["fit", str(bad), out, "--method", "nonprivate", *FAST, "--seed", "0"],
             str(bad), out)


DTYPES = st.sampled_from([np.int8, np.int64, np.uint64, np.float32, np.float64, np.bool_,
                          np.complex128, "U3"])


@SLOW_OK
@given(Y=DTYPES.flatmap(lambda t: hnp.arrays(t, hnp.array_shapes(min_dims=0, max_dims=3,
                                                                 min_side=0, max_side=4))))
def test_arbitrary_arrays_as_counts(d, Y):
    path = d / "arbitrary.npz"
    np.savez(path, Y=Y)
    out = str(d / "out" / "arbitrary-out.npz")
    _outcome(["privatize", str(path), out, "--alpha", "0.5", "--seed", "0"], str(path), out)
    _outcome(["fit", str(path), out, "--method", "nonprivate", *FAST, "--seed", "0"],
             str(path), out)
    _outcome(["simulate", "noise-level", str(path), out, "--epsilon", "1"], str(path), out)


# integers that are valid settings stay small, so that a fit they start ends quickly
VALUES = st.one_of(st.integers(-2**80, 50).map(str), st.integers(2**31, 2**80).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.text(st.characters(codec="utf-8", exclude_characters="\x00-"),
                           max_size=6))


@SLOW_OK
@given(option=st.sampled_from(["--seed", "--a0", "--b0", "--tol", "--thin", "--burnin",
                               "--iterations", "--components", "--restarts", "--threads"]),
       value=VALUES)
def test_arbitrary_fit_options(d, option, value):
    out = str(d / "out" / "options.npz")
    argv = ["fit", str(d / "private.npz"), out, *FAST, "--iterations", "6", option, value]
    _outcome(argv, option, out)


@SLOW_OK
@given(option=st.sampled_from(["--seed", "--shape", "--rate", "--rows", "--cols",
                               "--components"]), value=VALUES)
def test_arbitrary_simulate_options(d, option, value):
    out = str(d / "out" / "sim.npz")
    argv = ["simulate", "pmf", out, "--rows", "3", "--cols", "3", "--components", "2",
            option, value]
    _outcome(argv, option, out)


@SLOW_OK
@given(option=st.sampled_from(["--alpha", "--seed", "--epsilon"]), value=VALUES)
def test_arbitrary_privatize_options(d, option, value):
    out = str(d / "out" / "priv.npz")
    base = {"--alpha": ["--seed", "1"], "--seed": ["--alpha", "0.5"],
            "--epsilon": ["--precision", "1", "--seed", "1"]}[option]
    culprit = "epsilon" if option == "--epsilon" else option
    _outcome(["privatize", str(d / "true.npz"), out, *base, option, value], culprit, out)


@SLOW_OK
@given(option=st.sampled_from(["--coverage-cells", "--seed", "--label"]), value=VALUES)
def test_arbitrary_evaluate_options(d, option, value):
    out = str(d / "out" / "metrics.json")
    argv = ["evaluate", str(d / "fit.npz"), out, "--truth", str(d / "true.npz"), "--model",
            "pmf", "--privatized", str(d / "private.npz"), option, value]
    _outcome(argv, option, out)


@SLOW_OK
@given(data=st.binary(max_size=600) | st.builds(
    lambda head, tail: head.encode("utf-8", "surrogateescape") + tail,
    st.text(max_size=200), st.binary(max_size=100)))
def test_any_one_hostile_message_is_a_counted_skip(d, data):
    box = d / "mail" / "maildir" / "a" / "sent"
    (box / "hostile").write_bytes(data)
    out = d / "out" / "network.npz"
    code, err = run_cli(["enron", "network", str(d / "mail"), str(out), "--min-total", "0",
                         "--min-sent", "0", "--quiet"])
    assert code == 0, err
    summary = (d / "out" / "network.summary.csv").read_text()
    assert "files read,7" in summary


@SLOW_OK
@given(cut=st.integers(0, 20_000))
def test_a_cut_tarball_is_an_error_or_complete(d, cut):
    whole = (d / "mail.tar").read_bytes()
    bad = d / "cut-any.tar"
    bad.write_bytes(whole[:cut])
    out = str(d / "out" / "cut-any.npz")
    with tarfile.open(d / "mail.tar") as tar:
        last = tar.getmembers()[-1]
    marker = last.offset_data + -(-last.size // 512) * 512 + 512  # first zero block read
    if cut >= marker:  # the end-of-archive marker survived: a complete archive
        return
    ok, detail = promise_kept(["enron", "network", str(bad), out, "--min-total", "0",
                               "--min-sent", "0", "--quiet"], str(bad), out)
    assert ok, detail


# -- real processes: signals
def _default_signals() -> None:
    """In the child: default SIGINT/SIGHUP handling, which a suite started in the background
    (``cmd &``) or under ``nohup`` would otherwise pass on as ignored."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _lppf(*argv: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lppf", *argv], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, preexec_fn=_default_signals,
                            **kwargs)


@pytest.mark.parametrize("chains", [(), ("--chains", "2", "--threads", "2")])
def test_ctrl_c_is_one_line_and_exit_130(d, chains):
    """Chains that run at the same time stop too."""
    out = d / "out" / "interrupted.npz"
    proc = _lppf("fit", str(d / "private.npz"), str(out), "--components", "2",
                 "--iterations", "100000000", "--burnin", "10", "--thin", "10", "--quiet",
                 *chains)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the fit is running
        line = proc.stderr.readline()
        if line.startswith("lppf fit: numba threads"):
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"still running 60 s after SIGINT: {proc.communicate()[1]}")
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["lppf: interrupted"]
    assert not leftovers(str(out))


def _python(code: str, where: Path) -> subprocess.CompletedProcess:
    """``code`` run as ``python -m`` (as ``lppf`` is) in ``where``, signals at their defaults."""
    (where / "interrupted.py").write_text(code)
    return subprocess.run([sys.executable, "-m", "interrupted"], capture_output=True, text=True,
                          timeout=30, preexec_fn=_default_signals, cwd=where)


def test_an_interrupt_that_python_drops_is_delivered_again(tmp_path):
    """Python drops an exception raised in a destructor (or a callback from C, as numba's
    compiler runs): the interrupt comes again until it stops the command, without a traceback."""
    code = ("import signal, sys, time\n"
            "from lppf.cli import interrupts\n"
            "class Dropped:\n"
            "    def __del__(self):\n"
            "        signal.raise_signal(signal.SIGINT)\n"
            "try:\n"
            "    with interrupts():\n"
            "        Dropped()\n"
            "        time.sleep(60)\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(130)\n")
    result = _python(code, tmp_path)
    assert (result.returncode, result.stderr) == (130, "")


def test_an_interrupt_caught_inside_exec_still_exits_130(tmp_path):
    """CPython exits by SIGINT once a KeyboardInterrupt has passed through exec(), even if it
    was caught since (scipy's imports run exec)."""
    code = ("from lppf import cli\n"
            "def main():\n"
            "    try:\n"
            "        exec('raise KeyboardInterrupt')\n"
            "    except KeyboardInterrupt:\n"
            "        return 130\n"
            "cli.main = main\n"
            "cli.run()\n")
    result = _python(code, tmp_path)
    assert result.returncode == 130, result.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_a_write_leaves_no_temporary_file(tmp_path, sig):
    code = ("import os, signal, sys\n"
            "from lppf.io import write_files\n"
            "def write(fh):\n"
            "    fh.write(b'x' * 1000)\n"
            f"    os.kill(os.getpid(), {int(sig)})\n"
            "try:\n"
            "    write_files([(sys.argv[1], write)])\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(130)\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out.npz")],
                            capture_output=True, text=True, timeout=60,
                            preexec_fn=_default_signals)
    assert result.returncode == 128 + sig if sig != signal.SIGINT else 130, result.stderr
    assert list(tmp_path.iterdir()) == []


# -- the writer: modes, symbolic links
def test_outputs_get_the_umask_mode_and_symlinks_are_written_through(tmp_path):
    from lppf.io import save_npz

    old = os.umask(0o027)
    try:
        save_npz(tmp_path / "a.npz", Y=np.ones(2))
    finally:
        os.umask(old)
    assert (tmp_path / "a.npz").stat().st_mode & 0o777 == 0o640
    (tmp_path / "a.npz").chmod(0o604)
    (tmp_path / "link.npz").symlink_to("a.npz")
    save_npz(tmp_path / "link.npz", Y=np.zeros(3))
    assert (tmp_path / "link.npz").is_symlink()
    assert (tmp_path / "a.npz").stat().st_mode & 0o777 == 0o604
    with np.load(tmp_path / "a.npz") as z:
        assert z["Y"].shape == (3,)


def _isolated(check, *args) -> bool:  # pragma: no cover - counting tool
    """``check(*args)`` in a forked child (a crash or a hang of 120 s counts as broken)."""
    pid = os.fork()
    if pid == 0:
        signal.alarm(120)
        try:
            os._exit(0 if check(*args) else 1)
        except BaseException:
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0


def _report(argv: list[str], culprit: str, output: str) -> bool:  # pragma: no cover
    ok, detail = promise_kept(argv, culprit, output)
    if not ok:
        print(f"BROKEN {' '.join(argv[:2])} ... {culprit}: {' '.join(detail.split())[:240]}",
              flush=True)
    return ok


def _damaged_ok(cmd: list[str], culprit: str, out: str) -> bool:  # pragma: no cover
    code, _ = run_cli(cmd)
    return (code == 0 and leftovers(out) == [out]) or promise_kept(cmd, culprit, out)[0]


def main() -> int:  # pragma: no cover - counting tool
    """Count the explicit cases and 200 damaged archives that keep the promise."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        d = make_inputs(Path(tmp))
        tried = kept = 0
        for argv, culprit, output in cases(d):
            ok = _isolated(_report, argv, culprit, output)
            tried, kept = tried + 1, kept + ok
            for path in leftovers(output):
                Path(path).unlink()
        rng = np.random.default_rng(1)
        good = (d / "zipped.npz").read_bytes()
        out = str(d / "out" / "damaged-out.npz")
        damaged = damaged_ok = 0
        for i in range(200):
            data = bytearray(good)
            if i % 2:
                data = data[: rng.integers(0, len(data))]
            else:
                data[rng.integers(0, len(data))] ^= int(rng.integers(1, 256))
            (d / "damaged.npz").write_bytes(bytes(data))
            for cmd in (["privatize", str(d / "damaged.npz"), out, "--alpha", "0.5", "--seed",
                         "0"], ["fit", str(d / "damaged.npz"), out, "--method", "nonprivate",
                                *FAST, "--seed", "0"]):
                ok = _isolated(_damaged_ok, cmd, str(d / "damaged.npz"), out)
                damaged, damaged_ok = damaged + 1, damaged_ok + ok
                for path in leftovers(out):
                    Path(path).unlink()
        print(f"explicit cases: {kept} of {tried} keep the promise")
        print(f"damaged archives: {damaged_ok} of {damaged} runs succeed or keep the promise")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
