"""Compare the results of two runs of the workflow, e.g. on Slurm and locally.

    python tests/cluster/compare_results.py DIR_A DIR_B

Both directories must hold the same result files. Arrays in ``.npz``/``.npy`` must be equal
(NaN equals NaN), ``.tsv``/``.csv`` tables equal cell by cell, ``.json`` documents equal, any
other file byte for byte, except figures and documents (``.png``, ``.pdf``, ``.svg``,
``.html``, ...), which embed dates or plot timings and need only be non-empty on both sides.
Keys and columns holding timings or host names (``elapsed``, ``time``, ``seconds``, ...) are
ignored. Files under ``logs``,
``benchmarks``, ``config`` or ``.snakemake`` directories are not results.
Exit status 0 if equal, 1 otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

NOT_RESULTS = {".snakemake", "logs", "benchmarks", "config"}
FIGURES = {".png", ".jpg", ".jpeg", ".pdf", ".svg", ".eps", ".html"}
TIMING = re.compile(
    r"elapsed|(^|_)(time|times|seconds|secs|runtime|wall|duration|date|timestamp|host|hostname)"
    r"($|_)",
    re.IGNORECASE,
)


def result_files(root: Path) -> set[Path]:
    """Relative paths of all result files under ``root``."""
    files = set()
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if NOT_RESULTS & set(rel.parts) or not path.is_file() or path.suffix == ".log":
            continue
        files.add(rel)
    return files


def same_arrays(a: Path, b: Path, ignored: set[str]) -> bool:
    if a.suffix == ".npy":
        xa, xb = np.load(a), np.load(b)
        return np.array_equal(xa, xb, equal_nan=_has_nan(xa))
    with np.load(a) as za, np.load(b) as zb:
        keys = {k for k in za.files if not TIMING.search(k)}
        ignored.update(k for k in za.files if TIMING.search(k))
        if keys != {k for k in zb.files if not TIMING.search(k)}:
            return False
        return all(np.array_equal(za[k], zb[k], equal_nan=_has_nan(za[k])) for k in keys)


def _has_nan(x: np.ndarray) -> bool:
    return x.dtype.kind in "fc"


def same_table(a: Path, b: Path, ignored: set[str]) -> bool:
    sep = "\t" if a.suffix == ".tsv" else ","
    ta, tb = pd.read_csv(a, sep=sep), pd.read_csv(b, sep=sep)
    drop = [c for c in ta.columns if TIMING.search(str(c))]
    ignored.update(map(str, drop))
    return ta.drop(columns=drop).equals(tb.drop(columns=drop, errors="ignore"))


def same_json(a: Path, b: Path, ignored: set[str]) -> bool:
    def strip(doc):
        if isinstance(doc, dict):
            ignored.update(k for k in doc if TIMING.search(k))
            return {k: strip(v) for k, v in doc.items() if not TIMING.search(k)}
        if isinstance(doc, list):
            return [strip(v) for v in doc]
        return doc

    def canonical(path: Path) -> str:
        return json.dumps(strip(json.loads(path.read_text())), sort_keys=True)

    return canonical(a) == canonical(b)


def same_file(a: Path, b: Path, ignored: set[str]) -> bool:
    """Whether two result files agree; names of ignored keys/columns go to ``ignored``."""
    if a.suffix in (".npz", ".npy"):
        return same_arrays(a, b, ignored)
    if a.suffix in (".tsv", ".csv"):
        return same_table(a, b, ignored)
    if a.suffix == ".json":
        return same_json(a, b, ignored)
    if a.suffix in FIGURES:
        return a.stat().st_size > 0 and b.stat().st_size > 0
    return a.read_bytes() == b.read_bytes()


def compare(dir_a: Path, dir_b: Path) -> list[str]:
    """Differences between the result files of two working directories (empty: equal)."""
    files_a, files_b = result_files(dir_a), result_files(dir_b)
    problems = [f"only in {dir_a}: {p}" for p in sorted(files_a - files_b)]
    problems += [f"only in {dir_b}: {p}" for p in sorted(files_b - files_a)]
    common = sorted(files_a & files_b)
    ignored: set[str] = set()
    problems += [f"differs: {p}" for p in common if not same_file(dir_a / p, dir_b / p, ignored)]
    data = [p for p in common if p.suffix in (".npz", ".npy", ".tsv", ".csv", ".json")]
    if not data:
        problems.append("no data files (.npz, .npy, .tsv, .csv, .json) to compare")
    by_suffix = pd.Series([p.suffix or "(none)" for p in common]).value_counts().to_dict()
    print(
        f"compared {len(common)} result files {by_suffix}; ignored timing keys: "
        f"{sorted(ignored) or 'none'}"
    )
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    problems = compare(Path(argv[0]), Path(argv[1]))
    for line in problems:
        print(line)
    print("results equal" if not problems else f"{len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
