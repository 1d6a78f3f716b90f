"""pytest's rewritten test modules written once, by the xdist controller, for every worker to read.

pytest rewrites the ``assert`` statements of every test module and conftest it imports (parse,
rewrite the AST, compile) and caches the result as a pyc in ``__pycache__`` (``*-pytest-*.pyc``,
hash-based in the pytest releases that check a cached pyc against the source's hash) — except when ``PYTHONDONTWRITEBYTECODE`` is set, as in this
project's sandboxes and so in ``.ci/run``.  Then each xdist worker rewrites all ~80 test modules
again while collecting: ~2 s of CPU per worker (benchmarks/README.md, ISSUE 16, branch ``cli12``).
:func:`prewrite` does it once in the controller, before the workers start, with pytest's own
functions, so the pycs are the ones a worker would write itself (pytest reads a cached pyc whether
or not it may write one, and checks it against the source's hash).

It only caches: a file pytest would not rewrite is skipped, and a pytest whose internals moved
(these are private functions: any error of theirs) makes :func:`prewrite` do nothing — each worker
then rewrites as before.  It writes them with ``PYTHONDONTWRITEBYTECODE`` set (that is its point:
pytest's own pycs in ``__pycache__``, as a run without the variable leaves them).  A pytest whose pycs are not hash-based (older releases validate them by
the source's mtime and size only, so an edit of the same size within one second would run the old
module) gets no pyc from here: the first pyc written is read back and, if its header does not say
"hash-based, checked", removed, and nothing more is written.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

try:  # pytest's own matcher, as its rewriting hook uses it (private: absent, prewrite does nothing)
    from _pytest.pathlib import fnmatch_ex
except ImportError:  # pragma: no cover - another pytest
    fnmatch_ex = None


def _walk(top: Path, skip: list[str]) -> list[Path]:
    """The ``.py`` files under ``top``, not descending into what pytest does not collect from:
    directories matching ``norecursedirs`` (hidden ones, ``build``, ``venv``… by default) and
    virtual environments (a ``pyvenv.cfg``)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if not any(fnmatch.fnmatch(d, p) for p in skip)
                             and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg")))
        found += [Path(dirpath, f) for f in sorted(filenames) if f.endswith(".py")]
    return found


def _targets(config) -> list[Path]:
    """The ``.py`` files under the run's arguments (directories walked as :func:`_walk`, ``::``
    selections cut) that pytest's assertion rewriter would rewrite: conftests and files matching
    ``python_files``.

    :returns: absolute paths, sorted, without duplicates.
    """
    patterns = config.getini("python_files")
    skip = config.getini("norecursedirs")
    root = Path(str(config.rootpath))
    found = set()
    for arg in config.args or [str(root)]:
        path = Path(arg.split("::")[0])
        path = (path if path.is_absolute() else Path(str(config.invocation_params.dir)) / path).resolve()
        files = _walk(path, skip) if path.is_dir() else [path] if path.suffix == ".py" else []
        # the conftests above a selected file or directory, up to the rootdir, are imported too
        parent = path if path.is_dir() else path.parent
        while parent == root or root in parent.parents:
            files.append(parent / "conftest.py")
            parent = parent.parent
        for f in files:
            if f.is_file() and (f.name == "conftest.py" or any(fnmatch_ex(p, f) for p in patterns)):
                found.add(f)
    return sorted(found)


def prewrite(config) -> int:
    """Write pytest's rewritten pyc of every test module and conftest under the run's arguments
    that has no valid one yet.

    :param config: the controller's pytest config (its assertion mode and ``python_files``).
    :returns: the number of pycs written (0 under ``--assert=plain`` or if pytest's internals
        moved).
    """
    if getattr(config.option, "assertmode", None) != "rewrite" or fnmatch_ex is None:
        return 0
    try:
        from _pytest.assertion.rewrite import (PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc,
                                               assertstate_key, get_cache_dir)

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):  # pragma: no cover - another pytest: the workers rewrite
        return 0
    try:
        return _prewrite_all(config, state, PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir)
    except Exception:  # noqa: BLE001 — only a cache: whatever pytest's internals do, the workers rewrite
        return 0


#: a pyc's flags word (PEP 552) for "hash-based, checked against the source": the only pycs written here
HASH_CHECKED = b"\x03\x00\x00\x00"


def _prewrite_all(config, state, pyc_tail, read_pyc, rewrite_test, write_pyc, cache_dir) -> int:
    """:func:`prewrite`'s loop, with pytest's private functions passed in.  A file pytest cannot
    rewrite (unreadable, a syntax error, an AST too deep) is skipped: its worker reports it, as
    without this cache.  Stops (removing the pyc it just wrote) at the first pyc whose header is
    not :data:`HASH_CHECKED`."""
    written = 0
    for fn in _targets(config):
        pyc = cache_dir(fn) / (fn.name[:-3] + pyc_tail)
        if read_pyc(fn, pyc) is not None:
            continue
        try:
            pyc.parent.mkdir(exist_ok=True)
            source_hash, co = rewrite_test(fn, config)
        except Exception:  # noqa: BLE001 — OSError, SyntaxError, RecursionError, …
            continue
        if not write_pyc(state, co, source_hash, pyc):
            continue
        with open(pyc, "rb") as f:
            header = f.read(8)
        if header[4:8] != HASH_CHECKED:  # an mtime-checked pyc: could serve an edited module's old code
            pyc.unlink()
            return written
        written += 1
    return written


def wanted(config) -> bool:
    """Whether this process is an xdist controller that will start workers (``-n N``, N ≥ 1): each
    would otherwise rewrite every module it has no valid pyc of itself (all of them, with
    ``PYTHONDONTWRITEBYTECODE`` set; on a fresh checkout, otherwise)."""
    return (not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", 0))
            and getattr(config.option, "dist", "no") != "no")
