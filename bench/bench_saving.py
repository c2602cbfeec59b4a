"""What a saved sample costs a whole ``lppf fit`` job, in sweeps, and the job's memory.

    python bench/bench_saving.py                       # heavy-a, private, 1000 x 1000, K = 50
    python bench/bench_saving.py --case light --method private-collapsed --size 500

Runs ``lppf fit`` (fresh processes, ``--threads``) on a privatized case of
:mod:`bench_speed` three ways, each with one burn-in sweep and so the same start: A, 36
iterations saving every one (35 samples); B, 36 iterations saving every 7th (5); C, 71
iterations saving every 14th (5). A saved sample costs ``(A - B) / 30`` (stored draws,
diagnostics, the posterior sums, writing the fit file: everything a user pays), a sweep
``(C - B) / 35``. Prints the best of ``--repeats`` CPU seconds of each job (user + system,
robust to a busy machine) and wall seconds, their ratio, each job's peak resident memory and
fit file size, and the memory a saved sample adds against the bytes it adds to the file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kernels import make_case
from bench_speed import CASES

JOBS = {"A": (36, 1), "B": (36, 7), "C": (71, 14)}  # iterations, thin (burn-in 1)


def run_job(cmd: list[str]) -> tuple[float, float, float]:
    """(CPU seconds, wall seconds, peak resident MB) of one child process."""
    tic = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - tic
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.read().decode()}")
    proc.stderr.close()
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=list(CASES), default="heavy-a")
    parser.add_argument("--method", default="private",
                        choices=("private", "private-collapsed", "naive"))
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    shape, rate, alpha, seed = CASES[args.case]
    data, _ = make_case(args.case, seed, (shape, rate, alpha), n=args.size, k=args.components)
    best = {j: [np.inf, np.inf, 0.0, 0] for j in JOBS}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        np.savez(d / "in.npz", Y_noisy=data.Y, alpha=np.array(alpha))
        for r in range(args.repeats + 1):  # the first round warms the numba caches
            for job, (n_iter, thin) in JOBS.items():
                out = d / f"{job}.npz"
                cmd = [sys.executable, "-m", "lppf", "fit", str(d / "in.npz"), str(out),
                       "--method", args.method, "--components", str(args.components),
                       "--iterations", str(n_iter), "--burnin", "1", "--thin", str(thin),
                       "--seed", "0", "--threads", str(args.threads), "--quiet"]
                cpu, wall, rss = run_job(cmd)
                if r > 0:
                    b = best[job]
                    b[0], b[1], b[2] = min(b[0], cpu), min(b[1], wall), max(b[2], rss)
                    b[3] = out.stat().st_size
    print(f"lppf fit {args.method}, {args.case} {args.size} x {args.size}, "
          f"K = {args.components}, {args.threads} threads; best of {args.repeats}")
    print("| job | iterations | saved | CPU s | wall s | peak MB | file MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for job, (n_iter, thin) in JOBS.items():
        cpu, wall, rss, size = best[job]
        print(f"| {job} | {n_iter} | {(n_iter - 1) // thin} | {cpu:.2f} | {wall:.2f} | "
              f"{rss:.0f} | {size / 1e6:.1f} |")
    for k, name in ((0, "CPU"), (1, "wall")):
        sample = (best["A"][k] - best["B"][k]) / 30
        sweep = (best["C"][k] - best["B"][k]) / 35
        print(f"{name}: a saved sample {sample:.4f} s, a sweep {sweep:.4f} s, "
              f"ratio {sample / sweep:.3f} (target <= 0.1)")
    grown = (best["A"][2] - best["B"][2]) / 30
    stored = (best["A"][3] - best["B"][3]) / 30 / 1e6
    print(f"memory per saved sample {grown:.2f} MB against {stored:.2f} MB of output")


if __name__ == "__main__":
    main()
