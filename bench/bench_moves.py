"""Nanoseconds per cell of the Langevin moves of a ``private-collapsed`` PMF fit, with each
cell's E[y] and ln Z from the power series (:mod:`lppf.series`) and from the walks alone.

    snakemake --cores 2                      # the default run, for its data and fits
    python bench/bench_moves.py DATA FIT [DATA FIT ...]
    python bench/bench_moves.py results/m1/privatized/e0-5/skellam-var-32/rep0.npz \\
        results/m1/fits/pmf-K5/e0-5/skellam-var-32/rep0/private-collapsed-mcmc.npz

DATA is a privatized file, FIT the fit file of its ``private-collapsed`` fit, whose last saved
draw gives the rates. For each pair: one call of :class:`lppf.mcmc.marginal.Moves` on the
rows of Theta alone, on the columns of Phi alone and on both (three evaluations of every
cell), best of ``--repeats``, one thread; then the same with the series' tables emptied, so
that every cell without a closed form walks its pmf. The shares of cells by way (closed
form, series, walk) at those rates close each line. Compare within one run on an otherwise
idle machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lppf import series
from lppf._numba import threads
from lppf.io import load_npz
from lppf.mcmc.marginal import Moves
from lppf.noise_conditional import GEOMETRIC
from lppf.validation import FitData

PARAMS = ("alpha", "sigma", "mu")  # the noise parameter a privatized file carries


def load(data_file: str, fit_file: str) -> tuple[FitData, np.ndarray, np.ndarray]:
    z = load_npz(data_file)
    Y = np.asarray(z["Y_noisy"], dtype=np.int64)
    param = np.asarray(next(z[p] for p in PARAMS if p in z), dtype=float)
    fit = np.load(fit_file)
    Theta, Phi = fit["theta_samples"][-1], fit["phi_samples"][-1]
    return FitData(Y, param, np.zeros(Y.shape, bool), {}, str(z.get("mechanism", "geometric"))), \
        np.ascontiguousarray(Theta), np.ascontiguousarray(Phi)


def seconds(data: FitData, Theta, Phi, walk_only: bool, repeats: int) -> float:
    moves = Moves(data)
    if walk_only:
        t = moves.t
        moves.t = t._replace(series=series.build(t.kind, t.par, t.lnorm, t.lr, t.lc,
                                                 np.zeros(0, np.int64)))
    rng = np.random.default_rng(0)
    moves(Theta.copy(), Phi.copy(), 1.0, 1.0, rng)  # compiles
    best = np.inf
    for _ in range(repeats):
        T, P = Theta.copy(), Phi.copy()
        tic = time.perf_counter()
        moves(T, P, 1.0, 1.0, rng)
        best = min(best, time.perf_counter() - tic)
    return best


def ways(data: FitData, Theta, Phi) -> tuple[float, float, float]:
    """Shares of the cells at the rates Theta Phi by way: closed form, series, walk."""
    t = Moves(data).t
    Y, mu = data.Y, np.maximum(Theta @ Phi, 1e-300)
    closed = (np.broadcast_to(t.code, Y.shape) < 0) | ((t.kind == GEOMETRIC) & (Y <= 0))
    s = t.series
    n = Y.size
    ints, flts = np.zeros((4, n), np.int64), np.zeros((5, n))
    ints[0], ints[1], flts[0] = Y.ravel(), np.broadcast_to(t.code, Y.shape).ravel(), mu.ravel()
    n_fail = series.evaluate(n, ints, flts, s.lo, s.coef, s.ratio, s.log_p)
    walked = np.zeros(n, bool)
    walked[ints[2, :n_fail]] = True
    walked &= ~closed.ravel()
    return closed.mean(), 1.0 - closed.mean() - walked.mean(), walked.mean()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="pairs DATA FIT")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if len(args.files) % 2:
        parser.error("give the files in pairs: DATA FIT")
    print(f"{'data':60s} {'cells':>7s} {'rows':>6s} {'cols':>6s} {'both':>6s} "
          f"{'walks: both':>11s} {'ratio':>6s}  closed/series/walk")
    with threads(1):
        for data_file, fit_file in zip(args.files[::2], args.files[1::2], strict=True):
            data, Theta, Phi = load(data_file, fit_file)
            ns = {}
            for name, fix in (("rows", {"phi": 1}), ("cols", {"theta": 1}), ("both", {})):
                part = FitData(data.Y, data.alpha, data.mask, fix, data.mechanism)
                ns[name] = seconds(part, Theta, Phi, False, args.repeats) * 1e9 / data.Y.size
            walks = seconds(data, Theta, Phi, True, args.repeats) * 1e9 / data.Y.size
            share = "/".join(f"{x:.3f}" for x in ways(data, Theta, Phi))
            print(f"{data_file[-60:]:60s} {data.Y.size:7d} {ns['rows']:6.1f} {ns['cols']:6.1f} "
                  f"{ns['both']:6.1f} {walks:11.1f} {walks / ns['both']:6.2f}  {share}",
                  flush=True)


if __name__ == "__main__":
    main()
