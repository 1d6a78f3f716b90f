"""tests/rewrite_cache.py: the pycs the xdist controller writes are the ones a worker would write
itself (pytest's rewritten code, byte for byte), pytest reads them back, and only files pytest
rewrites are written."""

from __future__ import annotations

import importlib.util
import marshal

import rewrite_cache
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, get_cache_dir

SOURCE = "def test_one():\n    x = 2\n    assert x + 1 == 4, 'rewritten'\n"


def _names(co) -> set[str]:
    """Every local and global name of a code object and the code objects nested in it."""
    out = set(co.co_names) | set(co.co_varnames)
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            out |= _names(c)
    return out


def test_prewritten_pyc_is_pytests_own_rewrite(tmp_path, request, monkeypatch):
    test_file = tmp_path / "test_sample.py"
    test_file.write_text(SOURCE)
    helper = tmp_path / "helper.py"  # not a test module: pytest does not rewrite it, nor do we
    helper.write_text("X = 1\n")
    for skipped in (".hidden", "env"):  # pytest collects from neither: not walked
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "test_skipped.py").write_text(SOURCE)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    config = request.config
    monkeypatch.setattr(config, "args", [str(tmp_path)])
    assert rewrite_cache._targets(config) == [test_file]
    assert rewrite_cache.prewrite(config) == 1
    pyc = get_cache_dir(test_file) / ("test_sample" + PYC_TAIL)
    cached = _read_pyc(test_file, pyc)
    assert cached is not None
    assert cached == _rewrite_test(test_file, config)[1]  # code objects: bytecode, constants, names, lines
    assert any(n.startswith('@py_assert') for n in _names(cached))  # pytest's rewrite, not plain compile
    assert rewrite_cache.prewrite(config) == 0  # valid already: not written again
    assert not (get_cache_dir(helper) / ("helper" + PYC_TAIL)).exists()
    test_file.write_text(SOURCE.replace("4", "5"))  # an edited source: its pyc is stale, rewritten
    assert _read_pyc(test_file, pyc) is None and rewrite_cache.prewrite(config) == 1


def test_only_an_xdist_controller_prewrites(request, monkeypatch):
    config = request.config
    monkeypatch.setattr(config.option, "numprocesses", 2, raising=False)
    monkeypatch.setattr(config.option, "dist", "load", raising=False)
    monkeypatch.delattr(config, "workerinput", raising=False)
    assert rewrite_cache.wanted(config)
    monkeypatch.setattr(config, "workerinput", {}, raising=False)
    assert not rewrite_cache.wanted(config)  # a worker reads, never writes for the others
    monkeypatch.delattr(config, "workerinput")
    monkeypatch.setattr(config.option, "numprocesses", 0)
    assert not rewrite_cache.wanted(config)


def _mtime_pyc(state, co, source_hash, pyc):  # noqa: ARG001 — pytest's _write_pyc signature
    """A pyc as an mtime-checked pytest writes it (flags word 0: validated by mtime and size)."""
    pyc.write_bytes(importlib.util.MAGIC_NUMBER + b"\0\0\0\0" + b"\0" * 8 + marshal.dumps(co))
    return True


def test_an_mtime_checked_pyc_is_removed_and_nothing_more_written(tmp_path, request, monkeypatch):
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / name).write_text(SOURCE)
    config = request.config
    monkeypatch.setattr(config, "args", [str(tmp_path)])
    written = rewrite_cache._prewrite_all(config, None, PYC_TAIL, _read_pyc, _rewrite_test, _mtime_pyc,
                                          get_cache_dir)
    assert written == 0
    assert list(get_cache_dir(tmp_path / "test_a.py").glob("*" + PYC_TAIL)) == []


def test_a_module_pytest_cannot_rewrite_is_skipped(tmp_path, request, monkeypatch):
    deep = tmp_path / "test_deep.py"
    deep.write_text("X = " + "+".join(["1"] * 20000) + "\n")  # RecursionError in the AST, not SyntaxError
    ok = tmp_path / "test_ok.py"
    ok.write_text(SOURCE)
    config = request.config
    monkeypatch.setattr(config, "args", [str(tmp_path)])
    assert rewrite_cache.prewrite(config) == 1  # test_ok's; test_deep left to its worker's error
    assert _read_pyc(ok, get_cache_dir(ok) / ("test_ok" + PYC_TAIL)) is not None
    assert not (get_cache_dir(deep) / ("test_deep" + PYC_TAIL)).exists()
