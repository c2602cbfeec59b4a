"""lppf: locally private Bayesian Poisson factorization.

Data owners privatize counts with the two-sided geometric mechanism
(:func:`lppf.mechanisms.privatize`); analysts fit Poisson factorization models to the
privatized counts while treating the true counts as latent
(:class:`lppf.estimators.PoissonMF`, :class:`lppf.estimators.CommunityModel`, scikit-learn
estimators). ``from lppf import privatize, PoissonMF, CommunityModel`` imports them on first
use, so that ``import lppf`` stays cheap.
"""

import os

# numba's OpenMP workers spin between parallel regions by default; on a shared machine that
# turns millisecond kernels into tens of milliseconds. Users can still override it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_LAZY = {"privatize": "lppf.mechanisms", "PoissonMF": "lppf.estimators",
         "CommunityModel": "lppf.estimators"}


def __getattr__(name: str):
    """The public names above and ``__version__``, imported on first use (importlib.metadata
    and scikit-learn are slow to import)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("lppf")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            return "0.0.0"
    raise AttributeError(f"module 'lppf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, "__version__"])


__all__ = ["CommunityModel", "PoissonMF", "__version__", "privatize"]
