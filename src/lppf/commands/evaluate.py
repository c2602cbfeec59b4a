"""``lppf evaluate``: one fit against the truth -> one small JSON file of metrics.

Metrics (see :mod:`lppf.metrics`): ``mae_y`` (mu_hat vs the true counts), ``mae_mu`` and
``kl`` (vs the true rates, when the truth has ``mu``), ``heldout_mae`` and
``heldout_deviance`` with their baselines (with ``--mask``),
``topic_l1`` (pmf truths with ``phi``: topic recovery of the max-joint sample),
``npmi`` and ``umass`` (``--coherence``; every saved Phi sample, true counts as reference
corpus), ``coverage90`` (``--privatized``: share of random observed cells whose true count lies
in the 90% posterior interval). Community models are evaluated off the diagonal. An MCMC fit
of several chains also gets each of these from each chain alone, e.g. ``kl_chain0``
(:func:`lppf.metrics.chain_metrics`).
"""

from __future__ import annotations

import json
import math

import numpy as np

from lppf import metrics
from lppf.commands import _types
from lppf.fitfile import read_fit, read_mask, read_privatized, read_truth
from lppf.io import write_text
from lppf.results import SECONDS, samples_key
from lppf.validation import InputError


def _check_topics(args, fit: dict, truth: dict) -> None:
    """Topic metrics need the fit's topics (at least as many as the true ones for topic_l1,
    and TOP_WORDS words for --coherence)."""
    has_topics = "phi" in fit or samples_key("phi") in fit
    if args.coherence and not has_topics:
        raise InputError(f"{args.fit}: --coherence needs the topics of a pmf fit (key 'phi' "
                         "or 'phi_samples')")
    if args.coherence and truth["Y"].shape[1] < metrics.TOP_WORDS:
        raise InputError(f"{args.truth}: --coherence scores the top {metrics.TOP_WORDS} words "
                         f"of each topic, Y has only {truth['Y'].shape[1]} columns")
    if "phi" in truth and has_topics:
        K_fit = (fit["phi"] if "phi" in fit else fit[samples_key("phi")][0]).shape[0]
        if K_fit < truth["phi"].shape[0]:
            raise InputError(f"{args.fit}: {K_fit} topics cannot be matched to the "
                             f"{truth['phi'].shape[0]} true topics of {args.truth}")


def evaluate(args) -> dict:
    truth = read_truth(args.truth, args.model)
    Y = truth["Y"]
    fit = read_fit(args.fit, args.model, Y.shape, f"Y in {args.truth}")
    cells = ~np.eye(*Y.shape, dtype=bool) if args.model == "community" else np.ones(Y.shape, bool)
    mask = read_mask(args.mask, Y.shape, cells) if args.mask else None
    _check_topics(args, fit, truth)
    private = read_privatized(args.privatized, Y.shape) if args.privatized else None
    settings = (truth, mask, private, args.coherence, args.coverage_cells, args.seed)
    out = metrics.evaluate_fit(args.model, fit, *settings)
    out.update(metrics.chain_metrics(args.model, fit, *settings))
    config = fit["config"]
    out.update(seed=fit["seed"], iterations=fit["iterations"],
               fit_seconds=fit.get(SECONDS),
               threads=config.get("numba_threads", config.get("threads")))
    return {**dict(args.label), **out}


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise InputError(f"--label {text!r}: expected KEY=VALUE")
    return key, value


def run(args) -> int:
    row = evaluate(args)
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
             for k, v in row.items()}
    write_text(args.output, json.dumps(clean, indent=1) + "\n")
    print(json.dumps(clean))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("evaluate", help="metrics of one fit against the truth (JSON)",
                              description=__doc__)
    p.add_argument("fit", help="fit .npz (mu_hat, factors, samples)")
    p.add_argument("output", help="metrics .json")
    p.add_argument("--truth", required=True, help=".npz with the true counts Y (and mu)")
    p.add_argument("--model", choices=("pmf", "community"), required=True)
    p.add_argument("--mask", help="held-out mask .npy (True = held out)")
    p.add_argument("--privatized", help="privatized .npz (Y_noisy, mechanism and its parameter): "
                   "adds coverage90")
    p.add_argument("--coverage-cells", type=_types.positive_int, default=500,
                   help="random cells used for coverage90 (default 500)")
    p.add_argument("--coherence", action="store_true", help="add NPMI and UMass of the topics")
    p.add_argument("--seed", type=_types.seed, default=0, help="seed of the coverage cell draw")
    p.add_argument("--label", type=_label, action="append", default=[], metavar="KEY=VALUE",
                   help="copied into the output row (repeatable)")
    p.set_defaults(func=run)
