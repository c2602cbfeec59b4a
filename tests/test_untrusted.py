"""Untrusted input and the file system: outputs only onto regular files, multi-file outputs all
or nothing, fit and truth files checked by ``lppf evaluate``, the Enron source confined to
itself, scalar values checked where they enter, and messages naming the user's own option.

Each case holds the promise of the command line: exit status 2, one line ``lppf: error: ...``
naming the culprit, nothing written.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from lppf.io import InputError, save_npz, text_writer, write_files


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
