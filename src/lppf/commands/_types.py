"""Argument types of the sub-commands: a bad value is a one-line error naming the option."""

from __future__ import annotations

import argparse
import math

from lppf.validation import SEED_LIMIT


def _number(kind, text: str):
    try:
        value = kind(text)
    except (TypeError, ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}"
                                         f", got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def seed(text: str) -> int:
    """A seed: an integer in [0, 2**63)."""
    value = _number(int, text)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"a seed must lie in [0, 2**63), got {text}")
    return value


def positive_int(text: str) -> int:
    value = _number(int, text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


def nonnegative_int(text: str) -> int:
    value = _number(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(float, text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def open_unit(text: str) -> float:
    """A number strictly between 0 and 1."""
    value = _number(float, text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text}")
    return value


def fraction(text: str) -> float:
    """A number in (0, 1]."""
    value = _number(float, text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1], got {text}")
    return value
