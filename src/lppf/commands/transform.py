"""``lppf transform``: fold new rows into a saved fit, its components held fixed.

    lppf transform FIT NEW OUTPUT.npz [--alpha A | --epsilon E --precision N]

FIT is the output of ``lppf fit`` (or ``model.save``); NEW holds new rows over the fit's
columns, in any input format of ``lppf fit`` (privatized ``Y_noisy`` with ``alpha``, true
counts ``Y`` for a nonprivate fit, or a table / Matrix Market file). The noise level is
NEW's, else ``--alpha``/``--epsilon``, else the fit's when it is one number. OUTPUT gets
``theta`` (n_new, K), the posterior means of the new rows' factors, and their names
(``rows``) when NEW has them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from lppf.commands._types import open_unit, positive_float
from lppf.io import check_output, read_counts, save_npz
from lppf.validation import NOISE_PARAMS, InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("transform", help="fold new rows into a saved fit",
                              description=__doc__.split("\n\n")[0].strip("`"))
    p.add_argument("fit", type=Path, metavar="FIT", help="fit .npz (lppf fit)")
    p.add_argument("new", type=Path, metavar="NEW", help="new rows (.npz, .csv, .tsv, .mtx)")
    p.add_argument("output", type=Path, metavar="OUTPUT", help=".npz to write (theta)")
    p.add_argument("--alpha", type=open_unit, metavar="A", help="noise level of NEW")
    p.add_argument("--epsilon", type=positive_float, metavar="E",
                   help="or: privacy level of NEW (with --precision)")
    p.add_argument("--precision", type=positive_float, metavar="N", help="see --epsilon")
    p.add_argument("--sigma", type=positive_float, metavar="S",
                   help="discrete Gaussian noise of NEW (a fit to such a release)")
    p.add_argument("--mu", type=positive_float, metavar="U",
                   help="Skellam noise of NEW (a fit to such a release)")
    p.set_defaults(func=run, mechanism=None)


def _new_rows(args: argparse.Namespace, method: str, mechanism: str):
    from lppf.commands.fit import _flag_mechanism, _noise_level

    data = read_counts(args.new)
    flagged = _flag_mechanism(args)
    if flagged is not None and flagged != mechanism:
        raise InputError(f"--{NOISE_PARAMS[flagged]}: the fit is to a {mechanism} release")
    given = _noise_level(args)
    key = next((k for k in ("counts", "Y_noisy" if method != "nonprivate" else "Y")
                if k in data), None)
    if key is None:
        want = "Y" if method == "nonprivate" else "Y_noisy"
        raise InputError(f"{args.new}: a {method} fit needs new rows under key {want!r} "
                         f"(found: {', '.join(sorted(data)) or 'none'})")
    param = NOISE_PARAMS[mechanism]
    if given is not None and param in data:
        raise InputError(f"--{param}: {args.new} carries its noise level (key {param!r})")
    alpha = given if given is not None else data.get(param)
    return data[key], alpha, data.get("rows"), data.get("columns")


def _named(Y, columns, model, path: Path):
    """Y as a DataFrame with the fit's column names (checked against NEW's own names)."""
    fitted = getattr(model, "feature_names_in_", None)
    if fitted is None:
        return Y
    if columns is not None and list(np.asarray(columns, dtype=str)) != list(fitted):
        raise InputError(f"{path}: its column names differ from the fit's")
    import pandas as pd

    Y = Y.toarray() if hasattr(Y, "toarray") else np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != len(fitted):
        raise InputError(f"{path}: {np.shape(Y)[-1]} columns, the fit has {len(fitted)}")
    return pd.DataFrame(Y, columns=fitted)


def run(args: argparse.Namespace) -> int:
    from lppf.estimators import load

    check_output(args.output)
    model = load(args.fit)
    Y, alpha, rows, columns = _new_rows(args, model.method, model.mechanism)
    try:
        theta = model.transform(_named(Y, columns, model, args.new), alpha=alpha)
    except InputError as exc:
        where = args.new if exc.param in ("Y", "alpha") else args.fit
        raise InputError(f"{where}: {exc}") from None
    extra = {} if rows is None else {"rows": np.asarray(rows, dtype=str)}
    save_npz(args.output, theta=theta, **extra)
    print(f"{args.output}: theta of {theta.shape[0]} new rows, K={theta.shape[1]}")
    return 0
