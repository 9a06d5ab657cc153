"""`python -m clover_code`: the same entry point as the `clover-code` console script."""

import sys

from clover_code.cli import main

sys.exit(main())
