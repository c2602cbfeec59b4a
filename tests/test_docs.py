"""Every fenced ``python`` and ``bash`` block of README.md and docs/ runs, on tiny inputs.

Python blocks of one file run in order in one namespace that starts with small counts ``Y``,
their privatized copy ``Y_noisy`` and ``alpha``. Bash commands run in a folder holding small
input files under the names the docs use; ``snakemake`` commands run as dry runs there (with
the repository's config/ and workflow/ linked in). Not run here: the set-up commands of the
README (they are what CI runs, .ci/run), commands for a Slurm cluster where its executor
plugin is not installed (tests/cluster/local_slurm.sh runs them on a one-node cluster), and
the benchmark summary before any run has left benchmark files.
"""

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lppf.io import save_npz
from lppf.mechanisms import privatize

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
BIN = Path(sys.executable).parent


def blocks(path, languages):
    return [code for lang, code in BLOCK.findall(path.read_text()) if lang in languages]


def commands(code):
    """Shell commands of a block: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.split(" #")[0].strip() for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def small_counts(seed=0):
    rng = np.random.default_rng(seed)
    return rng.poisson(1.0, size=(20, 15))


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """The files the docs' commands read, small."""
    Y = small_counts()
    save_npz(tmp_path / "counts.npz", Y=Y)
    save_npz(tmp_path / "truth.npz", Y=Y)
    np.save(tmp_path / "per_row.npy", np.full((Y.shape[0], 1), 0.5))
    save_npz(tmp_path / "privatized.npz", Y_noisy=privatize(Y, 0.5, rng=1), alpha=np.array(0.5))
    mask = np.zeros(Y.shape, bool)
    mask[:3, :3] = True
    np.save(tmp_path / "heldout.npy", mask)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def skip_reason(command):
    if "pip install" in command or command.startswith((". .venv", "python3 -m venv")):
        return "set-up: what CI runs (.ci/run)"
    if "profiles/slurm" in command and importlib.util.find_spec(
            "snakemake_executor_plugin_slurm") is None:
        return "needs the Slurm executor plugin (tests/cluster/local_slurm.sh)"
    if "benchmarks/**" in command and not list(ROOT.glob("results/**/benchmarks/**/*.tsv")):
        return "needs a finished run's benchmark files"
    return None


def run(command, cwd, env):
    argv = shlex.split(command)
    if argv[0] == "snakemake":
        argv = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
                *argv[1:]]
        argv += [a for a in ("-n",) if a not in argv]
        for name in ("config", ".test", "workflow"):
            if not (cwd / name).exists():
                (cwd / name).symlink_to(ROOT / name)
    elif argv[0] in ("lppf", "python"):
        argv[0] = str(BIN / argv[0])
        cwd = ROOT if "results/" in command else cwd
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}{result.stderr[-2000:]}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_bash_blocks_run(doc, inputs):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "NUMBA_NUM_THREADS": "1"}
    ran = 0
    for code in blocks(doc, ("bash", "sh")):
        for command in commands(code):
            if command.startswith("export "):
                key, _, value = command.removeprefix("export ").partition("=")
                env[key] = os.path.expandvars(value.replace("$USER", env.get("USER", "user")))
                continue
            if skip_reason(command) is None:
                run(command, inputs, env)
                ran += 1
    if doc.name in ("method.md", "usage.md", "enron.md", "workflow.md"):
        assert ran > 0


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_python_blocks_run(doc, inputs):
    code = blocks(doc, ("python",))
    if not code:
        pytest.skip("no python block")
    Y = small_counts()
    namespace = {"np": np, "Y": Y, "alpha": 0.5, "Y_noisy": privatize(Y, 0.5, rng=1)}
    for block in code:
        exec(compile(block, f"{doc.name}", "exec"), namespace)


def test_docs_cite_nothing_outside_the_repository():
    for path in [*DOCS, ROOT / "config/README.md"]:
        text = path.read_text()
        assert "METHOD.md" not in text and "../shared" not in text, path


def test_the_readme_is_a_first_screen():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 60
    assert len(commands(blocks(ROOT / "README.md", ("bash",))[0])) == 2
