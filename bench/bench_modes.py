"""Local modes on heavy-tailed counts: Poisson KL of mu_hat to the true mu, per seed.

    python bench/bench_modes.py                         # pmf, 8 seeds, alpha 0.5 and 0.9
    python bench/bench_modes.py --model community --seeds 8
    python bench/bench_modes.py --chains 2 --processes 2
    python bench/bench_modes.py --shape 200 100 --case 5   # a smaller case of the same kind
    python bench/bench_modes.py --model community --e0 0.5  # rescaling shape e0 f0 = 0.05

The cases are built as the E1/E2 experiments build theirs: base factors ~ Gamma(0.5,
scale 1/3) (community: scale 1), then every row of theta (pmf: documents; community:
actors) and, for pmf, every column of phi rescaled by Gamma(e0 f0, rate f0)
(:func:`lppf.synthetic.rescaled_truth`; pmf: 300 x 150, K = 5, e0 = 50, f0 = 0.001, i.e.
rescaling shape 0.05; community: V = 130, C = 5, e0 = 0.75, f0 = 0.1; ``--e0`` and ``--f0``
change them). ``--case`` seeds the truth and the noise (one data set, as in the default run);
seed s seeds the chain. Each fit runs the schedule of the offline config's experiment that
the case mirrors (``config/config.yaml``: pmf, E2's; community, E1's): iterations, burn-in,
thin and chains, each overridable. Prints one row per (alpha, method) with the KL of every
seed, then whether private and private-collapsed beat naive in every seed and their worst
ratio to the best KL over seeds.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np
import yaml

from lppf import mechanisms, synthetic
from lppf.mcmc import fit_mcmc
from lppf.metrics import poisson_kl
from lppf.validation import FitData

CASES = {"pmf": {"shape": (300, 150), "K": 5, "e0": 50.0, "f0": 0.001, "scale": 1 / 3},
         "community": {"shape": (130, 130), "K": 5, "e0": 0.75, "f0": 0.1, "scale": 1.0}}
METHODS = ("naive", "private", "private-collapsed")
CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
MIRRORS = {"pmf": "e2", "community": "e1"}  # the offline experiment each case is built like


def schedule(model: str) -> dict:
    """The MCMC settings of the offline config's experiment that ``model``'s case mirrors."""
    mcmc = yaml.safe_load(CONFIG.read_text())["experiments"][MIRRORS[model]]["mcmc"]
    return {"iterations": mcmc["iterations"], "burnin": mcmc["burnin"], "thin": mcmc["thin"],
            "chains": mcmc.get("chains", 1)}


def make_case(model: str, seed: int, alpha: float, shape: tuple | None = None,
              rescale: tuple | None = None) -> tuple[dict, FitData]:
    """(truth, privatized data) of seed ``seed``, ``shape`` rows x columns and ``rescale``
    (e0, f0) (defaults: the case's)."""
    c = CASES[model]
    e0, f0 = rescale or (c["e0"], c["f0"])
    rng = np.random.default_rng([seed, 2019])
    n_rows, n_cols = shape or c["shape"]
    base = {"theta": rng.gamma(0.5, c["scale"], (n_rows, c["K"]))}
    if model == "pmf":
        base["phi"] = rng.gamma(0.5, c["scale"], (c["K"], n_cols))
    else:
        base["pi"] = rng.gamma(0.5, c["scale"], (c["K"], c["K"]))
    truth = synthetic.rescaled_truth(rng, model, base, e0, f0)
    mask = np.zeros((n_rows, n_cols), bool)
    if model == "community":
        np.fill_diagonal(mask, True)
    Y = mechanisms.privatize(truth["Y"], alpha, rng)
    return truth, FitData(Y, np.full((1, 1), alpha), mask)


class Job(NamedTuple):
    """One fit: the case (model, shape, rescale, case), chain seed, alpha, method, schedule."""

    model: str
    shape: tuple | None
    rescale: tuple
    case: int
    seed: int
    alpha: float
    method: str
    n_iter: int
    burnin: int
    thin: int
    chains: int


def one_fit(job: Job) -> tuple:
    truth, data = make_case(job.model, job.case, job.alpha, job.shape, job.rescale)
    kwargs = {} if job.chains == 1 else {"n_chains": job.chains}
    tic = time.perf_counter()
    fit = fit_mcmc(job.model, data, method=job.method, n_components=CASES[job.model]["K"],
                   a0=0.1, b0=1.0, n_iter=job.n_iter, burnin=job.burnin, thin=job.thin,
                   threads=1, rng=np.random.default_rng([job.seed, 7]), **kwargs)
    cells = ~data.mask
    return job, poisson_kl(truth["mu"], fit.mu_hat, cells), time.perf_counter() - tic


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=tuple(CASES), default="pmf")
    p.add_argument("--case", type=int, default=0, help="seed of the truth and the noise")
    p.add_argument("--shape", type=int, nargs=2, metavar=("ROWS", "COLS"),
                   help="size of the case (default: pmf 300 150, community 130 130)")
    p.add_argument("--e0", type=float, help="rescaling shape / f0 (default: the case's)")
    p.add_argument("--f0", type=float, help="rescaling rate (default: the case's)")
    p.add_argument("--seeds", type=int, default=8, help="chains seeded 0, 1, ...")
    p.add_argument("--alphas", type=float, nargs="+", default=[0.5, 0.9])
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    for name in ("iterations", "burnin", "thin", "chains"):
        p.add_argument(f"--{name}", type=int, help="default: the offline config's")
    p.add_argument("--processes", type=int, default=2)
    args = p.parse_args()
    c = CASES[args.model]
    for name, value in {**schedule(args.model), "e0": c["e0"], "f0": c["f0"]}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    shape = tuple(args.shape) if args.shape else None
    rescale = (args.e0, args.f0)
    jobs = [Job(args.model, shape, rescale, args.case, s, a, m, args.iterations, args.burnin,
                args.thin, args.chains)
            for a in args.alphas for m in args.methods for s in range(args.seeds)]
    kl, seconds = {}, 0.0
    with ProcessPoolExecutor(args.processes) as pool:
        for job, value, sec in pool.map(one_fit, jobs):
            kl[(job.seed, job.alpha, job.method)] = value
            seconds += sec
    size = "x".join(map(str, shape or CASES[args.model]["shape"]))
    print(f"{args.model} {size} case {args.case}, e0 {rescale[0]:g}, f0 {rescale[1]:g}: "
          f"KL(mu* || mu_hat) per seed 0..{args.seeds - 1}, "
          f"{args.iterations} iterations, burn-in {args.burnin}, {args.chains} chain(s); "
          f"{seconds:.0f} s of fits")
    print("| alpha | method | " + " | ".join(f"s{s}" for s in range(args.seeds)) + " |")
    print("| --- | --- |" + " ---: |" * args.seeds)
    for a in args.alphas:
        for m in args.methods:
            row = " | ".join(f"{kl[(s, a, m)]:.3g}" for s in range(args.seeds))
            print(f"| {a} | {m} | {row} |")
    for a in args.alphas:
        for m in args.methods:
            if m == "naive" or "naive" not in args.methods:
                continue
            vals = np.array([kl[(s, a, m)] for s in range(args.seeds)])
            naive = np.array([kl[(s, a, "naive")] for s in range(args.seeds)])
            print(f"alpha {a} {m}: beats naive in {int((vals < naive).sum())}/{args.seeds}"
                  f" seeds; worst / best KL = {vals.max() / vals.min():.2f}")


if __name__ == "__main__":
    main()
