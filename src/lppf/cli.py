"""The ``lppf`` command line: one sub-command per module in :mod:`lppf.commands`.

Only the module of the sub-command being run is imported, so ``lppf fit`` does not pay for
pandas, gensim or matplotlib. Bad input of any kind (options, files, values) prints one line
``lppf: error: ...`` and exits with status 2; an interrupt (Ctrl-C) prints one line and exits
with status 130. Outputs are written atomically, so neither leaves a file behind.

An interrupt is raised again every half second until the command has stopped: Python drops
an exception raised inside a destructor or a callback from C, and numba runs such callbacks
(llvmlite's) while it compiles or loads its cache, which would otherwise leave an interrupted
command running.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

import lppf

COMMANDS = ("privatize", "fit", "transform", "topics", "enron", "simulate", "evaluate")
RETRY_S = 0.5  # seconds between deliveries of one interrupt


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`InputError` (one line, no usage block)."""

    def error(self, message: str):
        from lppf.validation import InputError

        where = self.prog.removeprefix("lppf").strip()
        raise InputError(f"{where}: {message}" if where else message)


class _Version(argparse.Action):
    """``--version``: the package version is looked up only when asked for."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"lppf {lppf.__version__}")
        parser.exit()


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser with the given sub-commands registered (each imports its module)."""
    parser = Parser(prog="lppf", description="Locally private Bayesian Poisson factorization.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in commands:
        importlib.import_module(f"lppf.commands.{name}").register(sub)
    return parser


def _requested(argv: Sequence[str]) -> tuple[str, ...]:
    """The sub-command named in ``argv`` if there is a valid one, else all of them."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return (first,) if first in COMMANDS else COMMANDS


def _check_environment() -> None:
    """``NUMBA_NUM_THREADS``, read by numba on import, must be a positive integer if set."""
    from lppf.validation import InputError

    value = os.environ.get("NUMBA_NUM_THREADS")
    if value is not None and not (value.strip().isdecimal() and int(value) >= 1):
        raise InputError(f"environment variable NUMBA_NUM_THREADS={value!r}: expected an "
                         "integer >= 1 (or unset it to use every cpu)")


def _interrupting() -> bool:
    """Whether a KeyboardInterrupt is being handled (in an ``except``, ``finally`` or
    ``__exit__`` on its way out), also as the context of another exception."""
    exc = sys.exc_info()[1]
    while exc is not None and not isinstance(exc, KeyboardInterrupt):
        exc = exc.__context__
    return exc is not None


@contextmanager
def interrupts() -> Iterator[None]:
    """Run the block with SIGINT raising KeyboardInterrupt in the main thread again every
    :data:`RETRY_S` seconds until the block has ended, unless one is already on its way out;
    an interrupt that Python drops prints no traceback. Outside the main thread, or where
    SIGINT is not Python's default (ignored, or another handler), the block runs as it is."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    done, main, watchdog = threading.Event(), threading.get_ident(), []

    def deliver_again() -> None:
        while not done.wait(RETRY_S):
            signal.pthread_kill(main, signal.SIGINT)

    def handler(signum, frame) -> None:
        if _interrupting():
            return
        if not watchdog:
            watchdog.append(threading.Thread(target=deliver_again, daemon=True))
            watchdog[0].start()
        raise KeyboardInterrupt

    def unraisable(info) -> None:  # a dropped interrupt is delivered again: no traceback
        if not isinstance(info.exc_value, KeyboardInterrupt):
            previous_hook(info)

    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        done.set()
        for thread in watchdog:
            thread.join()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = previous_hook


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point. Bad input exits with status 2 and one line ``lppf: error: ...``."""
    try:  # numpy and the commands are imported in here: Ctrl-C while they load is one line
        with interrupts():
            argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
            from lppf.validation import InputError

            _check_environment()
            args = build_parser(_requested(argv)).parse_args(argv)
            return int(args.func(args) or 0)
    except KeyboardInterrupt:  # first: InputError is unbound if it came during the import
        print("lppf: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("lppf: error: out of memory (the problem is too large for this machine)",
              file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"lppf: error: {exc}", file=sys.stderr)
        return 2


def run() -> None:
    """Console entry point (``lppf``, ``python -m lppf``): :func:`main`, then exit.

    The garbage collector's generations are frozen before and after the command: the cyclic
    collections at interpreter exit over numba's typing and compiler objects otherwise cost
    more than a whole small fit (``bench/bench_startup.py``). Frozen objects are still freed
    by reference counting; files are closed by the commands themselves.

    An interrupted command exits at once with status 130: CPython would otherwise exit by
    SIGINT if a KeyboardInterrupt ever passed through ``exec()`` or ``eval()``, even one
    caught since (as scipy's imports do, when Ctrl-C comes while numba loads them)."""
    gc.freeze()
    code = main()
    gc.freeze()
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):  # a closed pipe or stream
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
