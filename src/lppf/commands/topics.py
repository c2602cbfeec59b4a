"""``lppf topics``: the top words of each topic of a saved fit (top actors of each
community for the community model).

    lppf topics FIT [-n 10] [--vocab VOCAB.txt]

Names come from ``--vocab`` (one per line, the column order; e.g. ``lppf enron docterm``'s
``<stem>.vocab.txt``), else from the fit (the input's column names), else column numbers.
One line per component: ``k: word word ...``, largest weight first.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lppf.commands._types import positive_int
from lppf.validation import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("topics", help="top words per topic of a saved fit",
                              description=__doc__.split("\n\n")[0].strip("`"))
    p.add_argument("fit", type=Path, metavar="FIT", help="fit .npz (lppf fit)")
    p.add_argument("-n", type=positive_int, default=10, metavar="N",
                   help="words per topic (default %(default)s)")
    p.add_argument("--vocab", type=Path, metavar="VOCAB.txt",
                   help="column names, one per line")
    p.set_defaults(func=run)


def _vocabulary(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the vocabulary ({exc})") from None


def run(args: argparse.Namespace) -> int:
    from lppf.estimators import load

    model = load(args.fit)
    names = None if args.vocab is None else _vocabulary(args.vocab)
    try:
        top = model.top_words(args.n, names)
    except InputError as exc:
        raise InputError(f"{args.vocab}: {exc}") from None
    for k, words in enumerate(top):
        print(f"{k}: {' '.join(words)}")
    return 0
