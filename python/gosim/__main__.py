"""`python -m gosim ARGS`: the gosim command-line program (as the `gosim` console script)."""
import sys

from ._program import main

sys.exit(main())
