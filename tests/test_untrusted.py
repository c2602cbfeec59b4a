"""Untrusted input and the file system: outputs only onto regular files, multi-file outputs all
or nothing, fit and truth files checked by ``lppf evaluate``, the Enron source confined to
itself, scalar values checked where they enter, and messages naming the user's own option.

Each case holds the promise of the command line: exit status 2, one line ``lppf: error: ...``
naming the culprit, nothing written.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from lppf.io import save_npz, text_writer, write_files
from lppf.validation import InputError


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``lppf.cli.main`` in this process; (exit status, stderr)."""
    from lppf.cli import main

    err = io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


def refused(argv: list, culprit: str) -> str:
    """Run ``argv``; assert exit 2 and one line naming ``culprit``; return the line."""
    code, err = run_cli(argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("lppf: error: "), err
    assert culprit in lines[0], err
    return lines[0]


@pytest.fixture
def truth(tmp_path) -> Path:
    path = tmp_path / "truth.npz"
    np.savez(path, Y=np.arange(12).reshape(3, 4))
    return path


def _privatize(truth: Path, out) -> list:
    return ["privatize", truth, out, "--alpha", "0.5", "--seed", "1"]


# -- outputs
def test_outputs_onto_special_files_are_refused_and_left_alone(tmp_path, truth):
    fifo = tmp_path / "p.npz"
    os.mkfifo(fifo)
    assert "a FIFO" in refused(_privatize(truth, fifo), str(fifo))
    assert fifo.is_fifo()
    assert "character device" in refused(_privatize(truth, "/dev/null"), "/dev/null")
    (tmp_path / "dir.npz").mkdir()
    assert "a directory" in refused(_privatize(truth, tmp_path / "dir.npz"), "dir.npz")
    link = tmp_path / "link.npz"
    link.symlink_to(fifo)
    refused(_privatize(truth, link), "link.npz")
    assert fifo.is_fifo() and link.is_symlink()


def test_a_name_ending_in_a_slash_writes_nothing(tmp_path, truth):
    refused(_privatize(truth, f"{tmp_path}/newdir/"), "newdir/")
    refused(_privatize(truth, f"{tmp_path}/new/deeper/"), "deeper/")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["truth.npz"]


@pytest.mark.parametrize("size", [240, 244, 250, 255])
def test_names_up_to_the_file_system_limit_are_written(tmp_path, truth, size):
    out = tmp_path / ("x" * (size - 4) + ".npz")
    assert run_cli(_privatize(truth, out))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, "truth.npz"])


@pytest.mark.parametrize("name", ["x" * 256, "y" * 300 + "/out.npz", "é" * 128])
def test_longer_names_are_one_line(tmp_path, truth, name):
    assert "bytes long" in refused(_privatize(truth, tmp_path / name), "bytes long")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["truth.npz"]


def test_a_failed_write_removes_the_directories_it_made(tmp_path):
    def fail(fh):
        raise InputError("no")

    with pytest.raises(InputError):
        write_files([(tmp_path / "a" / "b" / "one.txt", text_writer("1")),
                     (tmp_path / "c" / "two.txt", fail)])
    assert list(tmp_path.iterdir()) == []
    save_npz(tmp_path / "a" / "b" / "ok.npz", x=np.ones(1))  # success keeps them
    assert (tmp_path / "a" / "b" / "ok.npz").is_file()


def test_a_file_among_the_parents_is_named(tmp_path, truth):
    line = refused(_privatize(truth, truth / "sub" / "x.npz"), "not a directory")
    assert str(truth) in line


def test_an_output_into_a_missing_directory_is_refused(tmp_path, truth):
    refused(_privatize(truth, tmp_path / "nodir" / "x.npz"), "no such directory")
    assert not (tmp_path / "nodir").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_between_renames_leaves_every_file_or_none(tmp_path, sig):
    """The signal arrives right after the first of three renames: all three land."""
    code = ("import os, sys\n"
            "from lppf import io\n"
            "real = os.replace\n"
            "def replace(a, b):\n"
            "    real(a, b)\n"
            f"    os.kill(os.getpid(), {int(sig)})\n"
            "io.os.replace = replace\n"
            "d = sys.argv[1]\n"
            "try:\n"
            "    io.write_files([(f'{d}/{n}', io.text_writer(n)) for n in ('a', 'b', 'c')])\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(130)\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                            text=True, timeout=60,
                            preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                                for s in (signal.SIGINT, signal.SIGHUP)])
    assert result.returncode in (130, 128 + sig), result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]


