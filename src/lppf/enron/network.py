"""Sender-recipient count matrix ``Y_VV``: ``y_ij`` = number of unique emails from i to j.

Every distinct recipient of an email (To | Cc | Bcc, minus the sender) gets one count. An
actor is kept if, over the whole deduplicated corpus (before any restriction, one pass),
they sent at least ``min_sent`` emails and sent + received at least ``min_total``. Actors are
ordered by sent + received, descending (ties by address), so the most active come first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import pandas as pd

from lppf.enron.parse import Email
from lppf.io import InputError


def actor_counts(emails: Iterable[Email]) -> pd.DataFrame:
    """Per address: emails ``sent`` and emails ``received`` (indexed by address)."""
    sent: Counter[str] = Counter()
    received: Counter[str] = Counter()
    for mail in emails:
        sent[mail.sender] += 1
        received.update(mail.recipients)
    frame = pd.DataFrame({"sent": pd.Series(sent, dtype="int64"),
                          "received": pd.Series(received, dtype="int64")})
    return frame.fillna(0).astype("int64").rename_axis("address")


def select_actors(counts: pd.DataFrame, min_sent: int = 1, min_total: int = 100) -> pd.DataFrame:
    """Kept actors (``min_sent`` and ``min_total`` thresholds), most active first."""
    total = counts["sent"] + counts["received"]
    kept = counts[(counts["sent"] >= min_sent) & (total >= min_total)]
    order = np.lexsort((kept.index.to_numpy(), -total[kept.index].to_numpy()))
    return kept.iloc[order]


def build_network(emails: list[Email], min_sent: int = 1,
                  min_total: int = 100) -> tuple[np.ndarray, pd.DataFrame]:
    """Return ``Y_VV`` (int64, zero diagonal) and the actor table
    (index, address, sent, received over the corpus; row_sum, col_sum of Y)."""
    if min_sent < 0 or min_total < 0:
        raise InputError(f"thresholds must be >= 0, got min_sent={min_sent}, "
                         f"min_total={min_total}")
    actors = select_actors(actor_counts(emails), min_sent, min_total)
    index = {a: i for i, a in enumerate(actors.index)}
    pairs = [(index[m.sender], index[r]) for m in emails if m.sender in index
             for r in m.recipients if r in index]
    Y_VV = np.zeros((len(index), len(index)), dtype=np.int64)
    if pairs:
        rows, cols = np.asarray(pairs, dtype=np.int64).T
        np.add.at(Y_VV, (rows, cols), 1)
    table = actors.reset_index()
    table.insert(0, "index", np.arange(len(table)))
    table["row_sum"] = Y_VV.sum(axis=1)
    table["col_sum"] = Y_VV.sum(axis=0)
    return Y_VV, table
