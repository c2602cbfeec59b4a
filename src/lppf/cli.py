"""The ``lppf`` command line: one sub-command per module in :mod:`lppf.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from lppf import __version__
from lppf.io import InputError

COMMANDS = ("privatize", "fit", "enron", "simulate", "evaluate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lppf", description="Locally private Bayesian Poisson factorization."
    )
    parser.add_argument("--version", action="version", version=f"lppf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"lppf.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"lppf.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point. Bad input exits with status 2 and one line ``lppf: error: ...``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"lppf: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