# -- scalar values
@pytest.mark.parametrize("alpha", [0.5 + 0.1j, np.complex128(0.5), True, np.bool_(False), "0.5",
                                   np.array(["0.5"]), [0.5, None], object()])
def test_alpha_must_hold_real_numbers(alpha):
    from lppf.mechanisms import privatize

    with pytest.raises(InputError, match="alpha: expected numbers"):
        privatize(np.ones((2, 2), int), alpha, rng=1)


@pytest.mark.parametrize("alpha", [1 - 1e-16, 1 - 2.0**-27, np.nextafter(1, 0)])
def test_alpha_too_close_to_1_is_refused_everywhere(tmp_path, truth, alpha):
    from lppf.mechanisms import privatize
    from lppf.validation import ALPHA_MAX

    with pytest.raises(InputError, match="too close to 1"):
        privatize(np.ones((2, 2), int), alpha, rng=1)
    refused(["privatize", truth, tmp_path / "p.npz", "--alpha", repr(alpha), "--seed", "1"],
            "--alpha")
    Y = privatize(np.ones((2, 2), int), ALPHA_MAX, rng=1)  # the largest allowed stays fittable
    assert np.abs(Y).max() < 2**31


@pytest.mark.parametrize("rng", ["abc", 1.5, -1, 2**64, True, [1, 2]])
def test_a_bad_rng_is_named(rng):
    from lppf.mechanisms import privatize

    with pytest.raises(InputError, match="rng must be an integer"):
        privatize(np.ones((2, 2), int), 0.5, rng=rng)


@pytest.mark.parametrize(("name", "value"), [("a0", "0.1"), ("a0", True), ("b0", 1 + 0j),
                                             ("b0", np.complex128(1)), ("tol", "0"),
                                             ("a0", np.array(["1"]))])
def test_settings_must_be_real_numbers(name, value):
    from lppf.validation import check_params

    params = dict(method="private", inference="mcmc", n_components=2, a0=0.1, b0=0.1,
                  max_iter=6, burnin=2, thin=2, tol=0.0, restarts=1)
    with pytest.raises(InputError, match=f"{name} must be a real number") as info:
        check_params(**{**params, name: value})
    assert info.value.param == name


@pytest.mark.parametrize("fix", [np.ones((2, 4)) * (1 + 1j), np.ones((2, 4), bool),
                                 np.full((2, 4), "1.0")])
def test_fixed_factors_must_be_real_numbers(fix):
    from lppf import PoissonMF

    model = PoissonMF(2, method="nonprivate", max_iter=6, burnin=2, thin=2)
    with pytest.raises(InputError, match=r"fix\['phi'\]: expected numbers"):
        model.fit(np.ones((4, 4), int), fix={"phi": fix})


def test_an_epsilon_that_rounds_alpha_to_1_is_blamed_on_epsilon(tmp_path, truth):
    out = tmp_path / "alpha.npy"
    line = refused(["simulate", "noise-level", truth, out, "--epsilon", "1e-300"], "--epsilon")
    assert "alpha" in line and not out.exists()
    line = refused(["privatize", truth, tmp_path / "p.npz", "--epsilon", "1e-300",
                    "--precision", "1", "--seed", "1"], "--epsilon 1e-300")
    refused(["simulate", "noise-level", truth, out, "--beta-mean", "0.999999999",
             "--concentration", "1e9"], "--beta-mean")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["truth.npz"]


