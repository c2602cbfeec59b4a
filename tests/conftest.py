"""Make the helpers in ``tests/`` (e.g. ``tests/geweke.py``) importable as ``from geweke ...``,
and start the longest test file first."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

LONGEST = "test_workflow.py"  # the workflow end to end: a third of the suite's time


def pytest_collection_modifyitems(items):
    """The workflow's tests first (a stable sort keeps every other order): with
    ``--dist loadfile`` a worker takes them at the start instead of running them alone at
    the end while the other workers idle."""
    items.sort(key=lambda item: item.path.name != LONGEST)
