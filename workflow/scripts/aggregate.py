"""One tidy table per experiment: a row per fit (its metrics JSON) plus the job's wall time."""

import json
import sys
from pathlib import Path

import pandas as pd

from lppf.io import write_text
from lppf.metrics import benchmark_seconds


def load_rows(metric_files, benchmark_files):
    rows = []
    for metric, bench in zip(metric_files, benchmark_files, strict=True):
        row = json.loads(Path(metric).read_text())
        row["seconds"] = benchmark_seconds(bench) if Path(bench).is_file() else None
        rows.append(row)
    return pd.DataFrame(rows)


def main(smk):
    with open(smk.log[0], "w") as log:
        sys.stderr = log
        table = load_rows(smk.input, smk.params.benchmarks)
        write_text(smk.output[0], table.to_csv(index=False))
        print(f"{len(table)} fits -> {smk.output[0]}", file=log)


main(snakemake)  # noqa: F821
