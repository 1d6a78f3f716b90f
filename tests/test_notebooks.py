"""Execute every notebook in ``notebooks/`` and check how the notebooks are committed (issue 6).

* Every ``notebooks/*.ipynb`` is picked up automatically and run top to bottom in a fresh kernel
  of the *running* interpreter (a kernel spec written to a temporary folder points at
  ``sys.executable``), so the test works on a fresh machine after ``pip install -e ".[test]"``
  with no kernel registered.  Any error — including a failed ``assert`` in a cell, which is how
  the notebooks state their claims — fails the test, with the cell and traceback in the message.
* Each notebook must finish within ``SOFTHARD_NB_TIME_LIMIT`` seconds (default 120, the limit
  of issue 6 on a 2-core machine).
* Committed notebooks carry no outputs and no execution counts (strip them before committing).
* Every figure tagged ``figure:<name>`` in a notebook produces a PNG when run, and the committed
  ``notebooks/figures/<name>.png`` exists (written by ``notebooks/make_figures.py``); every figure
  and notebook linked from ``notebooks/README.md`` exists.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
TIME_LIMIT_S = float(os.environ.get("SOFTHARD_NB_TIME_LIMIT", "120"))
FIGURE_TAG = re.compile(r"^figure:([A-Za-z0-9_.-]+)$")


def figure_tags(nb) -> list[tuple[int, str]]:
    """``(cell index, figure name)`` for every code cell tagged ``figure:<name>``."""
    out = []
    for i, c in enumerate(nb.cells):
        for t in c.get("metadata", {}).get("tags", []):
            m = FIGURE_TAG.match(t)
            if m and c.cell_type == "code":
                out.append((i, m.group(1)))
    return out


def kernel_manager(spec_dir: Path) -> KernelManager:
    """A kernel manager that starts ipykernel on this interpreter, whatever kernels are installed."""
    from ipykernel.kernelspec import write_kernel_spec

    write_kernel_spec(str(spec_dir / "python3"))
    ksm = KernelSpecManager(kernel_dirs=[str(spec_dir)], ensure_native_kernel=False)
    return KernelManager(kernel_name="python3", kernel_spec_manager=ksm)


def execute(path: Path, spec_dir: Path):
    """Run the notebook at ``path`` in a fresh kernel (cwd = ``notebooks/``); return (nb, seconds)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, km=kernel_manager(spec_dir), timeout=TIME_LIMIT_S, allow_errors=False,
                            resources={"metadata": {"path": str(NB_DIR)}})
    t0 = time.perf_counter()
    client.execute()
    return nb, time.perf_counter() - t0


def test_notebooks_present():
    assert len(NOTEBOOKS) >= 4, f"expected the proof-study notebooks in {NB_DIR}, found {NOTEBOOKS}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; strip them before committing"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    try:
        nb, seconds = execute(path, tmp_path)
    except CellExecutionError as e:  # a failed assertion in a cell lands here
        pytest.fail(f"{path.name}: a cell failed\n{e}", pytrace=False)
    assert seconds < TIME_LIMIT_S, f"{path.name} took {seconds:.1f} s (limit {TIME_LIMIT_S:.0f} s)"
    for i, name in figure_tags(nb):
        pngs = [o for o in nb.cells[i].outputs if "image/png" in o.get("data", {})]
        assert len(pngs) == 1, f"{path.name}: figure cell {i} ({name}) produced {len(pngs)} PNG outputs, expected 1"
    print(f"{path.name}: {seconds:.1f} s")


def test_figures_committed():
    names = [name for p in NOTEBOOKS for _, name in figure_tags(nbformat.read(p, as_version=4))]
    assert len(names) == len(set(names)), f"figure names must be unique: {names}"
    missing = [n for n in names if not (NB_DIR / "figures" / f"{n}.png").is_file()]
    assert not missing, f"run `python notebooks/make_figures.py`: missing figures/{missing}"
    for n in names:
        assert (NB_DIR / "figures" / f"{n}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_readme_links():
    readme = (NB_DIR / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)\)", readme)
    assert targets, "notebooks/README.md links nothing"
    for t in targets:
        if "://" in t:
            continue
        assert (NB_DIR / t).exists(), f"notebooks/README.md links {t}, which does not exist"
    for p in NOTEBOOKS:
        assert f"({p.name})" in readme, f"notebooks/README.md does not link {p.name}"
