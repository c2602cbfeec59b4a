import sys

from lppf.cli import main

sys.exit(main())
