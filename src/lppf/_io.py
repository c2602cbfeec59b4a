"""Old name of :mod:`lppf.io`, kept so that existing imports keep working."""

from lppf.io import *  # noqa: F403
from lppf.io import __all__  # noqa: F401
