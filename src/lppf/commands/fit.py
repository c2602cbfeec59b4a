"""``lppf fit``: fit Poisson factorization (topics) or the community model to counts.

INPUT is the output of ``lppf privatize`` (keys ``Y_noisy``, ``mechanism`` and its parameter
``alpha``, ``sigma`` or ``mu``; a file without ``mechanism`` is geometric) for the private and
naive methods, or an ``.npz`` with the true counts ``Y`` for ``nonprivate``; or a table
(``.csv``, ``.tsv``, ``.txt``) or Matrix Market file (``.mtx``) of counts, with the noise
given by ``--alpha`` or ``--epsilon``/``--precision`` (geometric), ``--sigma`` (discrete
Gaussian) or ``--mu`` (Skellam), ``--mechanism`` naming it when the file does not. OUTPUT
gets the fit ``.npz`` (written atomically; layout in docs/usage.md, "Output .npz").
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
from lppf.commands._types import open_unit, positive_float
from lppf.fitting import DEFAULTS
from lppf.io import (
    NAME_KEYS,
    check_output,
    load_npy,
    read_counts,
    read_noise,
    write_files,
)
from lppf.validation import (
    INFERENCES,
    MECHANISMS,
    METHODS,
    MODELS,
    NOISE_PARAMS,
    SAMPLERS,
    InputError,
    check_noise,
)

# options of one inference only: (option, attribute, inference it belongs to)
ONLY = (("--chains", "chains", "mcmc"), ("--extend", "extend", "mcmc"),
        ("--sampler", "sampler", "mcmc"), ("--idata", "idata", "mcmc"),
        ("--tol", "tol", "cavi"), ("--restarts", "restarts", "cavi"))


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
    p.add_argument("--burnin", type=int, metavar="B",
                   help=f"MCMC (default {DEFAULTS['burnin']})")
    p.add_argument("--thin", type=int, metavar="T",
                   help=f"MCMC: save every T-th iteration after burn-in "
                        f"(default {DEFAULTS['thin']})")
    p.add_argument("--chains", type=int, metavar="N",
                   help=f"MCMC: independent chains, samples pooled, at most 1000 "
                        f"(default {DEFAULTS['n_chains']})")
    p.add_argument("--extend", type=int, metavar="R",
                   help="MCMC: while the chains (at least 4) miss the convergence criterion, "
                        "up to R times, run them on for twice the last sampling window, "
                        f"thinned twice as much (default {DEFAULTS['extend']})")
    p.add_argument("--sampler", choices=SAMPLERS,
                   help="MCMC of the community model's naive and nonprivate fits (free "
                        "factors): hmc, gibbs, or auto, HMC under --a0 >= 1 "
                        f"(default {DEFAULTS['sampler']}); a private-collapsed fit: auto "
                        "adds Langevin moves under heavy noise, gibbs never; every other fit "
                        "is Gibbs")
    p.add_argument("--idata", type=Path, metavar="OUT.nc",
                   help="MCMC: also write the samples as ArviZ InferenceData (netCDF; needs "
                        "lppf[arviz])")
    p.add_argument("--tol", type=float,
                   help=f"CAVI relative tolerance on mu_hat; 0 runs all iterations "
                        f"(default {DEFAULTS['tol']})")
    p.add_argument("--restarts", type=int, metavar="R",
                   help=f"CAVI restarts (default {DEFAULTS['restarts']})")
    p.add_argument("--mechanism", choices=MECHANISMS,
                   help="noise of INPUT when the file does not name it (default: the file's, "
                        "else geometric)")
    p.add_argument("--alpha", type=open_unit, metavar="A",
                   help="noise level of INPUT when the file does not carry one")
    p.add_argument("--sigma", type=positive_float, metavar="S",
                   help="discrete Gaussian: sigma of INPUT when the file does not carry it")
    p.add_argument("--mu", type=positive_float, metavar="U",
                   help="Skellam: mu (each Poisson's mean) of INPUT when the file does not "
                        "carry it")
    p.add_argument("--epsilon", type=positive_float, metavar="E",
                   help="or: privacy level of INPUT (with --precision): alpha = exp(-E / N)")
    p.add_argument("--precision", type=positive_float, metavar="N", help="see --epsilon")
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


def _flag_mechanism(args: argparse.Namespace) -> str | None:
    """The mechanism the options name: ``--mechanism``, or the one whose parameter is given
    (``--alpha``/``--epsilon``: geometric, ``--sigma``: discrete-gaussian, ``--mu``:
    skellam); None when they name none. Options of two mechanisms: refused."""
    named = {m for m, key in NOISE_PARAMS.items() if getattr(args, key) is not None}
    if args.epsilon is not None:
        named.add("geometric")
    if args.mechanism is not None:
        named.add(args.mechanism)
    if len(named) > 1:
        given = ", ".join(f"--{NOISE_PARAMS[m]}" for m in sorted(named))
        raise InputError(f"options of different mechanisms ({given}"
                         f"{', --mechanism ' + args.mechanism if args.mechanism else ''}): "
                         "give the parameter of one")
    return named.pop() if named else None


def _noise_level(args: argparse.Namespace) -> float | None:
    """``--alpha``, ``--sigma``, ``--mu`` or ``exp(-epsilon / precision)``, or None when none
    is given."""
    from lppf.mechanisms import epsilon_to_alpha
    from lppf.validation import check_alpha

    if args.alpha is not None and args.epsilon is not None:
        raise InputError("give --alpha or --epsilon with --precision, not both")
    if (args.epsilon is None) != (args.precision is None):
        raise InputError("--epsilon and --precision go together")
    if args.epsilon is not None:
        return float(check_alpha(epsilon_to_alpha(args.epsilon, args.precision),
                                 name="alpha = exp(-epsilon / precision)"))
    if args.sigma is not None or args.mu is not None:
        mechanism = "discrete-gaussian" if args.sigma is not None else "skellam"
        value = args.sigma if args.sigma is not None else args.mu
        return float(check_noise(mechanism, value, name=f"--{NOISE_PARAMS[mechanism]}"))
    return None if args.alpha is None else float(check_alpha(args.alpha, name="--alpha"))


def _load_input(args: argparse.Namespace) -> tuple[object, object, str,
                                                   dict[str, np.ndarray]]:
    """The counts, their noise parameter (None for nonprivate), the mechanism and their
    row/column names."""
    path, method = args.input, args.method
    data = read_counts(path)
    names = {k: data[k] for k in NAME_KEYS if k in data}
    flagged = _flag_mechanism(args)
    given = _noise_level(args)
    if (given is not None or args.mechanism) and method == "nonprivate":
        raise InputError("--alpha/--epsilon/--sigma/--mu/--mechanism: method 'nonprivate' "
                         "fits true counts, no noise")
    if "counts" in data:  # a table or Matrix Market file: the counts the method needs
        if given is None and method != "nonprivate":
            raise InputError(f"{path}: carries no noise level; give --alpha or --epsilon "
                             f"with --precision, or --sigma or --mu with --mechanism (or "
                             f"--method nonprivate for true counts)")
        return data["counts"], given, flagged or "geometric", names
    if method == "nonprivate":
        if "Y" not in data:
            raise InputError(f"{path}: method 'nonprivate' needs the true counts under key 'Y' "
                             f"(found: {', '.join(sorted(data)) or 'none'})")
        return data["Y"], None, "geometric", names
    if "Y_noisy" not in data:
        raise InputError(f"{path}: method {method!r} needs privatized counts under key "
                         f"'Y_noisy', the output of `lppf privatize` "
                         f"(found: {', '.join(sorted(data)) or 'none'})")
    recorded, param = read_noise(data, path)
    if recorded is not None and flagged is not None and recorded != flagged:
        raise InputError(f"--mechanism/--{NOISE_PARAMS[flagged]}: {path} was released with "
                         f"the {recorded} mechanism (key 'mechanism')")
    mechanism = recorded or flagged or "geometric"
    if given is not None and param is not None:
        key = NOISE_PARAMS[mechanism]
        raise InputError(f"--{key}: {path} carries its noise level (key {key!r})")
    if given is None and param is None:
        key = NOISE_PARAMS[mechanism]
        raise InputError(f"{path}: missing key {key!r} (the {mechanism} noise parameter); "
                         f"give --{key}")
    return data["Y_noisy"], given if given is not None else param, mechanism, names


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options that do not apply to the chosen inference, before any work."""
    if args.threads is not None and args.threads < 1:
        raise InputError(f"--threads must be >= 1, got {args.threads}")
    for option, name, inference in ONLY:
        if getattr(args, name) is not None and args.inference != inference:
            raise InputError(f"{option} applies to --inference {inference} only, not "
                             f"{args.inference}")
    if args.idata is None:
        return
    check_output(args.idata)
    for other in (args.input, args.output):
        if Path(args.idata).resolve() == Path(other).resolve():  # links too
            raise InputError(f"--idata {args.idata}: the same file as {other}")
    from lppf.diagnostics import _arviz

    try:
        _arviz()
    except ImportError:
        raise InputError("--idata needs ArviZ: pip install 'lppf[arviz]'") from None


