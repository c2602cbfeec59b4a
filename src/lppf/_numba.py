"""Thread control and reproducible random streams for numba kernels.

numba keeps one random state per thread, so draws inside ``prange`` depend on how work is
scheduled. We reseed per fixed chunk instead: each chunk of work gets its own seed (drawn
from the caller's numpy ``Generator``) and calls ``np.random.seed`` before drawing, which
makes results identical for any number of threads. Also the kernels both samplers share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit

CHUNK = 64  # rows per reseeded chunk; fixed so results do not depend on the thread count


@contextmanager
def threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` numba threads (``None``: leave as is), restoring afterwards."""
    old = numba.get_num_threads()
    if n is not None:
        if n < 1:
            raise ValueError(f"threads must be >= 1, got {n}")
        numba.set_num_threads(min(int(n), numba.config.NUMBA_NUM_THREADS))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(old)


def at_most(n_chunks: int):
    """Run the block with no more threads than ``n_chunks`` chunks of parallel work: idle
    OpenMP workers cost milliseconds per call on a busy machine, which dominates small
    problems. Results never depend on it (chunks are reseeded)."""
    return threads(min(numba.get_num_threads(), max(int(n_chunks), 1)))


@njit(cache=True)
def multinomial(n, w, out, suffix):
    """Draw ``out ~ Mult(n, w / sum(w))`` (w >= 0, length K) by sequential conditional
    binomials; ``suffix`` (K,) float is scratch for the tail sums of ``w``."""
    K = w.shape[0]
    tail = 0.0
    for k in range(K):
        out[k] = 0
    rem = n
    for k in range(K - 1, -1, -1):
        tail += w[k]
        suffix[k] = tail
    for k in range(K - 1):
        if rem == 0:
            return
        p = w[k] / suffix[k] if suffix[k] > 0.0 else 0.0
        if p >= 1.0:
            out[k] = rem
            return
        if p > 0.0:
            out[k] = np.random.binomial(rem, p)  # noqa: NPY002 (numba)
            rem -= out[k]
    out[K - 1] = rem


def chunk_seeds(rng: np.random.Generator, n_items: int, chunk: int = CHUNK) -> np.ndarray:
    """One uint32 seed per chunk of ``chunk`` items, for ``np.random.seed`` inside numba."""
    n_chunks = max(1, -(-n_items // chunk))
    return rng.integers(0, 2**32 - 1, size=n_chunks, dtype=np.uint32).astype(np.int64)
