"""``lppf fit``: fit Poisson factorization (topics) or the community model to counts.

INPUT is the output of ``lppf privatize`` (keys ``Y_noisy``, ``alpha``) for the private and
naive methods, or an ``.npz`` with the true counts ``Y`` for ``nonprivate``. OUTPUT gets the
fit ``.npz`` (written atomically; layout in the README, "Output .npz").
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import numba
import numpy as np

from lppf import fitting
from lppf._numba import threads as numba_threads
from lppf.fitting import DEFAULTS
from lppf.io import InputError, check_output, load_npy, load_npz, require_key
from lppf.results import INFERENCES, METHODS, MODELS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("fit", help="fit a model to (privatized) counts",
                              description=__doc__.split("\n\n")[0].strip("`"))
    p.add_argument("input", type=Path, help="privatized .npz (Y_noisy, alpha) or true .npz (Y)")
    p.add_argument("output", type=Path, help="fit .npz to write")
    p.add_argument("--model", choices=MODELS, default="pmf")
    p.add_argument("--method", choices=METHODS, default=DEFAULTS["method"])
    p.add_argument("--inference", choices=INFERENCES, default=DEFAULTS["inference"])
    p.add_argument("--components", type=int, required=True, metavar="K",
                   help="number of topics / communities")
    p.add_argument("--iterations", type=int, default=DEFAULTS["max_iter"], metavar="I",
                   help="MCMC: total iterations including burn-in; CAVI: maximum "
                        "(default %(default)s)")
    p.add_argument("--burnin", type=int, default=DEFAULTS["burnin"], metavar="B",
                   help="default %(default)s")
    p.add_argument("--thin", type=int, default=DEFAULTS["thin"], metavar="T",
                   help="save every T-th iteration after burn-in (default %(default)s)")
    p.add_argument("--chains", type=int, default=DEFAULTS["n_chains"], metavar="N",
                   help="MCMC: independent chains, samples pooled (default %(default)s)")
    p.add_argument("--idata", type=Path, metavar="OUT.nc",
                   help="MCMC: also write the samples as ArviZ InferenceData (netCDF)")
    p.add_argument("--tol", type=float, default=DEFAULTS["tol"],
                   help="CAVI relative tolerance on mu_hat; 0 runs all iterations "
                        "(default %(default)s)")
    p.add_argument("--restarts", type=int, default=DEFAULTS["restarts"], metavar="R",
                   help="CAVI restarts (default %(default)s)")
    p.add_argument("--seed", type=int, default=DEFAULTS["random_state"], metavar="S",
                   help="random seed (default: fresh, recorded in the output)")
    p.add_argument("--mask", type=Path, metavar="MASK.npy", help="bool array, True = held out")
    p.add_argument("--a0", type=float, default=DEFAULTS["a0"], help="gamma prior shape")
    p.add_argument("--b0", type=float, default=DEFAULTS["b0"], help="gamma prior rate")
    p.add_argument("--threads", type=int, default=DEFAULTS["threads"], metavar="N",
                   help="numba threads (default: NUMBA_NUM_THREADS or all cpus)")
    for name in ("theta", "phi", "pi"):
        p.add_argument(f"--fix-{name}", type=Path, metavar="F.npy",
                       help=f"hold {name} at these values")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


OPTIONS = {"n_components": "--components", "max_iter": "--iterations",
           "random_state": "--seed", "n_chains": "--chains"}
API_NAMES = {"max_iter": "--iterations", "burnin": "--burnin", "thin": "--thin",
             "n_components": "--components", "n_chains": "--chains"}


def _blame(args: argparse.Namespace, exc: InputError) -> InputError:
    """Name the file or option an estimator's error is about (``exc.param``)."""
    param = exc.param or ""
    if param in ("Y", "alpha"):
        where = args.input
    elif param in ("mask", "fix_theta", "fix_phi", "fix_pi"):
        where = getattr(args, param) or f"--{param.replace('_', '-')}"
    elif param in OPTIONS or hasattr(args, param):
        where = OPTIONS.get(param, f"--{param}")
    else:  # e.g. "fix" (holding every factor fixed): the message says it all
        return exc
    message = str(exc)
    for name, option in API_NAMES.items():  # the API's names, as the user typed them
        message = re.sub(rf"\b{name}\b", option, message)
    return InputError(f"{where}: {message}", param)


def _load_input(path: Path, method: str) -> tuple[np.ndarray, np.ndarray | None]:
    data = load_npz(path)
    if method == "nonprivate":
        if "Y" not in data:
            raise InputError(f"{path}: method 'nonprivate' needs the true counts under key 'Y' "
                             f"(found: {', '.join(sorted(data)) or 'none'})")
        return data["Y"], None
    if "Y_noisy" not in data:
        raise InputError(f"{path}: method {method!r} needs privatized counts under key "
                         f"'Y_noisy', the output of `lppf privatize` "
                         f"(found: {', '.join(sorted(data)) or 'none'})")
    return data["Y_noisy"], require_key(data, "alpha", path)


def _threads_line(requested: int | None) -> str:
    with numba_threads(requested):
        used = numba.get_num_threads()
    env = os.environ.get("NUMBA_NUM_THREADS", "unset")
    return (f"lppf fit: numba threads = {used} (NUMBA_NUM_THREADS={env}, "
            f"cpus available={len(os.sched_getaffinity(0))})")


def run(args: argparse.Namespace) -> int:
    if args.threads is not None and args.threads < 1:
        raise InputError(f"--threads must be >= 1, got {args.threads}")
    check_output(args.output)
    Y, alpha = _load_input(args.input, args.method)
    mask = None if args.mask is None else load_npy(args.mask, "--mask")
    fix = {name: load_npy(path, f"--fix-{name}") for name in ("theta", "phi", "pi")
           if (path := getattr(args, f"fix_{name}")) is not None}
    params = {**DEFAULTS, "n_components": args.components, "method": args.method,
              "inference": args.inference, "a0": args.a0, "b0": args.b0,
              "max_iter": args.iterations, "burnin": args.burnin, "thin": args.thin,
              "n_chains": args.chains, "tol": args.tol, "restarts": args.restarts,
              "random_state": args.seed, "threads": args.threads,
              "verbose": not args.quiet and sys.stderr.isatty()}
    try:  # checked before anything is printed: bad input gives one line only
        data = fitting.check(args.model, params, Y, alpha, mask, fix or None)
        print(_threads_line(args.threads), file=sys.stderr, flush=True)
        fit = fitting.fit(args.model, data, params)
    except InputError as exc:
        raise _blame(args, exc) from None
    fit.save(args.output, input_path=args.input)
    if args.idata is not None:
        fit.to_inference_data().to_netcdf(args.idata)
    warning = fit.warning_line()
    if warning is not None:
        print(f"lppf fit: {args.output}: {warning}", file=sys.stderr)
    print(f"{args.output}: {args.model} {args.method} {args.inference}, K={args.components}, "
          f"{fit.result.n_iter} iterations in {fit.seconds:.1f} s",
          file=sys.stderr)
    return 0
