"""Parser throughput on the real sample, streamed from its tarball.

    python bench/bench_enron.py [TARBALL]

Prints files per second (wall clock and CPU time) for the tarball stream alone and for
stream + parse + deduplication
(all folders parsed, none excluded, bodies kept: the worst case), and the time this implies
for the full CMU corpus (517,401 files) in one process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from lppf.enron.parse import read_corpus
from lppf.enron.source import iter_raw

FULL_CORPUS_FILES = 517_401
DEFAULT = Path(os.environ.get("LPPF_ENRON_SAMPLE", Path(__file__).resolve().parents[2]
                              / "shared/data/enron_sample_12.tar.gz"))


def rate(label: str, wall: float, cpu: float, files: int) -> None:
    print(f"{label:<24} {files} files: wall {wall:6.2f} s = {files / wall:6.0f} files/s, "
          f"cpu {cpu:6.2f} s = {files / cpu:6.0f} files/s; full corpus ~"
          f"{FULL_CORPUS_FILES * wall / files / 60:4.1f} min wall, "
          f"{FULL_CORPUS_FILES * cpu / files / 60:4.1f} min cpu")


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def main(path: Path) -> None:
    wall, cpu = clocks()
    n = sum(1 for _ in iter_raw(path))
    rate("tarball stream only", clocks()[0] - wall, clocks()[1] - cpu, n)
    wall, cpu = clocks()
    corpus = read_corpus(path, exclude_folders=())
    rate("stream + parse + dedup", clocks()[0] - wall, clocks()[1] - cpu,
         corpus.summary["files read"])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
