"""lppf: locally private Bayesian Poisson factorization.

Data owners privatize counts with the two-sided geometric mechanism
(:func:`lppf.mechanisms.privatize`); analysts fit Poisson factorization models to the
privatized counts while treating the true counts as latent.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lppf")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["__version__"]
