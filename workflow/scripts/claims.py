"""The claims scorecard (lppf.claims) of the table of every fit, as CSV and Markdown, and the
findings of this project (lppf.findings) in a section of their own and a CSV apart."""

import sys

import pandas as pd

from lppf import claims, findings
from lppf.io import write_text


def main(smk):
    with open(smk.log[0], "w") as log:
        sys.stderr = log
        fits = pd.read_csv(smk.input[0])
        card, found = claims.scorecard(fits), findings.scorecard(fits)
        write_text(smk.output.csv, card.to_csv(index=False))
        write_text(smk.output.findings, found.to_csv(index=False))
        write_text(smk.output.md, claims.markdown(card) + findings.markdown(found))
        print(claims.summary(card), file=log)


main(snakemake)  # noqa: F821
