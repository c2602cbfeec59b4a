"""lppf: locally private Bayesian Poisson factorization.

Data owners privatize counts with the two-sided geometric mechanism
(:func:`lppf.mechanisms.privatize`); analysts fit Poisson factorization models to the
privatized counts while treating the true counts as latent.
"""

import os

# numba's OpenMP workers spin between parallel regions by default; on a shared machine that
# turns millisecond kernels into tens of milliseconds. Users can still override it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``, looked up on first use (importlib.metadata is slow to import)."""
    if name != "__version__":
        raise AttributeError(f"module 'lppf' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lppf")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
