"""``python -m softhard.solver.cli``: the ``softhard`` command line."""

import sys

from . import main

sys.exit(main())
