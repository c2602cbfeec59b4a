"""``lppf simulate``: ground truth, noise levels and masks for the experiments.

Truth files are ``.npz`` with ``Y`` (true counts), ``mu`` (true rates), the factors and ``seed``.
"""

from __future__ import annotations

import os

import numpy as np

from lppf import synthetic
from lppf.commands import _types
from lppf.io import load_npz, require_key, save_npy, save_npz
from lppf.validation import InputError, as_count_matrix, check_alpha


def _rng(args) -> np.random.Generator:
    return np.random.default_rng(args.seed)


def _check_size(options: str, cells: int) -> None:
    """Refuse sizes whose dense arrays (``cells`` entries) cannot fit in this machine's memory."""
    need = 24.0 * cells
    have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if need > have:
        raise InputError(f"{options}: {cells} cells need about {need / 2**30:.3g} GiB, more "
                         f"than this machine's {have / 2**30:.3g} GiB")


def _generate(make, *args):
    """Run a generator; numpy's refusals (rates too large, ...) become one-line errors."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            truth = make(*args)
    except (ValueError, OverflowError) as exc:
        raise InputError(f"cannot simulate with these settings ({exc}): lower --shape, --rate "
                         "or the sizes") from None
    as_count_matrix(truth["Y"], "simulated counts Y (lower --shape, --rate or the sizes)")
    return truth


def _save_truth(args, truth: dict) -> int:
    save_npz(args.output, seed=np.int64(args.seed), **truth)
    print(f"{args.output}: Y {truth['Y'].shape}, mean count {truth['Y'].mean():.3f}")
    return 0


def _pmf(args) -> int:
    _check_size("--rows x --cols", args.rows * args.cols)
    _check_size("--components x (--rows + --cols)", args.components * (args.rows + args.cols))
    return _save_truth(args, _generate(synthetic.pmf_truth, _rng(args), args.rows, args.cols,
                                       args.components, args.shape, args.rate))


def _blocks(args) -> int:
    if args.topics < 2:
        raise InputError(f"--topics must be >= 2, got {args.topics}")
    _check_size("--topics, --docs-per-topic, --words-per-topic",
                args.topics**2 * args.docs_per_topic * args.words_per_topic)
    return _save_truth(args, _generate(
        synthetic.blocks_truth, _rng(args), args.topics, args.docs_per_topic,
        args.words_per_topic, args.doc_length))


def _community(args) -> int:
    _check_size("--actors x --actors", args.actors**2)
    _check_size("--communities x (--actors + --communities)",
                args.communities * (args.actors + args.communities))
    return _save_truth(args, _generate(synthetic.community_truth, _rng(args), args.actors,
                                       args.communities, args.shape, args.rate))


def _rescale(args) -> int:
    ref = load_npz(args.reference)
    other = "phi" if args.model == "pmf" else "pi"
    factors = {k: require_key(ref, k, args.reference) for k in ("theta", other)}
    theta, rest = (np.asarray(factors[k]) for k in ("theta", other))
    K = theta.shape[1] if theta.ndim == 2 else -1
    want = (K, rest.shape[-1]) if args.model == "pmf" else (K, K)
    if (theta.ndim != 2 or rest.ndim != 2 or rest.shape[0] != K or rest.shape != want
            or theta.dtype.kind not in "iuf" or rest.dtype.kind not in "iuf"
            or not (np.all(np.isfinite(theta)) and np.all(np.isfinite(rest)))):
        raise InputError(f"{args.reference}: theta {theta.shape} and {other} {rest.shape} are "
                         f"not finite factors of a {args.model} model")
    if args.components is not None and args.components > factors["theta"].shape[1]:
        raise InputError(f"--components {args.components}: {args.reference} has only "
                         f"{factors['theta'].shape[1]}")
    return _save_truth(args, _generate(synthetic.rescaled_truth, _rng(args), args.model,
                                       factors, args.e0, args.f0, args.components))


def _true_counts(path) -> np.ndarray:
    Y = as_count_matrix(require_key(load_npz(path), "Y", path), name=f"{path}: Y")
    if Y.size == 0:
        raise InputError(f"{path}: Y: empty matrix (shape {Y.shape})")
    return Y


def _noise_level(args) -> int:
    Y = _true_counts(args.truth)
    if args.beta_mean is not None:
        options = f"--beta-mean {args.beta_mean:g} --concentration {args.concentration:g}"
        try:
            alpha = synthetic.beta_alphas(_rng(args), Y.shape[0], args.beta_mean,
                                          args.concentration)
        except ValueError as exc:  # a Beta parameter that underflows to 0
            raise InputError(f"{options}: no Beta distribution ({exc})") from None
    else:
        try:
            alpha = synthetic.mean_precision_alpha(Y, args.epsilon)
        except ValueError as exc:
            raise InputError(f"{args.truth}: {exc}") from None
        options = f"--epsilon {args.epsilon:g} (precision = mean count of {args.truth})"
    check_alpha(alpha, name=f"{options}: the noise level alpha")
    save_npy(args.output, alpha)
    print(f"{args.output}: alpha shape {alpha.shape}, mean {alpha.mean():.4f}")
    return 0


def _mask(args) -> int:
    Y = _true_counts(args.truth)
    if Y.shape[0] != Y.shape[1]:
        raise InputError(f"{args.truth}: Y: a mask of top actors needs a square matrix, "
                         f"got shape {Y.shape}")
    mask = synthetic.top_actor_mask(Y, args.top, args.fraction, _rng(args))
    save_npy(args.output, mask)
    print(f"{args.output}: {mask.sum()} of {mask.size} cells held out")
    return 0


def _factor(args) -> int:
    array = require_key(load_npz(args.truth), args.name, args.truth)
    if np.asarray(array).dtype.kind not in "biuf":
        raise InputError(f"{args.truth}: key {args.name!r} is not a numeric array")
    save_npy(args.output, array)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("simulate", help="make ground truth, noise levels and masks",
                              description=__doc__)
    sub = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    pos_int, pos_float = _types.positive_int, _types.positive_float
    TRUTH = ("truth", "truth .npz with the true counts Y")

    def add(name, func, help_, source=None):
        q = sub.add_parser(name, help=help_, description=help_)
        if source:
            q.add_argument(source[0], help=source[1])
        q.add_argument("output")
        q.add_argument("--seed", type=_types.seed, default=0, help="random seed (default 0)")
        q.set_defaults(func=func)
        return q

    q = add("pmf", _pmf, "theta, phi ~ Gamma(shape, rate), y ~ Pois(theta phi)")
    q.add_argument("--rows", type=pos_int, required=True)
    q.add_argument("--cols", type=pos_int, required=True)
    q.add_argument("--components", type=pos_int, required=True)
    q.add_argument("--shape", type=pos_float, default=0.25, help="gamma shape (default 0.25)")
    q.add_argument("--rate", type=pos_float, default=0.25,
                   help="gamma rate (default 0.25: the papers' Gamma(0.25, 4) read as scale 4)")

    q = add("blocks", _blocks, "well-separated topics and document groups (S2)")
    q.add_argument("--topics", type=pos_int, default=3)
    q.add_argument("--docs-per-topic", type=pos_int, default=30)
    q.add_argument("--words-per-topic", type=pos_int, default=5)
    q.add_argument("--doc-length", type=pos_float, default=50.0)

    q = add("community", _community, "theta, pi ~ Gamma(shape, rate), y_ij ~ Pois(mu_ij)")
    q.add_argument("--actors", type=pos_int, required=True)
    q.add_argument("--communities", type=pos_int, required=True)
    q.add_argument("--shape", type=pos_float, default=0.2,
                   help="gamma shape (default 0.2: the printed 0.01 gives an all-zero network)")
    q.add_argument("--rate", type=pos_float, default=0.5, help="gamma rate (default 0.5)")

    q = add("rescale", _rescale, "rescale a reference fit by gamma ~ Gamma(e0 f0, f0) (E1, E2)",
            ("reference", "fit .npz with theta and phi (pmf) or pi (community)"))
    q.add_argument("--model", choices=("pmf", "community"), required=True)
    q.add_argument("--e0", type=pos_float, required=True)
    q.add_argument("--f0", type=pos_float, required=True)
    q.add_argument("--components", type=pos_int, default=None,
                   help="keep only this many most used components (default all)")

    q = add("noise-level", _noise_level, "alpha as .npy: per-row Beta draws or exp(-eps/mean y)",
            source=TRUTH)
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--beta-mean", type=_types.open_unit, help="alpha_d ~ Beta(c m, c (1 - m))")
    g.add_argument("--epsilon", type=pos_float, help="alpha = exp(-eps / mean(y))")
    q.add_argument("--concentration", type=pos_float, default=10.0, help="c (default 10)")

    q = add("mask", _mask, "hold out cells of the top senders/recipients at random (.npy)",
            source=TRUTH)
    q.add_argument("--top", type=pos_int, required=True)
    q.add_argument("--fraction", type=_types.fraction, default=0.5,
                   help="share of their cells held out, 1 = all (default 0.5)")

    q = add("factor", _factor, "copy one array of a truth file to .npy (e.g. for --fix-phi)",
            source=TRUTH)
    q.add_argument("name", help="key, e.g. phi")
