"""Run the proof-study notebooks and save their figures as PNG files in ``notebooks/figures/``.

Usage (from anywhere, with the package installed: ``pip install -e ".[test]"``)::

    python notebooks/make_figures.py              # every notebook that has a tagged figure
    python notebooks/make_figures.py 02_selections.ipynb

A figure is the PNG output of a code cell tagged ``figure:<name>`` (cell metadata ``tags``); it
is written to ``figures/<name>.png``.  The figures are therefore exactly what the notebooks show,
computed from the package — nothing is drawn twice.  The notebooks are executed in a fresh kernel
of *this* interpreter (see :func:`kernel_manager`), with the working directory ``notebooks/``;
the committed ``.ipynb`` files are not modified (they stay without outputs).

``tests/test_notebooks.py`` uses :func:`execute` and :func:`figure_cells` from this file, so the
script is exercised by the test suite.
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NB_DIR = Path(__file__).resolve().parent
FIG_DIR = NB_DIR / "figures"
FIGURE_TAG = re.compile(r"^figure:([A-Za-z0-9_.-]+)$")
#: prepended (not saved) when rendering figures for the README: higher resolution than on screen
HIRES_SETUP = "%config InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight', 'dpi': 150}"
#: run once in a shared kernel (:func:`start_kernel`): the notebooks' heavy imports, and the plotting
#: and precision state a fresh kernel starts with, kept where ``%reset`` does not reach
WARM_UP = """\
import flint, matplotlib, matplotlib.pyplot, mpmath, numpy, sympy, softhard, softhard.solver.api
import softhard.bounds.derive, softhard.constructions.engine, softhard.constructions.modelfile
get_ipython().softhard_fresh_state = (matplotlib.rcParams.copy(), mpmath.mp.dps)
"""
#: run before each notebook in a shared kernel: an empty namespace (``%reset -f``: every name a
#: previous notebook defined is gone), no open figures, matplotlib's rc and mpmath's precision as
#: in a fresh kernel (the notebooks set both).  Imported modules stay loaded: that is the saving.
RESET = """\
import matplotlib as _mpl, matplotlib.pyplot as _plt, mpmath as _mpmath
_plt.close("all")
_rc, _dps = get_ipython().softhard_fresh_state
_mpl.rcParams.update(_rc)
_mpmath.mp.dps = _dps
%reset -f
"""


def notebooks() -> list[Path]:
    """Every notebook in ``notebooks/``, in name order."""
    return sorted(NB_DIR.glob("*.ipynb"))


def figure_cells(nb) -> list[tuple[int, str]]:
    """``(cell index, figure name)`` for every code cell tagged ``figure:<name>``."""
    out = []
    for i, cell in enumerate(nb.cells):
        for tag in cell.get("metadata", {}).get("tags", []):
            m = FIGURE_TAG.match(tag)
            if m and cell.cell_type == "code":
                out.append((i, m.group(1)))
    return out


def kernel_manager(spec_dir: Path) -> KernelManager:
    """A kernel manager for ipykernel on *this* interpreter, independent of installed kernel specs.

    The kernel spec is written to ``spec_dir/python3`` (``argv`` = ``sys.executable -m
    ipykernel_launcher``), and the manager looks only there, so a fresh machine needs no
    ``ipykernel install`` and a stale user kernel cannot be picked up by mistake.
    """
    from ipykernel.kernelspec import write_kernel_spec

    target = spec_dir / "python3"
    if not target.exists():
        write_kernel_spec(str(target))
    ksm = KernelSpecManager(kernel_dirs=[str(spec_dir)], ensure_native_kernel=False)
    return KernelManager(kernel_name="python3", kernel_spec_manager=ksm)


def execute(path: Path, *, timeout: float = 600, setup: str | None = None, km: KernelManager | None = None):
    """Execute the notebook at ``path`` top to bottom; return ``(executed notebook, seconds)``.

    ``setup``: optional code run first (it is inserted as an extra cell and removed afterwards,
    so cell indices in the returned notebook are those of the file).  ``km``: a running kernel
    (:func:`start_kernel`) to run in instead of a fresh one; it is left running, and ``setup``
    should then be :data:`RESET` so the notebook starts from an empty namespace.  Raises
    :class:`nbclient.exceptions.CellExecutionError` on the first failing cell.
    """
    nb = nbformat.read(path, as_version=4)
    if setup:
        nb.cells.insert(0, nbformat.v4.new_code_cell(setup))
    resources = {"metadata": {"path": str(NB_DIR)}}
    if km is not None:
        client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=False, resources=resources)
        t0 = time.perf_counter()
        try:
            client.execute()
        finally:  # the kernel stays up for the next notebook; only this client's channels close
            if client.kc is not None:
                client.kc.stop_channels()
        seconds = time.perf_counter() - t0
    else:
        with tempfile.TemporaryDirectory(prefix="softhard-kernel-") as d:
            km = kernel_manager(Path(d))
            client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=False, resources=resources)
            t0 = time.perf_counter()
            try:
                client.execute()
            finally:  # a client handed its manager does not own the kernel: stop it here
                if km.has_kernel:
                    km.shutdown_kernel(now=True)
            seconds = time.perf_counter() - t0
    if setup:
        nb.cells.pop(0)
    return nb, seconds


def start_kernel(spec_dir: Path, timeout: float = 120) -> tuple[KernelManager, float]:
    """Start a kernel of this interpreter (:func:`kernel_manager`) in ``notebooks/``, import what
    the notebooks import and record the plotting state :data:`RESET` restores; return ``(kernel
    manager, seconds)``.  The caller shuts it down (``km.shutdown_kernel(now=True)``).

    For running several notebooks in one kernel (``tests/test_notebooks.py``): each then pays
    neither a kernel start nor the imports of SymPy, matplotlib and softhard again.
    """
    km = kernel_manager(spec_dir)
    t0 = time.perf_counter()
    km.start_kernel(cwd=str(NB_DIR))
    warm = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(WARM_UP)])
    client = NotebookClient(warm, km=km, timeout=timeout, allow_errors=False,
                            resources={"metadata": {"path": str(NB_DIR)}})
    try:
        client.execute()
    except BaseException:
        km.shutdown_kernel(now=True)
        raise
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    return km, time.perf_counter() - t0


def figures(nb) -> dict[str, bytes]:
    """``{name: PNG bytes}`` of the tagged figure cells of an executed notebook.

    Raises ``ValueError`` if a tagged cell has no PNG output or more than one.
    """
    out = {}
    for i, name in figure_cells(nb):
        pngs = [o["data"]["image/png"] for o in nb.cells[i].get("outputs", []) if "image/png" in o.get("data", {})]
        if len(pngs) != 1:
            raise ValueError(f"cell {i} (figure {name!r}) has {len(pngs)} PNG outputs, expected 1")
        out[name] = base64.b64decode(pngs[0])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="notebook file names in notebooks/ (default: all with figures)")
    args = ap.parse_args(argv)
    paths = [NB_DIR / p for p in args.notebooks] if args.notebooks else notebooks()
    FIG_DIR.mkdir(exist_ok=True)
    for path in paths:
        if not figure_cells(nbformat.read(path, as_version=4)):
            continue
        nb, seconds = execute(path, setup=HIRES_SETUP)
        for name, png in figures(nb).items():
            (FIG_DIR / f"{name}.png").write_bytes(png)
            print(f"{path.name}: figures/{name}.png ({len(png) // 1024} KiB)")
        print(f"{path.name}: ran in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