@pytest.mark.parametrize("value", ["0", "-1", "abc", "", "1.5"])
def test_a_bad_numba_num_threads_is_one_line(tmp_path, truth, value):
    env = {**os.environ, "NUMBA_NUM_THREADS": value}
    result = subprocess.run([sys.executable, "-m", "lppf", "privatize", str(truth),
                             str(tmp_path / "p.npz"), "--alpha", "0.5", "--seed", "1"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"lppf: error: environment variable NUMBA_NUM_THREADS={value!r}: expected an integer "
        ">= 1 (or unset it to use every cpu)"]


# -- messages name the user's own option
@pytest.fixture
def private(tmp_path) -> Path:
    path = tmp_path / "private.npz"
    np.savez(path, Y_noisy=np.random.default_rng(0).poisson(2, (6, 5)), alpha=np.array(0.5))
    return path


@pytest.mark.parametrize(("options", "culprit", "absent"), [
    (["--chains", "0"], "--chains", "n_chains"),
    (["--iterations", "2000000000", "--thin", "1"], "--iterations", "n_components"),
    (["--iterations", "10", "--burnin", "10"], "--burnin", "max_iter"),
])
def test_fit_messages_name_the_cli_options(tmp_path, private, options, culprit, absent):
    line = refused(["fit", private, tmp_path / "f.npz", "--components", "2", "--quiet",
                    *options], culprit)
    assert line.startswith(f"lppf: error: {culprit}") and absent not in line


def test_a_float_mask_is_called_a_dtype_problem(tmp_path, private):
    mask = tmp_path / "mask.npy"
    np.save(mask, np.full((6, 5), 0.5))
    line = refused(["fit", private, tmp_path / "f.npz", "--components", "2", "--mask", mask],
                   str(mask))
    assert "float64" in line and "shape" not in line


# -- lppf evaluate reads what it is given through checked readers
@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """A real pmf fit (MCMC, 2 chains), its truth, privatized counts and a mask."""
    d = tmp_path_factory.mktemp("judged")
    rng = np.random.default_rng(0)
    theta, phi = rng.gamma(1.0, 1.0, (8, 2)), rng.gamma(1.0, 1.0, (2, 12))
    Y = rng.poisson(theta @ phi)
    np.savez(d / "truth.npz", Y=Y, mu=theta @ phi, theta=theta, phi=phi)
    np.savez(d / "private.npz", Y_noisy=Y + rng.integers(-1, 2, Y.shape), alpha=np.array(0.3))
    np.save(d / "mask.npy", rng.random(Y.shape) < 0.3)
    assert run_cli(["fit", d / "private.npz", d / "fit.npz", "--components", "2", "--quiet",
                    "--iterations", "8", "--burnin", "2", "--thin", "2", "--chains", "2",
                    "--seed", "1"])[0] == 0
    community = rng.poisson(2.0, (8, 8))
    np.savez(d / "net.npz", Y=community)
    assert run_cli(["fit", d / "net.npz", d / "cfit.npz", "--model", "community",
                    "--method", "nonprivate", "--components", "2", "--quiet", "--iterations",
                    "4", "--burnin", "2", "--thin", "1", "--seed", "1"])[0] == 0
    return d


def _edited(d: Path, source: str, name: str, drop: tuple = (), **changes) -> Path:
    with np.load(d / source) as z:
        data = {k: z[k] for k in z.files if k not in drop}
    np.savez(d / name, **{**data, **changes})
    return d / name


def _evaluate(d: Path, fit="fit.npz", truth="truth.npz", *extra) -> list:
    return ["evaluate", d / fit, d / "out.json", "--truth", d / truth, "--model", "pmf", *extra]


def test_a_community_truth_of_one_actor_is_refused(tmp_path):
    np.savez(tmp_path / "one.npz", Y=np.ones((1, 1), int))
    np.savez(tmp_path / "fit.npz", mu_hat=np.ones((1, 1)))
    refused(["evaluate", tmp_path / "fit.npz", tmp_path / "m.json", "--truth",
             tmp_path / "one.npz", "--model", "community"], "at least 2 actors")
    assert not (tmp_path / "m.json").exists()


def test_a_sound_fit_is_evaluated(judged):
    code, err = run_cli(_evaluate(judged, "fit.npz", "truth.npz", "--mask",
                                  judged / "mask.npy", "--privatized", judged / "private.npz",
                                  "--coherence"))
    assert code == 0, err
    (judged / "out.json").unlink()


def test_how_often_a_fit_was_extended_reaches_its_metrics(judged):
    fit = _edited(judged, "fit.npz", "extended.npz", extra_extended=np.int64(2))
    code, err = run_cli(_evaluate(judged, fit.name, "truth.npz"))
    assert code == 0, err
    assert json.loads((judged / "out.json").read_text())["extended"] == 2
    (judged / "out.json").unlink()
    bad = _edited(judged, "fit.npz", "bad_extended.npz", extra_extended=np.int64(-1))
    refused(_evaluate(judged, bad.name, "truth.npz"), "'extra_extended' must be one integer")


def test_the_first_window_diagnostics_reach_the_metrics(judged):
    with np.load(judged / "fit.npz") as z:
        rhat, ess = z["extra_window_rhat"], z["extra_window_ess"]
    code, err = run_cli(_evaluate(judged, "fit.npz", "truth.npz"))
    assert code == 0, err
    row = json.loads((judged / "out.json").read_text())
    (judged / "out.json").unlink()
    assert row["rhat_loglik_first"] == pytest.approx(rhat[0])
    assert row["ess_bulk_loglik_first"] == pytest.approx(ess[0])
    bad = _edited(judged, "fit.npz", "bad_window.npz", extra_window_rhat=np.ones((1, 1)))
    refused(_evaluate(judged, bad.name, "truth.npz"), "'extra_window_rhat'")


def test_a_fit_whose_diagnostics_are_nan_is_evaluated(judged):
    """A fit writes NaN where R-hat cannot be computed (too few draws, a constant trace)."""
    fit = _edited(judged, "fit.npz", "nan_diag.npz", diag_rhat_loglik=np.float64(np.nan),
                  diag_ess_bulk_loglik=np.float64(np.nan))
    code, err = run_cli(_evaluate(judged, fit.name, "truth.npz"))
    assert code == 0, err
    assert json.loads((judged / "out.json").read_text())["converged"] == 0
    (judged / "out.json").unlink()


def _fit_cases(d: Path) -> list[tuple[Path, str]]:
    with np.load(d / "fit.npz") as z:
        S = len(z["phi_samples"])
        theta_s, log_joint = z["theta_samples"], z["log_joint"]
    edit = lambda name, **kw: _edited(d, "fit.npz", name, **kw)  # noqa: E731
    return [
        (d / "cfit.npz", "another model"),
        (edit("f1.npz", theta_samples=theta_s[:, :, :1]), "theta_samples"),
        (edit("f2.npz", phi_samples=np.ones((S + 1, 2, 12))), "differ in number"),
        (edit("f3.npz", log_joint=log_joint[:-1]), "log_joint"),
        (edit("f4.npz", drop=("diag_rhat_loglik",)), "diag_rhat_loglik"),
        (edit("f5.npz", config=np.array("{not json")), "config"),
        (edit("f6.npz", config=np.array("[1, 2]")), "config"),
        (edit("f7.npz", seed=np.arange(3)), "seed"),
        (edit("f8.npz", iterations=np.float64(3.5)), "iterations"),
        (edit("f9.npz", phi_samples=np.full((S, 2, 12), np.nan)), "phi_samples"),
        (edit("f10.npz", mu_hat=-np.ones((8, 12))), "mu_hat"),
        (edit("f11.npz", theta=np.ones((8, 2), complex)), "theta"),
        (edit("f12.npz", elapsed_seconds=np.array("x")), "elapsed_seconds"),
        (edit("f13.npz", phi=np.ones((3, 12))), "phi"),
        (edit("f14.npz", theta_samples=theta_s[:0], phi_samples=np.ones((0, 2, 12))),
         "no samples"),
    ]


@pytest.mark.parametrize("index", range(15))
def test_a_damaged_fit_is_named(judged, index):
    path, key = _fit_cases(judged)[index]
    line = refused(_evaluate(judged, path.name, "truth.npz", "--privatized",
                             judged / "private.npz"), str(path))
    assert key in line
    assert not (judged / "out.json").exists()


def _other_cases(d: Path) -> list[tuple[list, str]]:
    truth = lambda name, **kw: _edited(d, "truth.npz", name, **kw)  # noqa: E731
    private = lambda name, **kw: _edited(d, "private.npz", name, **kw)  # noqa: E731
    np.save(d / "mask_all.npy", np.ones((8, 12), bool))
    np.save(d / "mask_none.npy", np.zeros((8, 12), bool))
    np.save(d / "mask_float.npy", np.full((8, 12), 0.5))
    with np.load(d / "private.npz") as z:
        Y_noisy = z["Y_noisy"]
    return [
        (["--truth", truth("t1.npz", mu=-np.ones((8, 12)))], "negative"),
        (["--truth", truth("t2.npz", mu=np.ones((8, 11)))], "'mu'"),
        (["--truth", truth("t3.npz", Y=np.ones((8, 12, 1)))], "Y"),
        (["--truth", truth("t4.npz", phi=np.ones((2, 11)))], "'phi'"),
        (["--truth", truth("t5.npz", phi=np.ones((5, 12)))], "true topics"),
        (["--privatized", private("p1.npz", alpha=np.array(1.0))], "alpha"),
        (["--privatized", private("p2.npz", alpha=np.array(np.nan))], "alpha"),
        (["--privatized", private("p3.npz", Y_noisy=Y_noisy + 0.5)], "Y_noisy"),
        (["--privatized", private("p4.npz", alpha=np.array([0.5, 0.5]))], "alpha"),
        (["--mask", d / "mask_all.npy"], "every"),
        (["--mask", d / "mask_none.npy"], "no evaluated"),
        (["--mask", d / "mask_float.npy"], "float64"),
    ]


@pytest.mark.parametrize("index", range(12))
def test_damaged_truth_privatized_or_mask_files_are_named(judged, index):
    extra, key = _other_cases(judged)[index]
    argv = _evaluate(judged)
    if extra[0] == "--truth":
        argv[4] = extra[1]
    else:
        argv += extra
    culprit = str(extra[1]) if key != "true topics" else "fit.npz"
    line = refused(argv, culprit)
    assert key in line and "shape differs" not in line
    assert not (judged / "out.json").exists()


# -- the Enron source stays inside itself
MAIL = "From: {0}@x.com\nTo: {1}@x.com\nDate: Mon, 1 Jan 2001 00:00:{2:02d} +0000\n\nhi {2}\n"


def _maildir(d: Path) -> Path:
    box = d / "src" / "maildir" / "ann-a" / "sent"
    box.mkdir(parents=True)
    for i in range(4):
        (box / f"{i}.").write_text(MAIL.format("ann", "bob" if i % 2 else "cy", i))
    return d / "src"


def _network(source: Path, out: Path) -> tuple[int, str, dict[str, int]]:
    code, err = run_cli(["enron", "network", source, out / "net.npz", "--min-total", "0",
                         "--min-sent", "0", "--quiet"])
    summary = out / "net.summary.csv"
    rows = dict(line.rsplit(",", 1) for line in summary.read_text().splitlines()[1:]) \
        if summary.exists() else {}
    return code, err, {k: int(v) for k, v in rows.items()}


def test_links_out_of_the_maildir_are_not_followed(tmp_path):
    source = _maildir(tmp_path)
    outside = tmp_path / "outside"
    (outside / "inbox").mkdir(parents=True)
    (outside / "inbox" / "1.").write_text(MAIL.format("eve", "mallory", 9))
    (outside / "secret.").write_text(MAIL.format("eve", "trent", 8))
    box = source / "maildir" / "ann-a"
    (box / "linked").symlink_to(outside / "inbox")
    (box / "sent" / "9.").symlink_to(outside / "secret.")
    (source / "maildir" / "eve-e").symlink_to(outside)
    code, err, summary = _network(source, tmp_path)
    assert code == 0, err
    assert summary["files read"] == 4 and summary["skipped: symbolic link"] == 3
    actors = (tmp_path / "net.actors.csv").read_text()
    assert "eve" not in actors and "mallory" not in actors


def test_a_deep_maildir_is_walked_without_recursion(tmp_path):
    source = _maildir(tmp_path)
    top = deep = source / "maildir" / "ann-a" / "sent"
    try:
        for _ in range(1200):  # os.makedirs would recurse
            deep = deep / "d"
            deep.mkdir()
        (deep / "1.").write_text(MAIL.format("ann", "deep", 30))
        code, err, summary = _network(source, tmp_path)
        assert code == 0, err
        assert summary["files read"] == 5
    finally:  # deepest first: shutil.rmtree (and pytest's clean-up) recurses once per level
        while deep != top:
            shutil.rmtree(deep)
            deep = deep.parent


def test_unreadable_folders_and_special_files_are_counted(tmp_path, monkeypatch):
    from lppf.enron import source as src

    source = _maildir(tmp_path)
    locked = source / "maildir" / "ann-a" / "locked"
    locked.mkdir()
    (locked / "1.").write_text(MAIL.format("ann", "zed", 40))
    os.mkfifo(source / "maildir" / "ann-a" / "sent" / "fifo.")
    entries = src._entries
    monkeypatch.setattr(src, "_entries",
                        lambda d: None if d == str(locked) else entries(d))
    code, err, summary = _network(source, tmp_path)
    assert code == 0, err
    assert summary["skipped: unreadable folder"] == 1
    assert summary["skipped: not a regular file"] == 1 and summary["files read"] == 4


def test_huge_members_are_skipped_unread(tmp_path, monkeypatch):
    import tarfile

    from lppf.enron import source as src

    source = _maildir(tmp_path)
    (source / "maildir" / "ann-a" / "sent" / "big.").write_text(
        MAIL.format("ann", "big", 50) + "x" * 5000)
    with tarfile.open(tmp_path / "m.tar", "w") as tar:
        tar.add(source / "maildir", arcname="maildir")
    monkeypatch.setattr(src, "MESSAGE_LIMIT", 1000)
    for path in (source, tmp_path / "m.tar"):
        code, err, summary = _network(path, tmp_path)
        assert code == 0, err
        assert summary["skipped: file over 1000 bytes"] == 1 and summary["files read"] == 4


def test_synth_maildir_is_written_all_or_nothing(tmp_path, monkeypatch):
    from lppf.enron import synth

    (tmp_path / "file").write_text("x")
    refused(["enron", "synth-maildir", tmp_path / "file", "--people", "5", "--owners", "2",
             "--emails", "5"], "file")
    (tmp_path / "full" / "maildir").mkdir(parents=True)
    (tmp_path / "full" / "maildir" / "keep").write_text("x")
    refused(["enron", "synth-maildir", tmp_path / "full"], "not an empty directory")
    real = Path.write_bytes
    calls = []

    def fail_late(self, data):
        calls.append(self)
        if len(calls) > 3:
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(synth.Path, "write_bytes", fail_late)
    refused(["enron", "synth-maildir", tmp_path / "new" / "out", "--people", "5",
             "--owners", "2", "--emails", "5"], "No space left")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "full"]


