"""Document-term matrix ``Y_DV`` of emails written by the mailbox owners.

* Documents: unique emails in a sent folder (:data:`~lppf.enron.parse.SENT_FOLDERS`) whose
  sender is the mailbox owner, i.e. the most frequent sender of that mailbox's sent folders.
* Authored text only: the body is cut at the first line that starts quoted or forwarded
  material or a signature (:data:`CUT_PATTERNS`); lines starting with ``>`` are dropped.
* Tokens: ``nltk`` ``RegexpTokenizer("[a-z]+")`` on the lower-cased text, at least 2 letters,
  gensim's ``STOPWORDS`` removed. Documents need at least ``min_tokens`` such tokens.
* ``n_docs`` documents are drawn at random (seeded) among those; the vocabulary is built on
  them by gensim's ``Dictionary.filter_extremes(no_below=min_df, no_above=max_df,
  keep_n=n_words)`` (the ``n_words`` words of highest document frequency among those in at
  least ``min_df`` documents and at most a ``max_df`` fraction of them). Documents left
  empty by the vocabulary are dropped.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd
from gensim.corpora import Dictionary
from gensim.parsing.preprocessing import STOPWORDS
from nltk.tokenize import RegexpTokenizer

from lppf.enron.parse import Email
from lppf.validation import InputError

CUT_PATTERNS = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"^\s*-{2,}\s*original message\s*-{2,}",             # Outlook reply
    r"^\s*-{2,}\s*forwarded by\b",                        # Lotus Notes forward
    r"^\s*-{2,}\s*(begin )?forwarded message",             # other forwards
    r"^\s*(from|to|sent|date|subject|cc)\s*:\s",          # quoted header block
    r"\bwrote:\s*$",                                      # "X wrote:" attribution
    r"\bon \d{1,2}/\d{1,2}/\d{2,4}\s+\d{1,2}:\d\d(:\d\d)?\s*([ap]m)?\s*$",  # Lotus attribution
    r"^--\s*$",                                           # signature delimiter
    r"^\s*_{10,}\s*$",                                    # footer rule
))
# Lotus Notes quoted header: "Name@ENRON" then a date line; both lines are cut.
LOTUS_DATE_LINE = re.compile(r"^\s*\d{1,2}/\d{1,2}/\d{2,4}\s+\d{1,2}:\d\d(:\d\d)?\s*([ap]m)?\s*$",
                             re.IGNORECASE)
_TOKENIZER = RegexpTokenizer(r"[a-z]+")
# summary rows that `lppf enron docterm` reads back for its notice of a short matrix
LONG_DOCUMENTS = "documents with >= {} tokens"
EMPTIED = "dropped: empty after vocabulary"


def authored_text(body: str) -> str:
    """The part of ``body`` written by its sender (see :data:`CUT_PATTERNS`)."""
    kept = []
    for line in body.splitlines():
        if any(p.search(line) for p in CUT_PATTERNS):
            break
        if LOTUS_DATE_LINE.search(line):
            while kept and not kept[-1].strip():
                kept.pop()
            if kept:
                kept.pop()
            break
        if not line.lstrip().startswith(">"):
            kept.append(line)
    return "\n".join(kept)


def tokenize(text: str) -> list[str]:
    """Lower-case alphabetic tokens of >= 2 letters, gensim stopwords removed."""
    return [t for t in _TOKENIZER.tokenize(text.lower()) if len(t) > 1 and t not in STOPWORDS]


def owner_addresses(emails: list[Email]) -> dict[str, str]:
    """Mailbox -> its owner's address: the most frequent sender in its sent folders."""
    senders: dict[str, Counter[str]] = {}
    for mail in emails:
        if mail.in_sent_folder:
            senders.setdefault(mail.owner, Counter())[mail.sender] += 1
    return {owner: c.most_common(1)[0][0] for owner, c in senders.items()}


def authored_documents(emails: list[Email]) -> list[Email]:
    """Unique sent-folder emails whose sender owns the mailbox."""
    owners = owner_addresses(emails)
    return [m for m in emails if m.in_sent_folder and owners.get(m.owner) == m.sender]


def build_docterm(emails: list[Email], n_docs: int = 1000, n_words: int = 1400,
                  min_tokens: int = 50, max_df: float = 0.3, min_df: int = 2, seed: int = 0,
                  ) -> tuple[np.ndarray, list[str], pd.DataFrame, Counter[str]]:
    """Return ``Y_DV`` (int64), the vocabulary (column order), the document table
    (message_id, mailbox, date, path) and summary counts."""
    if n_docs < 1 or n_words < 1 or min_tokens < 0 or min_df < 1 or not 0 < max_df <= 1:
        raise InputError(f"bad document-term settings: n_docs={n_docs}, n_words={n_words}, "
                         f"min_tokens={min_tokens}, min_df={min_df}, max_df={max_df}")
    summary: Counter[str] = Counter()
    docs = authored_documents(emails)
    summary["authored emails"] = len(docs)
    tokens = [tokenize(authored_text(m.body)) for m in docs]
    long = [i for i, t in enumerate(tokens) if len(t) >= min_tokens]
    summary[LONG_DOCUMENTS.format(min_tokens)] = len(long)
    if not long:
        raise InputError(f"no authored email has >= {min_tokens} tokens")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(long), size=min(n_docs, len(long)), replace=False))
    picked = [long[i] for i in chosen]
    vocab = Dictionary(tokens[i] for i in picked)
    vocab.filter_extremes(no_below=min_df, no_above=max_df, keep_n=n_words)
    bows = [vocab.doc2bow(tokens[i]) for i in picked]
    nonempty = [j for j, bow in enumerate(bows) if bow]
    summary["sampled documents"] = len(picked)
    summary[EMPTIED] = len(picked) - len(nonempty)
    Y_DV = np.zeros((len(nonempty), len(vocab)), dtype=np.int64)
    for row, j in enumerate(nonempty):
        cols, counts = zip(*bows[j], strict=True)
        Y_DV[row, list(cols)] = counts
    summary["D"], summary["V"] = Y_DV.shape
    kept = [docs[picked[j]] for j in nonempty]
    table = pd.DataFrame({
        "message_id": [m.message_id for m in kept],
        "mailbox": [m.owner for m in kept],
        "date": pd.to_datetime([m.date for m in kept], unit="s", utc=True),
        "path": [m.path for m in kept],
    })
    return Y_DV, [vocab[i] for i in range(len(vocab))], table, summary
