"""``python -m softhard``: the ``softhard`` command line (:mod:`softhard.entry`)."""

import sys

from .entry import main

if __name__ == "__main__":
    sys.exit(main())
