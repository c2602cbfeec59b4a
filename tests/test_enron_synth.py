"""End to end on the synthetic maildir: exact counts against the generator's ground truth."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from lppf.cli import main
from lppf.enron.docterm import build_docterm
from lppf.enron.parse import read_corpus
from lppf.enron.synth import write_synthetic_maildir
from lppf.io import load_npz


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    truth = write_synthetic_maildir(root / "corpus", seed=3)
    return root, truth


def run(*argv):
    assert main(["enron", *map(str, argv)]) == 0


def summary(stem):
    return dict(pd.read_csv(f"{stem}.summary.csv").itertuples(index=False))


def test_network_matches_ground_truth(synth):
    root, truth = synth
    run("network", root / "corpus", root / "net.npz", "--quiet")
    s = summary(root / "net")
    assert s["files read"] == truth.n_files
    assert s["skipped: excluded folder"] == truth.n_excluded
    assert {k.removeprefix("skipped: "): v for k, v in s.items()
            if k.startswith("skipped: ") and k != "skipped: excluded folder"} == truth.malformed
    assert s["unique emails"] == truth.n_emails
    assert s["duplicates removed"] == s["parsed"] - truth.n_emails > 0

    Y = load_npz(root / "net.npz")["Y"]
    actors = pd.read_csv(root / "net.actors.csv")
    total = truth.sent + truth.received
    expected = {a for a in total if truth.sent[a] >= 1 and total[a] >= 100}
    assert set(actors["address"]) == expected and 20 <= len(expected) <= 40
    assert list(actors["index"]) == list(range(len(actors)))
    assert list(actors["sent"]) == [truth.sent[a] for a in actors["address"]]
    assert list(actors["received"]) == [truth.received[a] for a in actors["address"]]
    want = np.array([[truth.edges[a, b] for b in actors["address"]] for a in actors["address"]])
    assert Y.dtype == np.int64 and np.array_equal(Y, want)
    assert np.all(np.diag(Y) == 0) and Y.sum() > 0


def test_docterm_matches_ground_truth(synth):
    root, truth = synth
    run("docterm", root / "corpus", root / "dt.npz", "--n-docs", 100000, "--n-words", 100000,
        "--quiet")
    Y = load_npz(root / "dt.npz")["Y"]
    docs = pd.read_csv(root / "dt.documents.csv")
    vocab = (root / "dt.vocab.txt").read_text().split()
    long = {p: c for p, c in truth.documents.items() if c.total() >= 50}
    assert sorted(docs["path"]) == sorted(long) and 200 <= len(long) <= 1000
    assert set(docs["mailbox"]) <= set(truth.owners)
    df = Counter(w for c in long.values() for w in c)
    assert set(vocab) == {w for w, n in df.items() if 2 <= n <= int(0.3 * len(long))}
    want = np.array([[long[p][w] for w in vocab] for p in docs["path"]])
    assert np.array_equal(Y, want) and Y.sum(axis=1).min() > 0
    assert 200 <= Y.shape[1] <= 500


def test_docterm_sample_and_vocabulary_size(synth):
    root, truth = synth
    corpus = read_corpus(root / "corpus")
    runs = {name: build_docterm(corpus.emails, n_docs=50, n_words=40, seed=seed)
            for name, seed in (("a", 1), ("b", 1), ("c", 2))}
    paths = {n: list(r[2]["path"]) for n, r in runs.items()}
    assert paths["a"] == paths["b"] != paths["c"] and len(paths["a"]) == 50
    Y, vocab = runs["a"][:2]
    assert Y.shape == (50, 40) and len(set(vocab)) == 40
    df = Counter(w for p in paths["a"] for w in truth.documents[p])
    eligible = {w for w, n in df.items() if 2 <= n <= int(0.3 * 50)}
    assert set(vocab) <= eligible
    assert min(df[w] for w in vocab) >= max(df[w] for w in eligible - set(vocab))
    assert np.array_equal((Y > 0).sum(axis=0), [df[w] for w in vocab])


def test_generator_is_reproducible_and_marked(tmp_path):
    for name in ("a", "b"):
        write_synthetic_maildir(tmp_path / name, seed=5, people=8, owners=3, emails=30)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.")
                   if p.is_file())
    assert len(files) > 30
    for rel in files:
        data = (tmp_path / "a" / rel).read_bytes()
        assert data == (tmp_path / "b" / rel).read_bytes()
        assert b"X-Synthetic: yes" in data or not data.strip()  # the deliberately empty file
    assert "SYNTHETIC" in (tmp_path / "a" / "README.md").read_text()


def test_cli_bad_input(tmp_path, capsys):
    assert main(["enron", "network", str(tmp_path), str(tmp_path / "out.csv")]) == 2
    assert main(["enron", "docterm", str(tmp_path / "nope"), str(tmp_path / "o.npz")]) == 2
    assert main(["enron", "synth-maildir", str(tmp_path), "--owners", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("lppf: error: ") for line in err)
