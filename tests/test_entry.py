"""The console script's entry (softhard/entry.py): a Ctrl-C at any moment of start-up is one line and
exit status 130, never a traceback.

The SIGINT is sent by the process to itself from an import hook at a chosen module of the command
line's start-up, so the moment is exact (a timer would race the machine's load)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HOOK = """
import os, signal, sys
class Kill:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Kill())
sys.argv = ["softhard", *{argv!r}]
import runpy
runpy.run_module("softhard", run_name="__main__")
"""


@pytest.mark.parametrize("module, argv", [
    ("softhard.solver.cli.options", ["certify", "--n-max", "10"]),    # while the command line loads
    ("softhard.solver.cli.handlers.certify", ["certify", "--n-max", "10"]),  # while the command's stages load
])
def test_a_ctrl_c_during_start_up_is_one_line_and_status_130(module, argv):
    p = subprocess.run([sys.executable, "-c", HOOK.format(module=module, argv=argv)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 130, p.stderr
    assert p.stderr == "softhard: interrupted\n"
    assert p.stdout == ""


def test_python_dash_m_softhard_is_the_command_line():
    p = subprocess.run([sys.executable, "-m", "softhard", "--version"], capture_output=True, text=True, timeout=120)
    q = subprocess.run([sys.executable, "-c", "import sys; from softhard.solver.cli import main; sys.exit(main(['--version']))"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == q.returncode == 0
    assert p.stdout == q.stdout and p.stdout.startswith("softhard ")


def test_importing_the_package_reads_nothing_and_the_version_is_the_installed_one():
    """The console script imports the package before its Ctrl-C handler is in place: the package's
    import defines names only (a trial's Ctrl-C landed in the version look-up); ``__version__`` is
    read on first use and equals importlib.metadata's."""
    code = ("import sys, importlib.metadata as m, softhard; assert 'softhard.installed' not in sys.modules; "
            "v = softhard.__version__; assert v == m.version('softhard'), (v, m.version('softhard')); "
            "assert softhard.__version__ is v; print(v)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_an_ignored_ctrl_c_stays_ignored_during_start_up():
    """A process started with SIGINT ignored (a Dask worker of ``--workers``: the spawned worker runs the
    console script's imports again) is not ended by a SIGINT while the command line loads: the command
    runs (the same hook with SIGINT not ignored ends with 130, above)."""
    code = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            + HOOK.format(module="softhard.solver.cli.options", argv=["--version"]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("softhard ") and "interrupted" not in p.stderr
