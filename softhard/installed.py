"""Installed distributions' versions and files, found and read as :mod:`importlib.metadata` finds
and reads them, without importing it (~20 ms of every command's start-up: it loads :mod:`email`,
:mod:`zipfile`, :mod:`importlib.resources` …; ISSUE 16).  Standard library only.

:func:`version` and :func:`files` give exactly what ``importlib.metadata.version`` and
``[(str(f), str(f.locate())) for f in importlib.metadata.files(...)]`` give, read directly for the
usual layout: ``*.dist-info`` / ``*.egg-info`` entries of the directories on ``sys.path``, found by
the standard path finder (in ``sys.path`` order, each directory in :func:`os.listdir` order, names
normalised as PEP 503 says: ``importlib.metadata``'s ``Prepared.normalize``), a ``Version`` header
on one plain line of the entry's ``METADATA`` (or ``PKG-INFO``), its files listed in ``RECORD``.
Anything else — a zip file or an egg on ``sys.path``, a meta-path finder with distributions of its
own, another header layout, an unreadable file — is answered by :mod:`importlib.metadata` itself
(imported then).  Tested against it for every library a certificate records
(tests/test_installed.py).
"""

from __future__ import annotations

import contextlib

import os
import re
import sys
from importlib.machinery import PathFinder

#: a distribution's name normalised (PEP 503; importlib.metadata's ``Prepared.normalize``)
_SEPARATORS = re.compile(r"[-_.]+")
#: a metadata header line ``Name: value`` (RFC 822 field name: printable ASCII except ':')
_HEADER = re.compile(r"^([\041-\071\073-\176]+):[ \t]*(.*)$")
#: a plain version string (what a ``Version`` header holds: PEP 440, a local label, ``0+unknown``)
_PLAIN = re.compile(r"^[A-Za-z0-9.+!_-]+$")

#: absolute directory -> (its mtime_ns, {normalised distribution name: [its metadata entries, listdir order]})
_LISTINGS: dict[str, tuple[int, dict[str, list[str]]]] = {}


class _Unusual(Exception):
    """A layout the direct reading does not cover: :mod:`importlib.metadata` answers instead."""


def normalize(name: str) -> str:
    """``name`` as importlib.metadata compares distribution names: runs of ``-_.`` as one ``_``, lower case."""
    return _SEPARATORS.sub("-", name).lower().replace("-", "_")


def _index(root: str) -> dict[str, list[str]]:
    """The metadata entries (``*.dist-info``, ``*.egg-info``) of the ``sys.path`` entry ``root``, by
    normalised name (importlib.metadata's ``Lookup``; re-read when the directory's mtime changes).
    Raises :class:`_Unusual` for an entry that exists and is not a directory (a zip) or an egg."""
    where = root or "."
    try:
        st = os.stat(where)
    except OSError:
        return {}  # not there: importlib.metadata finds nothing in it either
    if not os.path.isdir(where) or os.path.basename(root).lower().endswith(".egg"):
        raise _Unusual(root)
    here = os.path.abspath(where)
    hit = _LISTINGS.get(here)
    if hit is not None and hit[0] == st.st_mtime_ns:
        return hit[1]
    out: dict[str, list[str]] = {}
    for child in os.listdir(where):
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            out.setdefault(normalize(low.rpartition(".")[0].partition("-")[0]), []).append(child)
    _LISTINGS[here] = (st.st_mtime_ns, out)
    return out


def _find(name: str) -> tuple[str, str] | None:
    """``(sys.path entry, metadata entry)`` of the distribution ``name`` importlib.metadata would
    take (the first found), None when there is none.  Raises :class:`_Unusual`."""
    for finder in sys.meta_path:
        if hasattr(finder, "find_distributions") and finder is not PathFinder:
            raise _Unusual(finder)
    key = normalize(name)
    for root in sys.path:
        if not isinstance(root, str):
            raise _Unusual(root)
        found = _index(root).get(key)
        if found:
            return root, found[0]
    return None


def _read(root: str, entry: str, filename: str) -> str | None:
    """The text of ``filename`` in a metadata entry (None when it is not there, as importlib.metadata's
    ``read_text``)."""
    try:
        with open(os.path.join(root, entry, filename) if filename else os.path.join(root, entry),
                  encoding="utf-8") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def _version(name: str) -> str | None:
    """The direct reading of :func:`version` (raises :class:`_Unusual`)."""
    found = _find(name)
    if found is None:
        return None
    root, entry = found
    text = _read(root, entry, "METADATA") or _read(root, entry, "PKG-INFO") or _read(root, entry, "")
    if not text:
        raise _Unusual(entry)
    value, last = None, None
    for line in text.split("\n"):  # (read in universal-newline mode, as importlib.metadata reads it)
        if not line:
            break  # the end of the headers
        if line[0] in " \t" and last is not None and last != "version":
            continue  # a continuation of another header (a long Description, License, …)
        m = _HEADER.match(line)
        if m is None:  # a missing separator, a continuation of Version, …: the email parser's business
            raise _Unusual(line)
        last = m.group(1).lower()
        if last == "version" and value is None:
            value = m.group(2)
    else:
        raise _Unusual(entry)  # no blank line after the headers
    if value is None or not _PLAIN.match(value):
        raise _Unusual(value)
    return value


def version(name: str) -> str | None:
    """The installed version of the distribution ``name`` (``importlib.metadata.version(name)``),
    None when it is not installed (importlib.metadata's ``PackageNotFoundError``)."""
    # an unusual layout or an unreadable metadata file: importlib.metadata decides (below)
    with contextlib.suppress(_Unusual, OSError, UnicodeError, ValueError):
        return _version(name)
    from importlib import metadata  # the general case (see the module docstring)

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _files(name: str) -> list[tuple[str, str]] | None:
    """The direct reading of :func:`files` (raises :class:`_Unusual`)."""
    import csv  # light (a C module)
    from pathlib import Path, PurePosixPath

    found = _find(name)
    if found is None:
        return None
    root, entry = found
    text = _read(root, entry, "RECORD")
    if not text:  # no RECORD: an egg-info's other file lists
        raise _Unusual(entry)
    out = []
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error as e:
        raise _Unusual(entry) from e
    base = Path(root, entry).parent  # (importlib.metadata's ``locate_file``: the entry's folder / the path)
    for row in rows:
        if not 1 <= len(row) <= 3:
            raise _Unusual(row)
        rel = PurePosixPath(row[0])
        out.append((str(rel), str(base / rel)))
    return out


def files(name: str) -> list[tuple[str, str]] | None:
    """The files the distribution ``name`` lists (its ``RECORD``), each as ``(its path in the
    record, posix, as importlib.metadata's ``PackagePath`` prints it; the path it is located at)``,
    None when the distribution is not installed or lists no files (importlib.metadata's
    ``files(name)`` is None)."""
    # an unusual layout or an unreadable metadata file: importlib.metadata decides (below)
    with contextlib.suppress(_Unusual, OSError, UnicodeError, ValueError):
        return _files(name)
    from importlib import metadata  # the general case (see the module docstring)

    try:
        got = metadata.files(name)
    except metadata.PackageNotFoundError:
        return None
    return None if got is None else [(str(f), str(f.locate())) for f in got]
