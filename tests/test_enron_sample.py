"""The real 12-mailbox sample (skipped when absent), cross-checked by a regex count.

The sample is found beside the project (``../shared/data/enron_sample_12.tar.gz``) or at
``$LPPF_ENRON_SAMPLE``.
"""

import os
import re
import tarfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from lppf.enron.docterm import build_docterm
from lppf.enron.network import build_network
from lppf.enron.parse import SENT_FOLDERS, read_corpus

SAMPLE = Path(os.environ.get("LPPF_ENRON_SAMPLE", Path(__file__).resolve().parents[2]
                             / "shared/data/enron_sample_12.tar.gz"))
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not SAMPLE.is_file(), reason=f"{SAMPLE} not present")]
HEADER = re.compile(r"^(From|To|Cc|Bcc|Date):[ \t]*(.*(?:\n[ \t].*)*)", re.M | re.I)
ADDRESS = re.compile(r"[\w.'-]+@[\w.-]+")


def regex_counts(path):
    """Without the email parser: (sender, recipient) -> set of (Date, whitespace-collapsed
    raw body) over files outside all_documents/discussion_threads, and sender -> that set."""
    pairs, sent = defaultdict(set), defaultdict(set)
    with tarfile.open(path, "r|gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if not member.isfile() or parts[2] in ("all_documents", "discussion_threads"):
                continue
            text = tar.extractfile(member).read().decode("latin-1").replace("\r\n", "\n")
            head, _, body = text.partition("\n\n")
            fields = defaultdict(str)
            for name, value in HEADER.findall(head):
                fields[name.lower()] += " " + value
            sender = fields["from"].strip().lower()
            key = (fields["date"].strip(), " ".join(body.split()))
            sent[sender].add(key)
            for r in set(ADDRESS.findall((fields["to"] + fields["cc"] + fields["bcc"]).lower())):
                pairs[sender, r].add(key)
    return pairs, sent


@pytest.fixture(scope="module")
def corpus():
    return read_corpus(SAMPLE, keep_body=lambda raw: raw.folder in SENT_FOLDERS)


def test_summary(corpus):
    s = corpus.summary
    assert s["files read"] == 32159
    assert s["parsed"] + s["skipped: excluded folder"] + sum(
        v for k, v in s.items() if k.startswith("skipped: ") and "excluded" not in k
    ) == s["files read"]
    assert s["unique emails"] == s["parsed"] - s["duplicates removed"]
    assert s["duplicates removed"] > 1000  # copies across folders and mailboxes


def test_network_agrees_with_regex_count(corpus):
    Y, actors = build_network(corpus.emails)
    V = Y.shape[0]
    assert 100 <= V <= 161 and np.all(np.diag(Y) == 0)
    assert np.all(actors["sent"] >= 1) and np.all(actors["sent"] + actors["received"] >= 100)
    pairs, sent = regex_counts(SAMPLE)
    top = list(actors["address"][:20])
    got = Y[:20, :20]
    want = np.array([[0 if a == b else len(pairs[a, b]) for b in top] for a in top])
    assert np.array_equal(got, want) and got.sum() > 1000
    assert list(actors["sent"][:20]) == [len(sent[a]) for a in top]


def test_docterm_on_sample(corpus):
    Y, vocab, docs, summary = build_docterm(corpus.emails, n_docs=1000, n_words=1400)
    assert summary["authored emails"] > 3000
    assert Y.shape == (len(docs), len(vocab)) and len(vocab) == 1400
    assert 300 <= len(docs) <= 1000 and Y.sum(axis=1).min() > 0
    folders = [p.split("/") for p in docs["path"]]
    assert all(f[0] == m and f[1] in SENT_FOLDERS for f, m in zip(folders, docs["mailbox"],
                                                                   strict=True))
    assert (Y > 0).sum(axis=0).max() <= 0.3 * len(docs)
