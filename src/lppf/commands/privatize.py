"""``lppf privatize``: add two-sided geometric noise to a count matrix.

    lppf privatize INPUT OUTPUT.npz (--alpha A | --epsilon E --precision N) [--seed S]

Without ``--seed`` the noise comes from the operating system's secure generator (a release
of real data; ``--secure`` says so explicitly); ``--seed`` makes it reproducible, for
simulations only. The command prints the privacy guarantee of the release.

INPUT: an ``.npz`` with key ``Y`` (dense, or a scipy sparse matrix saved with
``scipy.sparse.save_npz``), a ``.csv``/``.tsv``/``.txt`` table or a Matrix Market ``.mtx``
(:func:`lppf.io.read_counts`). OUTPUT holds ``Y_noisy`` (int64), ``alpha``, ``noise``
(``secure`` or ``seeded``), ``epsilon`` and ``precision`` when given, and the row and column
names (``rows``, ``columns``) when INPUT has them; never the true counts nor the seed.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from lppf.io import NAME_KEYS, check_output, load_npy, read_counts, save_npz
from lppf.mechanisms import epsilon_to_alpha, privacy_statement, privatize
from lppf.validation import COUNT_LIMIT, InputError, as_count_matrix, check_alpha, check_seed


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "privatize",
        help="add two-sided geometric noise to counts (the data owner's step)",
        description="Privatize a count matrix with the two-sided geometric mechanism, "
        "alpha = exp(-epsilon / precision). The noise is secure (operating-system "
        "randomness) unless --seed is given.",
    )
    parser.add_argument("input", metavar="INPUT",
                        help=".npz (key Y), .csv, .tsv, .txt or .mtx count matrix")
    parser.add_argument("output", metavar="OUTPUT", help=".npz to write (Y_noisy, alpha, ...)")
    parser.add_argument("--alpha", metavar="A",
                        help="noise level in [0, 1), or a .npy file of per-row or per-cell levels")
    parser.add_argument("--epsilon", metavar="E", help="privacy level epsilon > 0")
    parser.add_argument("--precision", metavar="N",
                        help="precision N > 0: inputs within N of each other are protected")
    parser.add_argument("--seed", metavar="S",
                        help="seed for reproducible noise (simulations only; not stored)")
    parser.add_argument("--secure", action="store_true",
                        help="secure noise from the operating system (the default)")
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


def _options(args: argparse.Namespace) -> int | None:
    """Check the options; return the seed (None: secure noise)."""
    if (args.alpha is None) == (args.epsilon is None):
        raise InputError("give exactly one of --alpha or --epsilon (with --precision)")
    if (args.epsilon is None) != (args.precision is None):
        raise InputError("--epsilon and --precision go together")
    if args.secure and args.seed is not None:
        raise InputError("--secure noise cannot be seeded: drop --seed or --secure")
    if args.seed is None:
        return None
    seed = _number(args.seed, "--seed", int)
    if seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}")
    return check_seed(seed, "--seed")


def _counts(path: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    data = read_counts(path)
    key = "Y" if "Y" in data or "counts" not in data else "counts"
    if key not in data:
        found = ", ".join(sorted(data)) or "none"
        raise InputError(f"{path}: missing key 'Y' (found: {found})")
    Y = as_count_matrix(data[key], name=f"{path}: key {key!r}" if key == "Y" else path)
    if Y.size == 0:
        raise InputError(f"{path}: empty matrix (shape {Y.shape}), nothing to privatize")
    names = {k: data[k] for k in NAME_KEYS if k in data}
    return Y, names


def run(args: argparse.Namespace) -> int:
    seed = _options(args)
    check_output(args.output)
    Y, names = _counts(args.input)
    out: dict[str, np.ndarray] = {}
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
    Y_noisy, info = privatize(Y, alpha, rng=seed, return_info=True)
    worst = int(np.abs(Y_noisy).max())
    if worst >= COUNT_LIMIT:
        raise InputError(f"{args.input}: Y plus the noise reaches {worst}, beyond the count "
                         "limit 2**31 (lower the noise level or the counts)")
    save_npz(args.output, Y_noisy=Y_noisy, alpha=np.asarray(alpha, dtype=float),
             noise=np.array(info["source"]), **out, **names)
    statement = privacy_statement(alpha, out.get("epsilon"), out.get("precision"))
    noise = ("secure (operating-system randomness, " + info["sampler"] + " sampler)"
             if seed is None else "seeded: reproducible, for simulations only, not a release")
    print(f"{args.output}: {statement}; noise {noise}", file=sys.stderr)
    return 0
