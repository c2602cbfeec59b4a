"""Options of ``lppf enron``: the network's --top-actors cut, the notice of a document-term
matrix smaller than asked for and the download's verification notice."""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from lppf.cli import main
from lppf.enron.network import build_network
from lppf.enron.parse import read_corpus
from lppf.enron.synth import write_synthetic_maildir
from lppf.validation import InputError


@pytest.fixture(scope="module")
def maildir(tmp_path_factory):
    path = tmp_path_factory.mktemp("synth") / "m"
    write_synthetic_maildir(path, seed=0, people=40, owners=10, emails=300)
    return path


def test_top_actors_keeps_the_most_active_block_of_the_full_network(maildir):
    emails = read_corpus(maildir).emails
    Y_all, all_actors = build_network(emails, min_sent=1, min_total=0)
    Y_top, top = build_network(emails, min_sent=1, min_total=0, top_actors=12)
    assert Y_top.shape == (12, 12) and len(Y_all) > 12
    np.testing.assert_array_equal(Y_top, Y_all[:12, :12])
    assert list(top["address"]) == list(all_actors["address"][:12])
    total = top["sent"] + top["received"]
    assert (np.diff(total.to_numpy()) <= 0).all()  # most active first
    assert total.min() >= (all_actors["sent"] + all_actors["received"])[12:].max()
    # more than there are: every actor, as without the option
    np.testing.assert_array_equal(build_network(emails, 1, 0, top_actors=10_000)[0], Y_all)
    with pytest.raises(InputError, match="top_actors"):
        build_network(emails, 1, 0, top_actors=0)


def test_cli_top_actors_sets_the_size_and_refuses_zero(maildir, tmp_path, capsys):
    out = tmp_path / "net.npz"
    assert main(["enron", "network", str(maildir), str(out), "--min-total", "0",
                 "--top-actors", "15", "--quiet"]) == 0
    with np.load(out) as data:
        assert data["Y"].shape == (15, 15)
    capsys.readouterr()
    assert main(["enron", "network", str(maildir), str(tmp_path / "b.npz"),
                 "--top-actors", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--top-actors" in err[0] and not (tmp_path / "b.npz").exists()


def test_docterm_says_in_one_line_when_the_source_has_fewer_documents(maildir, tmp_path,
                                                                     capsys):
    out = tmp_path / "dt.npz"
    assert main(["enron", "docterm", str(maildir), str(out), "--n-docs", "10000",
                 "--n-words", "40", "--min-tokens", "5", "--quiet"]) == 0
    with np.load(out) as data:
        D, V = data["Y"].shape
    err = capsys.readouterr().err.strip().splitlines()
    assert V == 40 and D < 10000
    assert len(err) == 1 and f"only {D} documents" in err[0] and "--n-docs 10000" in err[0]
    assert main(["enron", "docterm", str(maildir), str(tmp_path / "b.npz"), "--n-docs", "20",
                 "--n-words", "40", "--min-tokens", "5", "--quiet"]) == 0
    with np.load(tmp_path / "b.npz") as data:
        assert data["Y"].shape == (20, 40)
    assert capsys.readouterr().err == ""  # all it asked for: no notice


def test_download_without_a_checksum_says_in_one_line_that_it_is_unverified(tmp_path, capsys,
                                                                          monkeypatch):
    from lppf.commands import enron as command

    def fake_download(url, dest, sha256, size, progress):  # the transfer is tested elsewhere
        Path(dest).write_bytes(b"corpus bytes")
        return Path(dest)

    monkeypatch.setattr(command, "download", fake_download)
    url = "https://example.org/enron.tar.gz"
    assert main(["enron", "download", url, str(tmp_path / "a.bin"), "--quiet"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not verified" in err[0] and "a.bin" in err[0]
    sha = hashlib.sha256(b"corpus bytes").hexdigest()
    assert main(["enron", "download", url, str(tmp_path / "b.bin"), "--sha256", sha,
                 "--quiet"]) == 0
    assert "not verified" not in capsys.readouterr().err