def test_a_fifo_or_device_as_input_is_called_what_it_is(tmp_path, private):
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    out = tmp_path / "out.npz"
    assert "is a FIFO" in refused(["privatize", fifo, out, "--alpha", "0.5", "--seed", "1"],
                                  str(fifo))
    assert "character device" in refused(["fit", "/dev/zero", out, "--components", "2"],
                                         "/dev/zero")
    assert "is a FIFO" in refused(["fit", private, out, "--components", "2", "--mask", fifo],
                                  str(fifo))
    assert "is a FIFO" in refused(["enron", "network", fifo, out, "--quiet"], str(fifo))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz", "private.npz"]


# -- properties: any input either works or is refused by the promise
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

QUICK = settings(max_examples=40, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])
SCALARS = st.one_of(st.floats(), st.integers(-2**70, 2**70), st.booleans(), st.complex_numbers(),
                    st.text(max_size=5), st.none(), st.lists(st.floats(0, 1), max_size=3),
                    st.just(np.nextafter(1.0, 0.0)), st.floats(0.999999, 1.0))


def _works_or_input_error(call) -> object:
    """``call()``: a result, or an InputError; any other exception (or warning) fails."""
    try:
        return call()
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc)
        return exc


@QUICK
@given(alpha=SCALARS)
def test_any_alpha_privatizes_into_the_count_limit_or_is_refused(alpha):
    from lppf.mechanisms import privatize

    out = _works_or_input_error(lambda: privatize(np.full((3, 2), 5), alpha, rng=1))
    if not isinstance(out, InputError):
        assert out.dtype == np.int64 and np.abs(out).max() < 2**31


