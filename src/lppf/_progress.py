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

    def grow(self, n: int) -> None:
        pass


class _Bar:
    """tqdm's bar, whose total can grow (an MCMC fit extended past its schedule)."""

    def __init__(self, bar):
        self.bar = bar

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def set_postfix(self, **kwargs) -> None:
        self.bar.set_postfix(**kwargs)

    def grow(self, n: int) -> None:
        self.bar.total += n
        self.bar.refresh()


def progress_bar(total: int, progress: bool, desc: str):
    """A tqdm bar of ``total`` iterations named ``desc`` on stderr, or a silent stand-in."""
    if not progress:
        return _NoBar()
    from tqdm import tqdm

    return _Bar(tqdm(total=total, file=sys.stderr, unit="it", desc=desc))
