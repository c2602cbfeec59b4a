"""The progress bar of the MCMC and CAVI loops: tqdm on stderr, imported only when a bar is
shown (``lppf fit --quiet`` and the workflow's jobs never load it)."""

from __future__ import annotations

import sys


class _NoBar:
    """The progress bar when none is shown."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, **kwargs) -> None:
        pass


def progress_bar(total: int, progress: bool, desc: str):
    """A tqdm bar of ``total`` iterations named ``desc`` on stderr, or a silent stand-in."""
    if not progress:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="it", desc=desc)
