"""Test layout: ``tests/constructions``, ``tests/bounds``, ``tests/solver`` mirror the packages;
``tests/`` itself holds the end-to-end tests and the shared oracles and helpers (``languages``,
``counting_oracles``, ``models_util``, ``tamper``), importable from every folder.

Under pytest-xdist (``python -m pytest -q -n auto``, the README's and CI's command) the default
``--dist load`` uses :class:`xdist_schedule.ModuleFixtureScheduling`: the modules with expensive
module fixtures run on one worker each, and the work is handed out longest first (the estimates in
tests/durations.json; tests/xdist_schedule.py).  An explicit ``--dist`` other than ``load`` is left
to xdist.

XLA compiles the Tracr library's models (tests/solver/test_tracr_lib.py: 13 programs, every JAX
primitive compiled per shape, ~28 ms each) with its cheap optimisation level here: the exports
(weights, metadata and the compiled model's outputs on every stored example) are bit-identical to
the default level's on all 13 programs, and the compile takes 56 s instead of 78.5 s of CPU
(benchmarks/README.md, ISSUE 16 item 4); XLA's older CPU code generators
(``--xla_cpu_use_fusion_emitters=false``) halve each small compile again: 107.7 → 77.0 s CPU for the
13 programs' compile and export, every output bit-identical (``benchmarks/tracr_xla_flags.py``, a
SHA-256 over every export's metadata, arrays and float32 outputs).  Set in the environment, so the xdist workers, the CLI
subprocesses and the notebook kernels get it too; an ``XLA_FLAGS`` already set is kept.

JAX's persistent compilation cache (``JAX_COMPILATION_CACHE_DIR``) is pointed at pytest's cache
folder (``.pytest_cache/d/jax-xla``, :func:`pytest_configure`; not with ``-p no:cacheprovider``, nor
over a directory already set): XLA's compiled executables of the Tracr library's ~1,100 op-by-op
computations, keyed by JAX itself on the lowered HLO, the compile options, ``XLA_FLAGS`` and the
jax/jaxlib versions, so an entry is a deterministic function of its key.  Tracr's compiler, the
model runs and every export are still computed live each run; only XLA's backend compile is read
back: the 13 programs' compile took 101/99 s CPU without the cache and 43 s with it warm (98 s
cold, writing it; tests/solver/test_tracr_lib.py's fixture, ISSUE 16 item 4).

Certify artefacts (a certify taken from a recorded run of the same job) are off for the suite:
``SOFTHARD_CERTIFY_ARTEFACTS=0``, set below; their own tests turn them on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
                                   "--xla_cpu_use_fusion_emitters=false")
# every certify of the suite runs live (a test that replaces a stage would otherwise meet a recorded
# certify of the same job: softhard.solver.certify_memo); tests/solver/test_certify_memo.py turns
# certify artefacts on for itself.  In the environment, for the CLI subprocesses and notebook kernels too.
os.environ["SOFTHARD_CERTIFY_ARTEFACTS"] = "0"

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

import rewrite_cache  # noqa: E402 — tests/ on sys.path first
from xdist_schedule import ModuleFixtureScheduling  # noqa: E402


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The scheduler of an xdist run: :class:`ModuleFixtureScheduling` under the default
    ``--dist load``, xdist's own otherwise (None defers to it)."""
    return ModuleFixtureScheduling(config, log) if config.getvalue("dist") == "load" else None


def pytest_configure(config):
    """JAX's persistent compilation cache in pytest's cache folder (module docstring), in the
    environment so the xdist workers and subprocesses share it; every computation is cached (JAX's
    defaults skip those compiled in under 1 s, i.e. all of Tracr's op-by-op ones).  In an xdist
    controller, first pytest's rewritten test modules, once for every worker (tests/rewrite_cache.py)."""
    if rewrite_cache.wanted(config):
        rewrite_cache.prewrite(config)
    cache = getattr(config, "cache", None)
    if cache is None or "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(cache.mkdir("jax-xla"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
