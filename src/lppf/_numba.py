"""Thread control and reproducible random streams for numba kernels.

numba keeps one random state per thread, so draws inside ``prange`` depend on how work is
scheduled. We reseed per fixed chunk instead: each chunk of work gets its own seed (drawn
from the caller's numpy ``Generator``) and calls ``np.random.seed`` before drawing, which
makes results identical for any number of threads. Kernels that draw many uniforms also
keep a chunk-local xoshiro256+ state (:func:`rng_state`, :func:`uniform`; Blackman and
Vigna 2018), several times cheaper per uniform than numba's ``np.random.random``. Scalar
functions called per cell with such a state (or any array) are ``inline="always"``: a call
to a compiled function with array arguments pays reference counting, about 10 ns, more
than a draw. The gamma, binomial and multinomial draws on such a state are in :mod:`lppf.draws`.
Sums over the cells of a parallel kernel go through one pattern: each chunk (or, for
integer counts, each thread) adds into its own slice of a buffer from :func:`chunk_partials`
(:func:`thread_partials`), and :func:`total` adds the slices in a fixed order. The log
likelihoods of the samplers are in :mod:`lppf.likelihood`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit

CHUNK = 64  # rows per reseeded chunk; fixed so results do not depend on the thread count
_U64 = np.uint64
_2M53 = 2.0**-53


@contextmanager
def threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` numba threads (``None``: leave as is), restoring afterwards."""
    old = numba.get_num_threads()
    if n is not None and n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    new = old if n is None else min(int(n), numba.config.NUMBA_NUM_THREADS)
    if new == old:  # setting costs microseconds: a small fit's sweep has several such blocks
        yield old
        return
    numba.set_num_threads(new)
    try:
        yield new
    finally:
        numba.set_num_threads(old)


def concurrent_kernels() -> bool:
    """Whether several Python threads may run parallel kernels at once: numba's ``omp`` and
    ``tbb`` threading layers allow it, ``workqueue`` does not (nor a layer not yet loaded)."""
    try:
        return numba.threading_layer() in ("omp", "tbb")
    except ValueError:
        return False


@contextmanager
def blas_single() -> Iterator[None]:
    """Run the block with BLAS on one thread. The samplers' products are small (D x K times
    K x V) and BLAS workers that keep spinning after each product take the cores from the
    numba kernels that follow: on a busy 2-core machine the count update ran 1.5x faster."""
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency; cheap, lazy

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def at_most(n_chunks: int):
    """Run the block with no more threads than ``n_chunks`` chunks of parallel work: idle
    OpenMP workers cost milliseconds per call on a busy machine, which dominates small
    problems. Results never depend on it (chunks are reseeded)."""
    return threads(min(numba.get_num_threads(), max(int(n_chunks), 1)))


def chunk_partials(n_chunks: int, shape: tuple[int, ...] = (), dtype=np.float64) -> np.ndarray:
    """Zeroed (n_chunks, *shape) buffer of partial sums: chunk ``c`` of a ``prange`` kernel
    adds into slice ``c`` only. Reduce it with :func:`total`."""
    return np.zeros((n_chunks, *shape), dtype)


def thread_partials(shape: tuple[int, ...], dtype=np.int64) -> np.ndarray:
    """Zeroed (n_threads, *shape) integer buffer, one slice per numba thread (index it with
    ``numba.get_thread_id()``; allocate it under the thread count the kernel runs with).
    Smaller than one slice per chunk when ``shape`` is large. Integers only: integer sums
    are exact, so which thread ran which chunk does not change :func:`total`, where a float
    sum would."""
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"per-thread partial sums must be integers, got {np.dtype(dtype)}")
    return np.zeros((numba.get_num_threads(), *shape), dtype)


def total(X: np.ndarray) -> np.ndarray:
    """Sum of the partial sums ``X`` (n, ...) over its leading axis, in numpy's fixed order:
    the same result for any thread count."""
    return X.sum(axis=0)


@njit(cache=True)
def rng_state(seed):
    """xoshiro256+ state (4,) uint64 from an integer seed, expanded by splitmix64."""
    state = np.empty(4, np.uint64)
    z = _U64(seed)
    for i in range(4):
        z += _U64(0x9E3779B97F4A7C15)
        x = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
        state[i] = x ^ (x >> _U64(31))
    return state


@njit(cache=True, inline="always")
def uniform(state):
    """Next uniform on [0, 1) (53 bits) of the xoshiro256+ ``state``, advanced in place."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    out = s0 + s3
    t = s1 << _U64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _U64(45)) | (s3 >> _U64(19))
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return float(out >> _U64(11)) * _2M53


def chunk_seeds(rng: np.random.Generator, n_items: int, chunk: int = CHUNK) -> np.ndarray:
    """One uint32 seed per chunk of ``chunk`` items, for ``np.random.seed`` inside numba."""
    return rng.integers(0, 2**32 - 1, size=n_chunks(n_items, chunk), dtype=np.uint32
                        ).astype(np.int64)


def n_chunks(n_items: int, chunk: int = CHUNK) -> int:
    """Number of fixed chunks of ``chunk`` items (at least one)."""
    return max(1, -(-n_items // chunk))


@njit(cache=True, inline="always")
def at(X, i, j):
    """X[i, j] with broadcasting over axes of length 1."""
    return X[i if X.shape[0] > 1 else 0, j if X.shape[1] > 1 else 0]
