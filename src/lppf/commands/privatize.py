"""``lppf privatize``: add noise to a count matrix (the data owner's step).

    lppf privatize INPUT OUTPUT.npz [--mechanism M] (--alpha A | --sigma S | --mu U |
        --epsilon E --precision N [--delta D]) [--seed S]

``--mechanism``: ``geometric`` (two-sided geometric, the default; ``--alpha``),
``discrete-gaussian`` (``--sigma``) or ``skellam`` (``--mu``, the mean of each of the two
Poisson draws); or the parameter matched to a guarantee: ``--epsilon`` and ``--precision``
(alpha = exp(-epsilon / precision) for the geometric; for the others the smallest sigma or mu
that is (epsilon, delta)-DP, ``--delta`` default 1e-6; :func:`lppf.privacy.matched_param`).
Without ``--seed`` the noise comes from the operating system's secure generator (a release
of real data; ``--secure`` says so explicitly); ``--seed`` makes it reproducible, for
simulations only. The command prints the privacy guarantee of the release.

INPUT: an ``.npz`` with key ``Y`` (dense, or a scipy sparse matrix saved with
``scipy.sparse.save_npz``), a ``.csv``/``.tsv``/``.txt`` table or a Matrix Market ``.mtx``
(:func:`lppf.io.read_counts`). OUTPUT holds ``Y_noisy`` (int64), ``mechanism``, its parameter
(``alpha``, ``sigma`` or ``mu``), ``noise`` (``secure`` or ``seeded``), ``epsilon``,
``precision`` (and ``delta``) when given, and the row and column names (``rows``,
``columns``) when INPUT has them; never the true counts nor the seed.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from lppf.io import NAME_KEYS, check_output, load_npy, noise_entries, read_counts, save_npz
from lppf.mechanisms import epsilon_to_alpha, privacy, privacy_statement, privatize
from lppf.privacy import DEFAULT_DELTA, matched_param
from lppf.validation import (
    COUNT_LIMIT,
    MECHANISMS,
    NOISE_PARAMS,
    InputError,
    as_count_matrix,
    check_noise,
    check_seed,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "privatize",
        help="add noise to counts (the data owner's step)",
        description="Privatize a count matrix with the two-sided geometric mechanism "
        "(alpha = exp(-epsilon / precision)), the discrete Gaussian or Skellam noise. The "
        "noise is secure (operating-system randomness) unless --seed is given.",
    )
    parser.add_argument("input", metavar="INPUT",
                        help=".npz (key Y), .csv, .tsv, .txt or .mtx count matrix")
    parser.add_argument("output", metavar="OUTPUT", help=".npz to write (Y_noisy, alpha, ...)")
    parser.add_argument("--mechanism", choices=MECHANISMS, default="geometric",
                        help="the noise (default %(default)s)")
    parser.add_argument("--alpha", metavar="A",
                        help="geometric noise level in [0, 1), or a .npy file of per-row or "
                             "per-cell levels")
    parser.add_argument("--sigma", metavar="S",
                        help="discrete Gaussian parameter >= 0 (or a .npy file)")
    parser.add_argument("--mu", metavar="U",
                        help="Skellam: mean >= 0 of each Poisson draw, variance 2 mu "
                             "(or a .npy file)")
    parser.add_argument("--epsilon", metavar="E", help="privacy level epsilon > 0")
    parser.add_argument("--delta", metavar="D",
                        help=f"with --epsilon, discrete Gaussian and Skellam: delta in (0, 1) "
                             f"(default {DEFAULT_DELTA:g})")
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


def _load_param(mechanism: str, text: str, shape: tuple[int, int]) -> np.ndarray:
    """``--alpha``, ``--sigma`` or ``--mu``: a number, or a .npy file of per-row or per-cell
    values."""
    option = "--" + NOISE_PARAMS[mechanism]
    try:
        value = float(text)
    except ValueError:
        path = Path(text)
        if not path.is_file():
            raise InputError(f"{option}: {text!r} is neither a number nor a file") from None
        return check_noise(mechanism, load_npy(path, option), shape, name=f"{option} {path}")
    return check_noise(mechanism, value, shape, name=option)


def _options(args: argparse.Namespace) -> int | None:
    """Check the options; return the seed (None: secure noise)."""
    mine = NOISE_PARAMS[args.mechanism]
    for name in NOISE_PARAMS.values():
        if name != mine and getattr(args, name) is not None:
            raise InputError(f"--{name} belongs to another mechanism: --mechanism "
                             f"{args.mechanism} takes --{mine} (or --epsilon with --precision)")
    if (getattr(args, mine) is None) == (args.epsilon is None):
        raise InputError(f"give exactly one of --{mine} or --epsilon (with --precision)")
    if (args.epsilon is None) != (args.precision is None):
        raise InputError("--epsilon and --precision go together")
    if args.delta is not None and (args.epsilon is None or args.mechanism == "geometric"):
        raise InputError("--delta goes with --epsilon, for the discrete-gaussian and skellam "
                         "mechanisms (the geometric one has delta = 0)")
    if args.secure and args.seed is not None:
        raise InputError("--secure noise cannot be seeded: drop --seed or --secure")
    if args.seed is None:
        return None
    seed = _number(args.seed, "--seed", int)
    if seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}")
    return check_seed(seed, "--seed")


def _matched(args: argparse.Namespace, shape: tuple[int, int], out: dict) -> np.ndarray:
    """The parameter matched to ``--epsilon``, ``--precision`` (and ``--delta``)."""
    epsilon = _named(_number(args.epsilon, "--epsilon"), "--epsilon")
    precision = _named(_number(args.precision, "--precision"), "--precision")
    out.update(epsilon=np.float64(epsilon), precision=np.float64(precision))
    if args.mechanism == "geometric":
        return check_noise("geometric", epsilon_to_alpha(epsilon, precision), shape,
                           name=f"--epsilon {epsilon:g} / --precision {precision:g}: "
                                "alpha = exp(-epsilon / precision)")
    delta = DEFAULT_DELTA if args.delta is None else _number(args.delta, "--delta")
    if not 0 < delta < 1:
        raise InputError(f"--delta must lie in (0, 1), got {delta!r}")
    out["delta"] = np.float64(delta)
    param = matched_param(args.mechanism, epsilon, delta, precision)
    return check_noise(args.mechanism, param, shape,
                       name=f"--epsilon {epsilon:g} / --delta {delta:g} / --precision "
                            f"{precision:g}: {NOISE_PARAMS[args.mechanism]}")


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
    mechanism, name = args.mechanism, NOISE_PARAMS[args.mechanism]
    if getattr(args, name) is not None:
        param = _load_param(mechanism, getattr(args, name), Y.shape)
    else:
        param = _matched(args, Y.shape, out)
    Y_noisy, info = privatize(Y, rng=seed, return_info=True, mechanism=mechanism,
                              **{name: param})
    worst = int(np.abs(Y_noisy).max())
    if worst >= COUNT_LIMIT:
        raise InputError(f"{args.input}: Y plus the noise reaches {worst}, beyond the count "
                         "limit 2**31 (lower the noise level or the counts)")
    save_npz(args.output, Y_noisy=Y_noisy, **noise_entries(mechanism, param),
             noise=np.array(info["source"]), **out, **names)
    if mechanism == "geometric":
        statement = privacy_statement(param, out.get("epsilon"), out.get("precision"))
    else:
        statement = privacy(mechanism, param, out.get("precision", 1.0),
                            out.get("delta"))["statement"]
    noise = ("secure (operating-system randomness, " + info["sampler"] + " sampler)"
             if seed is None else "seeded: reproducible, for simulations only, not a release")
    print(f"{args.output}: {statement}; noise {noise}", file=sys.stderr)
    return 0
