"""``lppf privatize``: add two-sided geometric noise to a count matrix.

    lppf privatize INPUT.npz OUTPUT.npz (--alpha A | --epsilon E --precision N)
                   (--secure | --seed S)

The noise source is always chosen explicitly: ``--secure`` (operating-system randomness,
for real data) or ``--seed`` (reproducible, for simulations).

INPUT holds key ``Y`` (dense, or a scipy sparse matrix saved with ``scipy.sparse.save_npz``).
OUTPUT holds ``Y_noisy`` (int64), ``alpha`` and, when given, ``epsilon``, ``precision`` and
``seed``; never the true counts.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from lppf.io import (
    COUNT_LIMIT,
    InputError,
    as_count_matrix,
    check_seed,
    load_npy,
    load_npz,
    require_key,
    save_npz,
)
from lppf.mechanisms import check_alpha, epsilon_to_alpha, privatize


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "privatize",
        help="add two-sided geometric noise to counts (the data owner's step)",
        description="Privatize a count matrix with the two-sided geometric mechanism, "
        "alpha = exp(-epsilon / precision). Use --secure to release real data.",
    )
    parser.add_argument("input", metavar="INPUT", help=".npz with the count matrix under key Y")
    parser.add_argument("output", metavar="OUTPUT", help=".npz to write (Y_noisy, alpha, ...)")
    parser.add_argument("--alpha", metavar="A",
                        help="noise level in [0, 1), or a .npy file of per-row or per-cell levels")
    parser.add_argument("--epsilon", metavar="E", help="privacy level epsilon > 0")
    parser.add_argument("--precision", metavar="N",
                        help="precision N > 0: inputs within N of each other are protected")
    parser.add_argument("--seed", metavar="S",
                        help="seed for reproducible noise (simulations only)")
    parser.add_argument("--secure", action="store_true",
                        help="draw the noise from the operating system's secure generator")
    parser.set_defaults(func=run)


def _number(text: str, option: str, kind=float):
    try:
        return kind(text)
    except ValueError:
        raise InputError(f"{option}: expected a number, got {text!r}") from None


def _named(value: float, option: str) -> float:
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{option} must be finite and > 0, got {value!r}")
    return value


def _load_alpha(text: str, shape: tuple[int, int]) -> np.ndarray:
    """``--alpha``: a number, or a .npy file of per-row or per-cell values."""
    try:
        alpha = float(text)
    except ValueError:
        path = Path(text)
        if not path.is_file():
            raise InputError(f"--alpha: {text!r} is neither a number nor a file") from None
        return check_alpha(load_npy(path, "--alpha"), shape, name=f"--alpha {path}")
    return check_alpha(alpha, shape, name="--alpha")


def _options(args: argparse.Namespace) -> None:
    if (args.alpha is None) == (args.epsilon is None):
        raise InputError("give exactly one of --alpha or --epsilon (with --precision)")
    if (args.epsilon is None) != (args.precision is None):
        raise InputError("--epsilon and --precision go together")
    if args.secure and args.seed is not None:
        raise InputError("--secure noise cannot be seeded: drop --seed or --secure")


def run(args: argparse.Namespace) -> int:
    _options(args)
    out: dict[str, np.ndarray] = {}
    if args.seed is not None:
        seed = _number(args.seed, "--seed", int)
        if seed < 0:
            raise InputError(f"--seed must be >= 0, got {seed}")
        out["seed"] = np.int64(check_seed(seed, "--seed"))
    Y = as_count_matrix(require_key(load_npz(args.input), "Y", args.input),
                        name=f"{args.input}: key 'Y'")
    if Y.size == 0:
        raise InputError(f"{args.input}: key 'Y': empty matrix (shape {Y.shape}), nothing to "
                         "privatize")
    if args.alpha is not None:
        alpha = _load_alpha(args.alpha, Y.shape)
    else:
        epsilon = _number(args.epsilon, "--epsilon")
        precision = _number(args.precision, "--precision")
        alpha = check_alpha(epsilon_to_alpha(_named(epsilon, "--epsilon"),
                                              _named(precision, "--precision")), Y.shape,
                            name=f"--epsilon {epsilon:g} / --precision {precision:g}: "
                                 "alpha = exp(-epsilon / precision)")
        out.update(epsilon=np.float64(epsilon), precision=np.float64(precision))
    if "seed" not in out and not args.secure:
        raise InputError("choose the noise source: --secure (real data) or --seed S "
                         "(reproducible simulations)")
    Y_noisy = privatize(Y, alpha, rng=out.get("seed"), secure=args.secure)
    worst = int(np.abs(Y_noisy).max())
    if worst >= COUNT_LIMIT:
        raise InputError(f"{args.input}: Y plus the noise reaches {worst}, beyond the count "
                         "limit 2**31 (lower the noise level or the counts)")
    save_npz(args.output, Y_noisy=Y_noisy, alpha=np.asarray(alpha, dtype=float), **out)
    return 0
