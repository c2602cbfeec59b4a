"""``lppf enron``: download the corpus, build the network and document-term matrices.

Outputs of ``network OUTPUT.npz``: ``Y`` (V x V) and the actors' addresses (``rows``,
``columns``) in OUTPUT.npz, ``<stem>.actors.csv`` and ``<stem>.summary.csv``. Outputs of
``docterm OUTPUT.npz``: ``Y`` (D x V) and the vocabulary (``columns``), ``<stem>.vocab.txt``,
``<stem>.documents.csv`` and ``<stem>.summary.csv``; ``<stem>`` is OUTPUT without ``.npz``.
The outputs of one run are written all or none.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from lppf.commands._types import fraction, nonnegative_int, positive_int, seed
from lppf.enron.parse import EXCLUDED_FOLDERS, SENT_FOLDERS, Corpus, read_corpus
from lppf.enron.source import CMU_SHA256, CMU_SIZE, CMU_URL, download, is_url, resolve
from lppf.io import check_output, npz_writer, text_writer, write_files
from lppf.validation import InputError


def _stem(output: str, *suffixes: str) -> Path:
    """OUTPUT without ``.npz``, once OUTPUT and ``<stem><suffix>`` are found writable."""
    path = Path(output)
    if path.suffix != ".npz":
        raise InputError(f"{output}: output must end in .npz")
    for name in (output, *(f"{path.with_suffix('')}{s}" for s in suffixes)):
        check_output(name)
    return path.with_suffix("")


def _folders(text: str) -> list[str]:
    return [f.strip() for f in text.split(",") if f.strip()]


def _summary_csv(*counters: Counter[str]) -> str:
    rows = [(k, v) for c in counters for k, v in c.items()]
    return pd.DataFrame(rows, columns=["item", "count"]).to_csv(index=False)


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars only on a terminal (logs and error output stay clean)."""
    return not args.quiet and sys.stderr.isatty()


def _read(args: argparse.Namespace, keep_body) -> Corpus:
    download_dir = args.download_dir or Path(args.output).parent
    path = resolve(args.source, download_dir, args.sha256, args.size, _progress(args))
    return read_corpus(path, _folders(args.exclude_folders), keep_body, _progress(args))


# network, docterm and synth (gensim) are imported when run, so other commands start fast.
def run_network(args: argparse.Namespace) -> int:
    from lppf.enron.network import build_network

    stem = _stem(args.output, ".actors.csv", ".summary.csv")
    corpus = _read(args, lambda raw: False)
    Y_VV, actors = build_network(corpus.emails, args.min_sent, args.min_total, args.top_actors)
    if Y_VV.shape[0] < 2:
        raise InputError(f"{args.source}: {Y_VV.shape[0]} actor(s) pass --min-sent "
                         f"{args.min_sent} and --min-total {args.min_total}; need at least 2")
    if args.top_actors and Y_VV.shape[0] < args.top_actors:
        print(f"{args.output}: only {Y_VV.shape[0]} actors pass the thresholds "
              f"(--top-actors {args.top_actors})", file=sys.stderr)
    summary = Counter({"actors": Y_VV.shape[0], "sender-recipient counts in Y": int(Y_VV.sum())})
    write_files([(f"{stem}.actors.csv", text_writer(actors.to_csv(index=False))),
                 (f"{stem}.summary.csv", text_writer(_summary_csv(corpus.summary, summary))),
                 (args.output, npz_writer(Y=Y_VV, rows=_addresses(actors),
                                          columns=_addresses(actors)))])
    print(f"{args.output}: {Y_VV.shape[0]} actors, {int(Y_VV.sum())} sender-recipient counts")
    return 0


def _addresses(actors) -> np.ndarray:
    """The actors' addresses in row order (names that travel with Y to fits and topics)."""
    return actors["address"].to_numpy(dtype=str)


def run_docterm(args: argparse.Namespace) -> int:
    try:
        from lppf.enron.docterm import EMPTIED, LONG_DOCUMENTS, build_docterm
    except ImportError as exc:
        raise InputError(f"enron docterm needs gensim and nltk ({exc}): "
                         "pip install 'lppf[enron]'") from None

    stem = _stem(args.output, ".vocab.txt", ".documents.csv", ".summary.csv")
    corpus = _read(args, lambda raw: raw.folder.split("/", 1)[0] in SENT_FOLDERS)
    Y_DV, vocab, documents, summary = build_docterm(
        corpus.emails, args.n_docs, args.n_words, args.min_tokens, args.max_df, args.min_df,
        args.seed)
    if Y_DV.size == 0:
        raise InputError(f"{args.source}: no document is left after the vocabulary "
                         f"(D x V = {Y_DV.shape[0]} x {Y_DV.shape[1]})")
    if Y_DV.shape[0] < args.n_docs or Y_DV.shape[1] < args.n_words:
        print(f"{args.output}: only {Y_DV.shape[0]} documents x {Y_DV.shape[1]} words "
              f"(--n-docs {args.n_docs}, --n-words {args.n_words}): {args.source} has "
              f"{summary[LONG_DOCUMENTS.format(args.min_tokens)]} authored emails "
              f"with >= {args.min_tokens} tokens, of which {summary[EMPTIED]} sampled were "
              "left empty by the vocabulary", file=sys.stderr)
    write_files([(f"{stem}.vocab.txt", text_writer("".join(f"{w}\n" for w in vocab))),
                 (f"{stem}.documents.csv", text_writer(documents.to_csv(index=False))),
                 (f"{stem}.summary.csv", text_writer(_summary_csv(corpus.summary, summary))),
                 (args.output, npz_writer(Y=Y_DV, columns=np.array(vocab, dtype=str)))])
    print(f"{args.output}: {Y_DV.shape[0]} documents x {Y_DV.shape[1]} words")
    return 0


