"""``lppf evaluate``: one fit against the truth -> one small JSON file of metrics.

Metrics (see :mod:`lppf.metrics`): ``mae_y`` (mu_hat vs the true counts), ``mae_mu`` and
``kl`` (vs the true rates, when the truth has ``mu``), ``heldout_mae`` and
``heldout_deviance`` with their baselines (with ``--mask``),
``topic_l1`` (pmf truths with ``phi``: topic recovery of the max-joint sample),
``npmi`` and ``umass`` (``--coherence``; every saved Phi sample, true counts as reference
corpus), ``coverage90`` (``--privatized``: share of random observed cells whose true count lies
in the 90% posterior interval). Community models are evaluated off the diagonal.
"""

from __future__ import annotations

import json
import math

import numpy as np

from lppf import metrics
from lppf.commands import _types
from lppf.io import (
    InputError,
    as_count_matrix,
    load_json_entry,
    load_npy,
    load_npz,
    require_key,
    write_text,
)


def _array(data: dict, key: str, path, shape: tuple[int, ...]) -> np.ndarray:
    """``data[key]`` as a finite float array of ``shape``, else one line naming file and key."""
    value = np.asarray(require_key(data, key, path))
    if value.dtype.kind not in "biuf" or value.shape != shape:
        raise InputError(f"{path}: {key} has shape {value.shape} and dtype {value.dtype}, "
                         f"expected numbers of shape {shape}")
    if not np.all(np.isfinite(value)):
        raise InputError(f"{path}: {key} contains NaN or infinite values")
    return value.astype(float)


def _load_mask(path, shape) -> np.ndarray:
    mask = load_npy(path, "--mask")
    if mask.shape != shape or mask.dtype.kind not in "biu":
        raise InputError(f"{path}: mask shape {mask.shape} (dtype {mask.dtype}) differs from "
                         f"Y {shape}")
    return mask.astype(bool)


def evaluate(args) -> dict:
    fit = load_npz(args.fit)
    truth = load_npz(args.truth)
    Y = as_count_matrix(require_key(truth, "Y", args.truth), name=f"{args.truth}: Y")
    mu_hat = np.asarray(require_key(fit, "mu_hat", args.fit))
    if mu_hat.shape != Y.shape:
        raise InputError(f"{args.fit}: mu_hat shape {mu_hat.shape} differs from Y {Y.shape} "
                         f"in {args.truth}")
    mu_hat = _array(fit, "mu_hat", args.fit, Y.shape)
    if args.model == "community" and Y.shape[0] != Y.shape[1]:
        raise InputError(f"{args.truth}: Y: the community model needs a square matrix, "
                         f"got shape {Y.shape}")
    if "mu" in truth:
        _array(truth, "mu", args.truth, Y.shape)
    mask = _load_mask(args.mask, Y.shape) if args.mask else None
    if args.coherence:
        phi = fit["phi_samples"] if "phi_samples" in fit else require_key(fit, "phi", args.fit)
        if phi.ndim not in (2, 3) or phi.shape[-1] != Y.shape[1] or phi.dtype.kind not in "iuf":
            raise InputError(f"{args.fit}: phi shape {phi.shape} does not fit Y {Y.shape}")
    private = None
    if args.privatized:
        private = load_npz(args.privatized)
        _array(private, "Y_noisy", args.privatized, Y.shape)
        alpha = np.asarray(require_key(private, "alpha", args.privatized))
        try:
            np.broadcast_to(alpha, Y.shape)
        except ValueError:
            raise InputError(f"{args.privatized}: alpha shape {alpha.shape} does not fit Y "
                             f"{Y.shape}") from None
    out = metrics.evaluate_fit(args.model, {**fit, "mu_hat": mu_hat}, {**truth, "Y": Y}, mask,
                               private, args.coherence, args.coverage_cells, args.seed)
    config = load_json_entry(fit, "config") if "config" in fit else {}
    out.update(seed=int(fit["seed"]) if "seed" in fit else None,
               iterations=int(fit["iterations"]) if "iterations" in fit else None,
               fit_seconds=float(fit["elapsed_seconds"]) if "elapsed_seconds" in fit else None,
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
    p.add_argument("--privatized", help="privatized .npz (Y_noisy, alpha): adds coverage90")
    p.add_argument("--coverage-cells", type=_types.positive_int, default=500,
                   help="random cells used for coverage90 (default 500)")
    p.add_argument("--coherence", action="store_true", help="add NPMI and UMass of the topics")
    p.add_argument("--seed", type=_types.seed, default=0, help="seed of the coverage cell draw")
    p.add_argument("--label", type=_label, action="append", default=[], metavar="KEY=VALUE",
                   help="copied into the output row (repeatable)")
    p.set_defaults(func=run)