def _check_size(args: argparse.Namespace, shape: tuple[int, int]) -> None:
    """More components than rows or columns: refused, as scikit-learn does for PCA."""
    if args.components > min(shape):
        raise InputError(f"--components {args.components} exceeds the smaller side of the "
                         f"{shape[0]} x {shape[1]} counts in {args.input}")


def _idata_writer(fit: fitting.Fit):
    """A writer for :func:`lppf.io.write_files` of the samples as netCDF (ArviZ writes to a
    path: a scratch file, copied)."""
    import tempfile

    idata = fit.to_inference_data()
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "idata.nc")
        idata.to_netcdf(path)
        with open(path, "rb") as fh:
            data = fh.read()
    return lambda fh: fh.write(data)


def _threads_line(requested: int | None) -> str:
    with numba_threads(requested):
        used = numba.get_num_threads()
    env = os.environ.get("NUMBA_NUM_THREADS", "unset")
    return (f"lppf fit: numba threads = {used} (NUMBA_NUM_THREADS={env}, "
            f"cpus available={len(os.sched_getaffinity(0))})")


def run(args: argparse.Namespace) -> int:
    _check_options(args)
    check_output(args.output)
    Y, alpha, mechanism, names = _load_input(args)
    mask = None if args.mask is None else load_npy(args.mask, "--mask")
    fix = {name: load_npy(path, f"--fix-{name}") for name in ("theta", "phi", "pi")
           if (path := getattr(args, f"fix_{name}")) is not None}
    given = {"burnin": args.burnin, "thin": args.thin, "n_chains": args.chains,
             "extend": args.extend, "sampler": args.sampler, "tol": args.tol,
             "restarts": args.restarts}
    params = {**DEFAULTS, "n_components": args.components, "method": args.method,
              "inference": args.inference, "a0": args.a0, "b0": args.b0,
              "max_iter": args.iterations,
              **{k: v for k, v in given.items() if v is not None},
              "random_state": args.seed, "threads": args.threads, "mechanism": mechanism,
              "verbose": not args.quiet and sys.stderr.isatty()}
    try:  # checked before anything is printed: bad input gives one line only
        data = fitting.check(args.model, params, Y, alpha, mask, fix or None)
        _check_size(args, data.Y.shape)
        names = _check_names(args.input, names, data.Y.shape)
        print(_threads_line(args.threads), file=sys.stderr, flush=True)
        fit = fitting.fit(args.model, data, params)
    except InputError as exc:
        raise _blame(args, exc) from None
    fit.names = names
    files = [(args.output, fit.writer(args.input))]
    if args.idata is not None:
        files.append((args.idata, _idata_writer(fit)))
    write_files(files)
    warning = fit.warning_line()
    if warning is not None:
        print(f"lppf fit: {args.output}: {warning}", file=sys.stderr)
    print(f"{args.output}: {args.model} {args.method} {args.inference}, K={args.components}, "
          f"{fit.result.n_iter} iterations in {fit.seconds:.1f} s",
          file=sys.stderr)
    return 0


def _check_names(path: Path, names: dict[str, np.ndarray], shape: tuple[int, int]
                 ) -> dict[str, np.ndarray]:
    """Row and column names of the input, kept when they match the matrix."""
    for key, n in zip(NAME_KEYS, shape, strict=True):
        if key in names and np.shape(names[key]) != (n,):
            raise InputError(f"{path}: key {key!r} holds {np.size(names[key])} names for "
                             f"{n} {key}")
    return names
