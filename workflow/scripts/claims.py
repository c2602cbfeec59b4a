"""The claims scorecard (lppf.claims) of the table of every fit, as CSV and Markdown."""

import sys

import pandas as pd

from lppf import claims
from lppf.io import write_text


def main(smk):
    with open(smk.log[0], "w") as log:
        sys.stderr = log
        card = claims.scorecard(pd.read_csv(smk.input[0]))
        write_text(smk.output.csv, card.to_csv(index=False))
        write_text(smk.output.md, claims.markdown(card))
        print(claims.summary(card), file=log)


main(snakemake)  # noqa: F821
