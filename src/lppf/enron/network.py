"""Sender-recipient count matrix ``Y_VV``: ``y_ij`` = number of unique emails from i to j.

Every distinct recipient of an email (To | Cc | Bcc, minus the sender) gets one count. An
actor is kept if, over the whole deduplicated corpus (before any restriction, one pass),
they sent at least ``min_sent`` emails and sent + received at least ``min_total``; with
``top_actors`` only the ``top_actors`` most active of those are kept (a size that does not
depend on how many mailboxes the source holds). Actors are ordered by sent + received,
descending (ties by address), so the most active come first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import pandas as pd

from lppf.enron.parse import Email
from lppf.validation import InputError


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


def select_actors(counts: pd.DataFrame, min_sent: int = 1, min_total: int = 100,
                  top_actors: int | None = None) -> pd.DataFrame:
    """Kept actors (``min_sent`` and ``min_total`` thresholds, then at most ``top_actors``
    of them), most active first."""
    total = counts["sent"] + counts["received"]
    kept = counts[(counts["sent"] >= min_sent) & (total >= min_total)]
    order = np.lexsort((kept.index.to_numpy(), -total[kept.index].to_numpy()))
    return kept.iloc[order[:top_actors]]


def build_network(emails: list[Email], min_sent: int = 1, min_total: int = 100,
                  top_actors: int | None = None) -> tuple[np.ndarray, pd.DataFrame]:
    """Return ``Y_VV`` (int64, zero diagonal) and the actor table
    (index, address, sent, received over the corpus; row_sum, col_sum of Y)."""
    if min_sent < 0 or min_total < 0 or (top_actors is not None and top_actors < 1):
        raise InputError(f"thresholds must be >= 0 and top_actors >= 1, got "
                         f"min_sent={min_sent}, min_total={min_total}, top_actors={top_actors}")
    actors = select_actors(actor_counts(emails), min_sent, min_total, top_actors)
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
