"""Path probes that never raise: "is this argument a file / a directory / there at all?".

A command-line argument may be an inline formula or a NAME as well as a path; asking the OS about
it can fail for reasons that only mean "no such path" — a component longer than the file system
allows (``ENAMETOOLONG``, e.g. a 300-character inline formula), a NUL character, a permission
error on a parent.  Every probe of an argument goes through these (issue cli6 #3), so that such
an argument is simply "not a file" and the caller's own message (or the formula parser) follows.
Standard library only (imported by the light command-line modules).
"""

from __future__ import annotations

import os
from pathlib import Path


def is_file(path: str | os.PathLike) -> bool:
    """``Path(path).is_file()``, False where the OS cannot answer (OSError, ValueError)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: str | os.PathLike) -> bool:
    """``Path(path).is_dir()``, False where the OS cannot answer (OSError, ValueError)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def exists(path: str | os.PathLike) -> bool:
    """``Path(path).exists()``, False where the OS cannot answer (OSError, ValueError)."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False
