"""``lppf simulate``: ground truth, noise levels and masks for the experiments.

Truth files are ``.npz`` with ``Y`` (true counts), ``mu`` (true rates), the factors and ``seed``.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from lppf import synthetic
from lppf._io import InputError, _atomic_target, as_count_matrix, load_npz, require_key, save_npz


def _rng(args) -> np.random.Generator:
    return np.random.default_rng(args.seed)


def _save_truth(args, truth: dict) -> int:
    save_npz(args.output, seed=np.int64(args.seed), **truth)
    print(f"{args.output}: Y {truth['Y'].shape}, mean count {truth['Y'].mean():.3f}")
    return 0


def _pmf(args) -> int:
    return _save_truth(args, synthetic.pmf_truth(
        _rng(args), args.rows, args.cols, args.components, args.shape, args.rate))


def _blocks(args) -> int:
    return _save_truth(args, synthetic.blocks_truth(
        _rng(args), args.topics, args.docs_per_topic, args.words_per_topic, args.doc_length))


def _community(args) -> int:
    return _save_truth(args, synthetic.community_truth(
        _rng(args), args.actors, args.communities, args.shape, args.rate))


def _rescale(args) -> int:
    ref = load_npz(args.reference)
    other = "phi" if args.model == "pmf" else "pi"
    factors = {k: require_key(ref, k, args.reference) for k in ("theta", other)}
    if args.components is not None and args.components > factors["theta"].shape[1]:
        raise InputError(f"--components {args.components}: {args.reference} has only "
                         f"{factors['theta'].shape[1]}")
    return _save_truth(args, synthetic.rescaled_truth(
        _rng(args), args.model, factors, args.e0, args.f0, args.components))


def _true_counts(path) -> np.ndarray:
    return as_count_matrix(require_key(load_npz(path), "Y", path), name=f"{path}: Y")


def _noise_level(args) -> int:
    Y = _true_counts(args.truth)
    if args.beta_mean is not None:
        alpha = synthetic.beta_alphas(_rng(args), Y.shape[0], args.beta_mean, args.concentration)
    else:
        try:
            alpha = synthetic.mean_precision_alpha(Y, args.epsilon)
        except ValueError as exc:
            raise InputError(f"{args.truth}: {exc}") from None
    _save_npy(args.output, alpha)
    print(f"{args.output}: alpha shape {alpha.shape}, mean {alpha.mean():.4f}")
    return 0


def _save_npy(path, array: np.ndarray) -> None:
    target, fd, tmp = _atomic_target(path, ".npy")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, array)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def _mask(args) -> int:
    Y = _true_counts(args.truth)
    mask = synthetic.top_actor_mask(Y, args.top)
    _save_npy(args.output, mask)
    print(f"{args.output}: {mask.sum()} of {mask.size} cells held out")
    return 0


def _factor(args) -> int:
    _save_npy(args.output, require_key(load_npz(args.truth), args.name, args.truth))
    return 0


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def register(subparsers) -> None:
    p = subparsers.add_parser("simulate", help="make ground truth, noise levels and masks",
                              description=__doc__)
    sub = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    pos_int, pos_float = _positive(int), _positive(float)
    TRUTH = ("truth", "truth .npz with the true counts Y")

    def add(name, func, help_, source=None):
        q = sub.add_parser(name, help=help_, description=help_)
        if source:
            q.add_argument(source[0], help=source[1])
        q.add_argument("output")
        q.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
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
    g.add_argument("--beta-mean", type=float, help="alpha_d ~ Beta(c m, c (1 - m))")
    g.add_argument("--epsilon", type=pos_float, help="alpha = exp(-eps / mean(y))")
    q.add_argument("--concentration", type=pos_float, default=10.0, help="c (default 10)")

    q = add("mask", _mask, "hold out every cell of the top senders/recipients (.npy)",
            source=TRUTH)
    q.add_argument("--top", type=pos_int, required=True)

    q = add("factor", _factor, "copy one array of a truth file to .npy (e.g. for --fix-phi)",
            source=TRUTH)
    q.add_argument("name", help="key, e.g. phi")
