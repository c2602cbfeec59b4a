"""Thread control and reproducible random streams for numba kernels.

numba keeps one random state per thread, so draws inside ``prange`` depend on how work is
scheduled. We reseed per fixed chunk instead: each chunk of work gets its own seed (drawn
from the caller's numpy ``Generator``) and calls ``np.random.seed`` before drawing, which
makes results identical for any number of threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np

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


def chunk_seeds(rng: np.random.Generator, n_items: int, chunk: int = CHUNK) -> np.ndarray:
    """One uint32 seed per chunk of ``chunk`` items, for ``np.random.seed`` inside numba."""
    n_chunks = max(1, -(-n_items // chunk))
    return rng.integers(0, 2**32 - 1, size=n_chunks, dtype=np.uint32).astype(np.int64)
