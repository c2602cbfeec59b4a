"""One tidy table per experiment: a row per fit (its metrics JSON, which carries the fit's own
wall time ``fit_seconds``)."""

import json
import sys
from pathlib import Path

import pandas as pd

from lppf.io import write_text


def load_rows(metric_files):
    return pd.DataFrame([json.loads(Path(metric).read_text()) for metric in metric_files])


def main(smk):
    with open(smk.log[0], "w") as log:
        sys.stderr = log
        table = load_rows(smk.input)
        write_text(smk.output[0], table.to_csv(index=False))
        print(f"{len(table)} fits -> {smk.output[0]}", file=log)


main(snakemake)  # noqa: F821
