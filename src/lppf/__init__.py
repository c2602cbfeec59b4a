"""lppf: locally private Bayesian Poisson factorization.

Data owners privatize counts with the two-sided geometric mechanism
(:func:`lppf.mechanisms.privatize`); analysts fit Poisson factorization models to the
privatized counts while treating the true counts as latent.
"""

import os
from importlib.metadata import PackageNotFoundError, version

# numba's OpenMP workers spin between parallel regions by default; on a shared machine that
# turns millisecond kernels into tens of milliseconds. Users can still override it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    __version__ = version("lppf")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["__version__"]