@QUICK
@given(rng=SCALARS)
def test_any_rng_works_or_is_refused(rng):
    from lppf.mechanisms import privatize

    _works_or_input_error(lambda: privatize(np.ones((2, 2), int), 0.5, rng=rng))


@QUICK
@given(name=st.sampled_from(["n_components", "a0", "b0", "max_iter", "burnin", "thin", "tol",
                             "restarts", "n_chains", "random_state", "threads"]),
       value=SCALARS)
def test_any_setting_is_checked_in_one_line(name, value):
    from lppf.validation import check_params

    params = dict(method="private", inference="mcmc", n_components=2, a0=0.1, b0=0.1,
                  max_iter=6, burnin=2, thin=2, tol=0.0, restarts=1)
    out = _works_or_input_error(lambda: check_params(**{**params, name: value}))
    if isinstance(out, InputError):
        assert out.param in (name, "burnin")


@QUICK
@given(fix=hnp.arrays(st.sampled_from([np.float64, np.int8, np.bool_, np.complex128, "U2"]),
                      st.sampled_from([(2, 4), (4, 2), (2,)]),
                      elements=None))
def test_any_fixed_factor_is_checked(fix):
    from lppf.validation import fit_data

    out = _works_or_input_error(lambda: fit_data("pmf", "nonprivate", np.ones((4, 4), int),
                                                 fix={"phi": fix}, n_components=2))
    if not isinstance(out, InputError):
        assert fix.dtype.kind in "iuf" and np.all(out.fix["phi"] > 0)