def run_download(args: argparse.Namespace) -> int:
    if len(args.paths) > 2:
        raise InputError("download takes [URL] OUTPUT")
    url, output = (CMU_URL, args.paths[0]) if len(args.paths) == 1 else args.paths
    if not is_url(url):
        raise InputError(f"{url}: not a URL (http:// or https://)")
    path = download(url, output, args.sha256, args.size, _progress(args))
    print(f"{path}: {path.stat().st_size} bytes")
    if args.sha256 is None:
        print(f"warning: {path}: not verified, no --sha256 given (CMU publishes no checksum)",
              file=sys.stderr)
    return 0


def run_synth(args: argparse.Namespace) -> int:
    try:
        from lppf.enron.synth import write_synthetic_maildir
    except ImportError as exc:
        raise InputError(f"enron synth-maildir needs gensim ({exc}): "
                         "pip install 'lppf[enron]'") from None

    truth = write_synthetic_maildir(args.output_dir, args.seed, args.people, args.owners,
                                    args.emails, args.topics, args.words_per_topic)
    print(f"{args.output_dir}: synthetic maildir, {truth.n_emails} emails in "
          f"{truth.n_files} files")
    return 0


def _source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="SOURCE",
                   help="URL of the corpus tarball, a local tarball, or a maildir/ directory")
    p.add_argument("output", metavar="OUTPUT", help="output .npz")
    p.add_argument("--exclude-folders", default=",".join(sorted(EXCLUDED_FOLDERS)),
                   help="comma-separated top-level folders to skip (default: %(default)s)")
    p.add_argument("--download-dir", help="where a URL SOURCE is saved (default: OUTPUT's)")
    _verify_options(p)


def _verify_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sha256", default=CMU_SHA256, help="expected SHA-256 of a download")
    p.add_argument("--size", type=positive_int, default=CMU_SIZE, help="expected size in bytes")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def register(subparsers) -> None:
    enron = subparsers.add_parser("enron", help="Enron corpus: download and count matrices")
    sub = enron.add_subparsers(dest="enron_command", required=True, metavar="ACTION")

    p = sub.add_parser("network", help="sender-recipient count matrix Y (V x V)")
    _source_options(p)
    p.add_argument("--min-sent", type=nonnegative_int, default=1,
                   help="keep actors who sent >= this")
    p.add_argument("--min-total", type=nonnegative_int, default=100,
                   help="... and sent + received >= this (default: %(default)s)")
    p.add_argument("--top-actors", type=positive_int, default=None, metavar="N",
                   help="then keep the N most active of them (sent + received; default all)")
    p.set_defaults(func=run_network)

    p = sub.add_parser("docterm", help="document-term count matrix Y (D x V)")
    _source_options(p)
    p.add_argument("--n-docs", type=positive_int, default=1000,
                   help="documents D (default: %(default)s)")
    p.add_argument("--n-words", type=positive_int, default=1400,
                   help="vocabulary V (default: %(default)s)")
    p.add_argument("--min-tokens", type=nonnegative_int, default=50,
                   help="tokens per document, at least")
    p.add_argument("--max-df", type=fraction, default=0.3, help="max document frequency fraction")
    p.add_argument("--min-df", type=positive_int, default=2, help="min document frequency (count)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the document sample")
    p.set_defaults(func=run_docterm)

    p = sub.add_parser("download", help="resumable, verified download of the corpus tarball")
    p.add_argument("paths", nargs="+", metavar="[URL] OUTPUT",
                   help=f"URL (default {CMU_URL}) and output file")
    _verify_options(p)
    p.set_defaults(func=run_download)

    p = sub.add_parser("synth-maildir", help="write a small synthetic maildir (offline stand-in)")
    p.add_argument("output_dir", metavar="OUTPUT_DIR")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--people", type=positive_int, default=40)
    p.add_argument("--owners", type=positive_int, default=10, help="people with a mailbox")
    p.add_argument("--emails", type=positive_int, default=2000, help="unique emails")
    p.add_argument("--topics", type=positive_int, default=6)
    p.add_argument("--words-per-topic", type=positive_int, default=50)
    p.set_defaults(func=run_synth)
