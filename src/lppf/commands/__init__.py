"""Sub-commands of the ``lppf`` CLI; each module defines ``register(subparsers)``."""