NAMES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00/"), min_size=1,
            max_size=130),
    st.integers(1, 300).map(lambda n: "n" * n),
    st.sampled_from(["newdir/", "a/b/", ".", "..", "sub/x.npz", "fifo", "dir", "link",
                     "file/x"]))


@QUICK
@given(name=NAMES)
def test_any_output_name_is_a_regular_file_or_refused(tmp_path_factory, name):
    d = tmp_path_factory.mktemp("names")
    np.savez(d / "truth.npz", Y=np.ones((2, 2), int))
    os.mkfifo(d / "fifo")
    (d / "dir").mkdir()
    (d / "link").symlink_to("/dev/null")
    (d / "file").write_text("x")
    before = {p: p.lstat().st_mode for p in d.rglob("*")}
    code, err = run_cli(["privatize", d / "truth.npz", f"{d}/{name}", "--alpha", "0.5",
                         "--seed", "1"])
    after = {p: p.lstat().st_mode for p in d.rglob("*")}
    new = set(after) - set(before)
    if code == 0:
        out = Path(os.path.realpath(f"{d}/{name}"))
        assert out.is_file() and all(p == out or out.is_relative_to(p) for p in new)
    else:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("lppf: error: "), err
        assert after == before
    assert all(after[p] == mode for p, mode in before.items() if p.name != "truth.npz" or
               code != 0)


