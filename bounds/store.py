"""The storage layer of the derivation cache, without SymPy (ISSUE 16).

:mod:`softhard.bounds.cache` turns SymPy results into JSON and back; this module only keys, stores
and loads JSON values, so that a reader of cached results (a warm path that needs no live
derivation) can use the cache without importing SymPy.  The keys are exactly those
:mod:`~softhard.bounds.cache` documents: SHA-256 of the entry's kind, :func:`fingerprint` and the
entry's JSON inputs.

:func:`fingerprint` hashes the package version, SymPy's version (read from the installed
distribution's metadata as :mod:`importlib.metadata` reads it, :mod:`softhard.installed`: the
string ``sympy.__version__`` holds, the same keys as before this split, tested) and the source of
every module in ``bounds/``, ``constructions/`` and ``solver/``, subfolders included (:func:`source_files`; so editing a derivation,
an encoding, the command line's handlers or the schema invalidates every entry).

Where: ``$SOFTHARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/softhard``, else ``~/.cache/softhard``
(subdirectory ``derivations``); ``SOFTHARD_CACHE=0`` turns the disk layer off (the in-process
layer stays), and so does :func:`set_disk_cache` ``(False)`` for the rest of the process (``verify
--no-cache``: a replay from a live derivation, trusting no file of the cache).  A directory that cannot be written is ignored (results are then computed live).
Writes are atomic (``os.replace``); concurrent processes at worst compute an entry twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from ..installed import version as installed_version

_PKG_ROOT = Path(__file__).resolve().parent
#: folders whose sources a derivation or an encoding depends on (their hash is part of every key)
_SOURCE_DIRS = (_PKG_ROOT, _PKG_ROOT.parent / "constructions", _PKG_ROOT.parent / "solver")

_memory: dict[str, object] = {}  # key -> JSON value (both layers)
#: the values of ``$SOFTHARD_CACHE`` that turn the disk layer off (a user writing ``off`` means it)
OFF_VALUES = frozenset({"0", "false", "no", "off"})
#: the programmatic switch of the disk layer: [None] = ``$SOFTHARD_CACHE`` decides (:func:`set_disk_cache`)
_disk_switch: list[bool | None] = [None]
_fingerprint: list[str] = []


def _version(dist: str, missing: str) -> str:
    v = installed_version(dist)
    return missing if v is None else v


def source_files() -> list[Path]:
    """The files :func:`fingerprint` hashes: every ``*.py``, ``*.lark`` and ``*.json`` under
    :data:`_SOURCE_DIRS`, subfolders included (``solver/cli/handlers``, where the command line's
    options become parameters and the embedded default example lives; ``solver/schema``), each
    folder's in sorted relative-path order.  Found with :func:`os.walk` (the names pathlib's
    ``rglob`` finds, tested, at a third of its cost: ISSUE 16), ``__pycache__`` folders skipped."""
    out: list[Path] = []
    for d in _SOURCE_DIRS:
        found: list[tuple[str, str]] = []  # (path relative to d, posix; the path)
        for root, dirs, files in os.walk(d):
            rel = os.path.relpath(root, d).replace(os.sep, "/")
            found += [(name if rel == "." else f"{rel}/{name}", os.path.join(root, name)) for name in files + dirs
                      if name.endswith((".py", ".lark", ".json"))]
            dirs[:] = [x for x in dirs if x != "__pycache__"]
        out += [p for _, p in sorted((r, Path(p)) for r, p in found) if "__pycache__" not in p.parts]
    return out


def fingerprint() -> str:
    """Hash of the package version, SymPy's version and the derivation sources (computed once per
    process; a hex string).  Raises nothing: an uninstalled checkout is keyed by its sources."""
    if not _fingerprint:
        h = hashlib.sha256()
        h.update(_version("softhard", "0+unknown").encode())
        h.update(_version("sympy", "unknown").encode())
        for p in source_files():
            h.update(p.name.encode())
            h.update(p.read_bytes())
        _fingerprint.append(h.hexdigest())
    return _fingerprint[0]


def set_disk_cache(enabled: bool | None) -> None:
    """Turn the disk layer of the derivation cache on (True) or off (False) in this process, whatever
    ``$SOFTHARD_CACHE`` says; None: back to ``$SOFTHARD_CACHE``.  Off, nothing is read from or written
    to disk: every result is derived live (the in-process layer holds only what this process computed
    or, before the switch, read).  ``verify --no-cache`` sets it before any derivation; a process that
    already read entries from disk keeps what it derived from them in memory (use a fresh process).
    Raises :class:`TypeError` for anything but a bool or None."""
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"set_disk_cache takes True, False or None, got {enabled!r}")
    _disk_switch[0] = enabled


def disk_cache_enabled() -> bool:
    """Whether the disk layer is on: :func:`set_disk_cache`'s setting, else ``$SOFTHARD_CACHE`` is not
    one of :data:`OFF_VALUES` (``0``, ``false``, ``no``, ``off``, any case)."""
    if _disk_switch[0] is not None:
        return _disk_switch[0]
    return os.environ.get("SOFTHARD_CACHE", "1").strip().lower() not in OFF_VALUES


def cache_dir() -> Path | None:
    """The directory of the disk layer, or None when it is turned off (``SOFTHARD_CACHE=0`` or
    :func:`set_disk_cache` ``(False)``)."""
    if not disk_cache_enabled():
        return None
    base = os.environ.get("SOFTHARD_CACHE_DIR")
    if base:
        return Path(base) / "derivations"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "softhard" / "derivations"


def entry_key(kind: str, inputs) -> str:
    """The key of the entry ``(kind, inputs)`` (``inputs`` JSON-able): a SHA-256 hex string over
    ``[kind, fingerprint(), inputs]`` in canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps([kind, fingerprint(), inputs], sort_keys=True).encode()).hexdigest()


def load(key: str):
    """The JSON value stored under ``key`` (memory first, then disk), or None when there is none or
    the disk entry is unreadable (a malformed entry is then recomputed by the caller)."""
    if key in _memory:
        return _memory[key]
    d = cache_dir()
    if d is None:
        return None
    try:
        return json.loads((d / key[:2] / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def save(key: str, value) -> None:
    """Store the JSON value ``value`` under ``key`` in memory and, when the disk layer is on and
    writable, on disk (atomically).  Raises nothing for an unwritable directory."""
    _memory[key] = value
    d = cache_dir()
    if d is None:
        return
    try:
        sub = d / key[:2]
        sub.mkdir(parents=True, exist_ok=True)
        import tempfile  # (standard library, ~3 ms with shutil, random, bz2, lzma: a write's only)

        fd, tmp = tempfile.mkstemp(dir=sub, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(value, fh)
        os.replace(tmp, sub / f"{key}.json")
    except OSError:
        pass  # an unwritable cache is no error: the value was computed live


def cached_text(kind: str, inputs, compute: Callable[[], str]) -> str:
    """``compute()`` (a string), stored under ``(kind, inputs)`` (JSON-able inputs)."""
    key = entry_key(kind, inputs)
    hit = load(key)
    if isinstance(hit, str):
        return hit
    out = compute()
    save(key, out)
    return out
