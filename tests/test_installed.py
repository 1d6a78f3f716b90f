"""softhard/installed.py: distributions' versions and files read without importing
importlib.metadata (ISSUE 16) must be exactly importlib.metadata's — for every library an artefact
key, the fingerprint or the solver child reads, and for made-up layouts on ``sys.path`` that take
the direct reading (plain headers, a long folded description, PEP 503 names) or hand over to
importlib.metadata (a folded Version, no RECORD, a metadata file instead of a directory)."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest

from softhard import installed
from softhard.solver.replay_memo import LIBRARIES


def _reference_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _reference_files(name: str) -> list[tuple[str, str]] | None:
    try:
        got = metadata.files(name)
    except metadata.PackageNotFoundError:
        return None
    return None if got is None else [(str(f), str(f.locate())) for f in got]


@pytest.mark.parametrize("name", [*LIBRARIES, "softhard", "sympy", "SymPy", "python_flint", "pytest",
                                  "no-such-distribution-softhard"])
def test_installed_versions_are_importlib_metadatas(name):
    assert installed.version(name) == _reference_version(name)


def test_installed_files_are_importlib_metadatas():
    got = installed.files("z3-solver")
    assert got and got == _reference_files("z3-solver")
    assert installed.files("no-such-distribution-softhard") is None


LAYOUTS = {
    # entry name -> {file name: text} (a str: the entry is a file)
    "plain": ("Plain_Dist-1.2.dist-info", {"METADATA": "Metadata-Version: 2.1\nName: plain-dist\nVersion: 1.2\n\nbody\n",
                                           "RECORD": "plain_dist/__init__.py,sha256=x,3\n../../bin/tool,,\n"}),
    "folded description": ("folded-0.3.dist-info", {"METADATA": "Name: folded\nDescription: a long\n  text, folded\n"
                                                               "\tagain\nversion: 0.3rc1\n\n"}),
    "folded version": ("fv-1.dist-info", {"METADATA": "Name: fv\nVersion: 1.0\n  .post1\n\n"}),
    "no record": ("norec-2.egg-info", {"PKG-INFO": "Name: norec\nVersion: 2\n\n", "SOURCES.txt": "a.py\n"}),
    "metadata file": ("eggfile-4.egg-info", "Metadata-Version: 1.0\nName: eggfile\nVersion: 4.0\n"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_made_up_layouts_read_as_importlib_metadata_reads_them(layout, tmp_path, monkeypatch):
    entry, content = LAYOUTS[layout]
    if isinstance(content, str):
        (tmp_path / entry).write_text(content)
    else:
        (tmp_path / entry).mkdir()
        for fname, text in content.items():
            (tmp_path / entry / fname).write_text(text)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    name = entry.split("-")[0].replace("_", ".")
    assert installed.version(name) == _reference_version(name) is not None
    assert installed.files(name) == _reference_files(name)