@QUICK
@given(key=st.sampled_from(["mu_hat", "theta", "phi", "theta_samples", "phi_samples",
                            "log_joint", "seed", "iterations", "config", "elapsed_seconds",
                            "diag_rhat_loglik", "diag_rhat_mu", "extra_n_chains"]),
       value=hnp.arrays(st.sampled_from([np.float64, np.int64, np.bool_, "U3"]),
                        hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)) | st.none())
def test_any_damaged_fit_is_evaluated_or_named(judged, key, value):
    fit = _edited(judged, "fit.npz", "any.npz", drop=(key,) if value is None else (),
                  **({} if value is None else {key: value}))
    code, err = run_cli(_evaluate(judged, fit.name, "truth.npz", "--privatized",
                                  judged / "private.npz", "--mask", judged / "mask.npy"))
    out = judged / "out.json"
    if code == 0:
        assert out.is_file()
        out.unlink()
    else:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and str(fit) in lines[0], err
        assert not out.exists()


def test_enron_side_outputs_are_checked_before_the_corpus_is_read(tmp_path):
    source = _maildir(tmp_path)
    out = tmp_path / ("n" * 244 + ".npz")  # the .summary.csv beside it would be 256 bytes
    refused(["enron", "network", source, out, "--quiet"], "bytes long")
    os.mkfifo(tmp_path / "net.actors.csv")
    refused(["enron", "network", source, tmp_path / "net.npz", "--quiet"], "net.actors.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.actors.csv", "src"]


