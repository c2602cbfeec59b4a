"""Imports point down: every module of src/lppf imports only from its own layer or below.

Layers, lowest first (a module is placed by the longest prefix of its name listed here):
helpers and the input checks; the result type, files and the table of backends; the model
maths; the EM start; the two inference packages (which never import each other); the fit and
its evaluation; the front ends. The model maths, the start and the inference packages import
nothing from the file layer (:mod:`lppf.io`). Imports inside functions count as well.
"""

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
LAYERS = [
    ("lppf._numba", "lppf._progress", "lppf.validation"),
    ("lppf.results", "lppf.io", "lppf.backends"),
    ("lppf.draws", "lppf.mechanisms", "lppf.distributions", "lppf.conditional", "lppf.likelihood",
     "lppf.log_densities", "lppf.expectations", "lppf.diagnostics", "lppf.synthetic",
     "lppf.noise", "lppf.privacy", "lppf.noise_conditional", "lppf.series", "lppf.cells"),
    ("lppf.start",),
    ("lppf.mcmc", "lppf.cavi"),
    ("lppf.fitting", "lppf.fitfile", "lppf.metrics"),
    ("lppf.estimators", "lppf.claims", "lppf.findings", "lppf.experiments", "lppf.enron",
     "lppf.commands", "lppf.cli", "lppf", "lppf.__main__"),
]
NO_FILES = ("lppf.draws", "lppf.mechanisms", "lppf.distributions", "lppf.conditional",
            "lppf.likelihood", "lppf.log_densities", "lppf.expectations", "lppf.diagnostics",
            "lppf.synthetic", "lppf.start", "lppf.mcmc", "lppf.cavi", "lppf.noise",
            "lppf.privacy", "lppf.noise_conditional", "lppf.series", "lppf.cells")
APART = ("lppf.mcmc", "lppf.cavi")  # the two inference packages


def module_name(path):
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def within(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def group(name, prefixes):
    """The longest of ``prefixes`` that ``name`` lies within, or None."""
    return max((p for p in prefixes if within(name, p)), key=len, default=None)


def layer(name):
    top = group(name, [p for layer in LAYERS for p in layer])
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def imports(path):
    """The lppf modules (or packages) imported anywhere in the file at ``path``."""
    package = module_name(path).rpartition(".")[0] if path.name != "__init__.py" \
        else module_name(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if within(a.name, "lppf"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1],
                                 *([base] if base else [])])
            if within(base, "lppf"):
                # `from lppf import start`: the module imported is lppf.start
                yield from (f"{base}.{a.name}" if base == "lppf" else base for a in node.names)


MODULES = sorted(SRC.glob("lppf/**/*.py"))


def upward(path):
    """The imports of the module at ``path`` that break the rules above."""
    me = module_name(path)
    out = []
    for name in imports(path):
        if within(name, group(me, APART) or "\0") or name == "lppf":
            continue
        if layer(name) > layer(me):
            out.append(f"{me} imports {name} from a layer above")
        elif group(me, APART) and group(name, APART):
            out.append(f"{me} imports {name}: the inference packages are apart")
        elif group(me, NO_FILES) and within(name, "lppf.io"):
            out.append(f"{me} imports {name}: the model maths and inference read no files")
    return out


def test_every_module_has_a_layer():
    assert len(MODULES) > 40
    for path in MODULES:
        layer(module_name(path))


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_imports_point_down(path):
    assert upward(path) == []


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    bad = {"cavi/_loop.py": "def f():\n    from lppf.mcmc import _driver\n",
           "mechanisms.py": "from lppf.io import load_npz\n",
           "conditional.py": "from lppf.fitting import DEFAULTS\n",
           "start.py": "from lppf import metrics\n"}
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    for name, text in bad.items():
        path = tmp_path / "lppf" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert [upward(tmp_path / "lppf" / name) for name in bad] == [
        ["lppf.cavi._loop imports lppf.mcmc: the inference packages are apart"],
        ["lppf.mechanisms imports lppf.io: the model maths and inference read no files"],
        ["lppf.conditional imports lppf.fitting from a layer above"],
        ["lppf.start imports lppf.metrics from a layer above"]]
