"""Make the helpers in ``tests/`` (e.g. ``tests/geweke.py``) importable as ``from geweke ...``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