@pytest.mark.parametrize("module", ["numpy", "numba"])
def test_ctrl_c_while_modules_load_is_one_line(tmp_path, module):
    """The interrupt arrives while ``module`` is imported, as the console script runs."""
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def hooked(name, *args, **kwargs):\n"
            f"    if name == {module!r}:\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *args, **kwargs)\n"
            "builtins.__import__ = hooked\n"
            "sys.argv = ['lppf', 'fit', 'in.npz', 'out.npz', '--components', '2']\n"
            "from lppf.cli import run\n"
            "run()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip().splitlines() == ["lppf: interrupted"]


@QUICK
@given(option=st.sampled_from(["--epsilon", "--beta-mean", "--concentration"]),
       value=st.floats(allow_nan=True, allow_infinity=True).map(repr)
       | st.sampled_from(["1e-300", "5e-324", "0.9999999999999999", "1e300"]))
def test_any_noise_level_option_writes_a_fittable_alpha_or_is_refused(tmp_path_factory,
                                                                       option, value):
    from lppf.validation import ALPHA_MAX

    d = tmp_path_factory.mktemp("noise")
    np.savez(d / "truth.npz", Y=np.full((4, 3), 2))
    out = d / "alpha.npy"
    base = {"--epsilon": [], "--beta-mean": [], "--concentration": ["--beta-mean", "0.5"]}
    code, err = run_cli(["simulate", "noise-level", d / "truth.npz", out, *base[option],
                         option, value])
    if code == 0:
        alpha = np.load(out)
        assert np.all((alpha >= 0) & (alpha <= ALPHA_MAX))
    else:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and option in lines[0], err
        assert not out.exists()


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0)])
def test_noise_level_of_empty_counts_is_one_line(tmp_path, shape):
    np.savez(tmp_path / "empty.npz", Y=np.zeros(shape, int))
    refused(["simulate", "noise-level", tmp_path / "empty.npz", tmp_path / "a.npy",
             "--epsilon", "1"], "empty matrix")
    assert not (tmp_path / "a.npy").exists()


SETTINGS = st.one_of(st.floats(), st.integers(-3, 8), st.integers(2**31, 2**70), st.booleans(),
                     st.complex_numbers(), st.text(max_size=4), st.none(),
                     st.just(np.float32(0.5)), st.just(np.array(2)))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(name=st.sampled_from(["n_components", "a0", "b0", "max_iter", "burnin", "thin",
                             "n_chains", "tol", "restarts", "random_state", "threads",
                             "alpha", "method", "inference"]),
       value=SETTINGS)
def test_any_estimator_setting_fits_or_is_refused(name, value):
    from lppf import PoissonMF

    params = {"n_components": 2, "max_iter": 6, "burnin": 2, "thin": 2, "alpha": 0.5,
              "random_state": 0, name: value}
    model = PoissonMF(**params)
    Y = np.arange(12).reshape(4, 3) % 3
    out = _works_or_input_error(lambda: model.fit(Y))
    if not isinstance(out, InputError):
        assert model.mu_hat_.shape == Y.shape and np.all(np.isfinite(model.mu_hat_))
