"""What a formula certify and verify load (ISSUE 16): each runs in a fresh interpreter that
reports ``sys.modules`` after the command, so an import that creeps back onto the single-input
path (the batch runner, Dask, a compiled-kernel or plotting library, the model-file or Tracr
kinds) fails here.  networkx, SymPy, NumPy and python-flint are the formula pipeline's own
stages (the computation graph, the derivation, the numeric runs, the ball re-check) and are
loaded by design."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: top-level packages a single formula certify or verify never uses
UNUSED_PACKAGES = ("dask", "distributed", "torch", "jax", "numba", "matplotlib", "tracr", "concurrent")
#: our modules that only a batch, a model file or a Tracr export needs
UNUSED_MODULES = ("softhard.solver.cli.handlers.batch", "softhard.solver.distributed", "softhard.solver.models",
                  "softhard.solver.tracr", "softhard.constructions.modelfile", "softhard.constructions.tracr",
                  # rich's tables: the printed summaries only (certify --json and verify print none)
                  "rich.table")

PROBE = """
import json, sys
from softhard.solver.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _run(argv: list[str]) -> tuple[int, set[str]]:
    """Run one ``softhard`` command line in a fresh interpreter: its exit status and every module
    it loaded."""
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    return last["rc"], set(last["modules"])


def _unused(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in UNUSED_PACKAGES or m in UNUSED_MODULES)


def test_formula_certify_and_verify_load_only_their_stages(tmp_path):
    cert = tmp_path / "t4.json"
    rc, modules = _run(["certify", "examples/tomita4.ltl", "--regime", "T", "--n-max", "64", "--eta", "1/4",
                        "-o", str(cert), "--json"])
    assert rc == 0 and cert.is_file()
    assert _unused(modules) == []
    # the stages it does use, so that this probe cannot pass by loading nothing
    assert {"softhard.solver.certificate", "softhard.bounds.confirm", "sympy", "numpy"} <= modules
    rc, modules = _run(["verify", str(cert)])
    assert rc == 0
    assert _unused(modules) == []
    # certify checked the certificate against the schema and remembered it valid: no validator here
    assert {"softhard.solver.replay", "softhard.solver.cli.handlers.jobs", "softhard.solver.replay_memo"} <= modules
    assert "jsonschema" not in modules or os.environ.get("SOFTHARD_CACHE") == "0"


@pytest.fixture(scope="module")
def printed_certify(tmp_path_factory):
    """One certify that prints its summary (no ``--json``), in a fresh interpreter, shared by the two
    tests below: (exit status, modules loaded, the certificate, alone in its directory).  The batch
    test needs only a certificate of this job; ``--json`` changes what is printed, not what is
    written, so this run's file serves it (one interpreter instead of two)."""
    cert = tmp_path_factory.mktemp("printed") / "c" / "t4.json"
    cert.parent.mkdir()
    rc, modules = _run(["certify", "examples/tomita4.ltl", "--regime", "T", "--n-max", "16", "--eta", "1/4",
                        "-o", str(cert), "--no-numeric"])
    return rc, modules, cert


def test_the_printed_summary_loads_rich_tables(printed_certify):
    """The other side of the switch above: a certify that prints its summary builds a table."""
    rc, modules, _ = printed_certify
    assert rc == 0 and "rich.table" in modules


def test_a_batch_loads_the_batch_runner(printed_certify):
    """The other side of the same switch: a verify of a directory is a batch and loads the runner."""
    rc, _, cert = printed_certify
    assert rc == 0
    rc, modules = _run(["verify", str(cert.parent), "--json"])
    assert rc == 0
    assert {"softhard.solver.cli.handlers.batch", "softhard.solver.distributed"} <= modules
