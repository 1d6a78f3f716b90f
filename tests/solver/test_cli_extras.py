"""Command-line findings of a new-user trial with every extra installed (issue cli7): a file that
is not a state dict, an unreachable Dask scheduler, what an interrupted verify batch advises,
progress of the long commands, the plot's title, what a model plan's ``exhaustive_words`` means.
Each bad input ends as one line on stderr, exit 2 — never a traceback or an internal error."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import torch

from softhard.solver.cli import main
from softhard.solver.cli.handlers import batch as batch_handler
from softhard.solver.cli.handlers import console

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FACTORY = EXAMPLES / "torch" / "encoder.py"
sys.path.insert(0, str(FACTORY.parent))
import encoder  # noqa: E402


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    assert "\x1b" not in err, err  # no terminal escape codes (torch's message had \x1b[1m)
    return err


def _import(state_dict: Path, out: Path) -> int:
    return main(["import-torch", f"{FACTORY}:make_model", "--state-dict", str(state_dict), "-o", str(out)])


def test_a_whole_saved_model_is_not_a_state_dict(tmp_path, capsys):
    """``torch.save(model, f)`` pickles the module: the weights-only loader refuses it (exit 3 with a
    multi-line, escape-coded message before); now one line saying to save ``model.state_dict()``."""
    torch.save(encoder.make_model(), tmp_path / "whole.pt")
    assert _import(tmp_path / "whole.pt", tmp_path / "m.json") == 2
    err = one_line_error(capsys)
    assert "whole.pt: not a state dict" in err and "model.state_dict()" in err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("content", [b"alphabet: a b\nformula: Y a\n", b"", b"PK\x03\x04 not really a zip"])
def test_a_file_torch_did_not_write_is_not_a_state_dict(tmp_path, capsys, content):
    (tmp_path / "w.pt").write_bytes(content)
    assert _import(tmp_path / "w.pt", tmp_path / "m.json") == 2
    assert "w.pt: not a state dict (not a file torch.save wrote)" in one_line_error(capsys)


def test_a_saved_tensor_is_not_a_state_dict(tmp_path, capsys):
    torch.save(torch.zeros(3), tmp_path / "t.pt")
    assert _import(tmp_path / "t.pt", tmp_path / "m.json") == 2
    assert "t.pt: not a state dict (it holds a Tensor" in one_line_error(capsys)


def test_a_state_dict_that_does_not_fit_names_the_keys(tmp_path, capsys):
    """A key mismatch said only "Error(s) in loading state_dict for EncoderClassifier:"; now the
    missing and unexpected keys are named (the first four, and how many more)."""
    sd = encoder.make_model().state_dict()
    want = list(sd)
    sd["extra.weight"] = torch.zeros(1)
    del sd["readout.bias"]
    torch.save(sd, tmp_path / "keys.pt")
    assert _import(tmp_path / "keys.pt", tmp_path / "m.json") == 2
    err = one_line_error(capsys)
    assert "does not fit EncoderClassifier: missing keys 'readout.bias'; unexpected keys 'extra.weight'" in err
    # many missing keys: the first four in the model's order, then the count
    torch.save({"tok.weight": sd["tok.weight"]}, tmp_path / "few.pt")
    assert _import(tmp_path / "few.pt", tmp_path / "m.json") == 2
    err = one_line_error(capsys)
    missing = [k for k in want if k != "tok.weight"]
    assert ("missing keys " + ", ".join(repr(k) for k in missing[:4]) + f" and {len(missing) - 4} more") in err
    # a shape mismatch names the tensor and both shapes (max_len 8: 9 positional rows, the model's 17)
    torch.save(encoder.EncoderClassifier(max_len=8).state_dict(), tmp_path / "shape.pt")
    assert _import(tmp_path / "shape.pt", tmp_path / "m.json") == 2
    assert "'pos.weight' has shape (9, 8), the model's is (17, 8)" in one_line_error(capsys)


def test_import_torch_shows_progress(tmp_path, capsys, monkeypatch):
    """import-torch, export and tracr compile printed nothing for 6–30 s: they use the progress
    helper (here shown at once instead of after 2 s)."""
    monkeypatch.setattr(console, "PROGRESS_AFTER_S", 0.0)
    torch.save(encoder.make_model().state_dict(), tmp_path / "w.pt")
    assert _import(tmp_path / "w.pt", tmp_path / "m.json") == 0
    err = _timeless(capsys.readouterr().err)
    # the handler's libraries (PyTorch) load under progress too, then the command's own steps
    assert err[0] == "softhard: [N s] import-torch: loading its libraries (PyTorch)"
    assert err[1] == f"softhard: [N s] loading {FACTORY}:make_model"
    assert main(["export", "Y a", "--alphabet", "ab", "--tau", "1/100", "-o", str(tmp_path / "p.pt")]) == 0
    err = _timeless(capsys.readouterr().err)
    assert err[:2] == ["softhard: [N s] export: loading its libraries (PyTorch)",
                       "softhard: [N s] building the transformer"]


def _timeless(err: str) -> list[str]:
    """stderr's lines with each progress label's elapsed seconds replaced by N (a loaded machine
    took 10 s to load PyTorch: the label said [10 s] where a quiet one says [0 s])."""
    return [re.sub(r"^softhard: \[\d+ s\]", "softhard: [N s]", line) for line in err.splitlines()]


def test_an_unreachable_scheduler_is_one_line_after_a_progress_line(tmp_path, capsys, monkeypatch):
    """``--scheduler tcp://127.0.0.1:1`` printed nothing for 34 s, then an internal error (OSError);
    now a progress line while connecting and one line, exit 2, after --connect-timeout seconds."""
    monkeypatch.setattr(console, "PROGRESS_AFTER_S", 0.0)
    addr = "tcp://127.0.0.1:1"
    argv = ["certify", str(EXAMPLES / "aba.ltl"), "--regime", "T", "--n-max", "100", "--scheduler", addr,
            "--connect-timeout", "0.5", "-o", str(tmp_path / "sch") + "/"]
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"softhard: [0 s] connecting to the Dask scheduler at {addr} (giving up after 0.5 s)"
    assert lines[1:] == [f"softhard: error: cannot reach the Dask scheduler at {addr} within 0.5 s (OSError); is it "
                         "running? (--connect-timeout SECONDS waits longer)"]
    monkeypatch.setattr(console, "PROGRESS_AFTER_S", 60.0)
    (tmp_path / "d").mkdir()
    assert main(["certify", "Y a", "--alphabet", "ab", "--n-max", "10", "--no-numeric", "-o",
                 str(tmp_path / "d" / "ya.json")]) == 0
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "d"), "--scheduler", addr, "--connect-timeout", "0.5"]) == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 0.5 s" in one_line_error(capsys)


def test_an_interrupted_verify_batch_does_not_advise_resume(tmp_path, capsys, monkeypatch):
    """An interrupted verify batch said "rerun with --resume", an option verify does not have."""
    d, src = tmp_path / "c", tmp_path / "in"
    src.mkdir()
    (src / "ya.ltl").write_text("alphabet: a b\nformula: Y a\n")
    (src / "asb.ltl").write_text("alphabet: a b\nformula: a S b\n")
    assert main(["certify", str(src), "--n-max", "30", "--no-numeric", "-o", str(d)]) == 0
    capsys.readouterr()
    real, calls = batch_handler.verify_task, []

    def interrupting(*a, **kw):
        calls.append(a)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(batch_handler, "verify_task", interrupting)
    assert main(["verify", str(d)]) == 130
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == ("softhard: interrupted: 1 of 2 jobs finished (verify writes nothing and has no --resume: rerun "
                    "it on the certificates not yet checked)")
    assert main(["verify", str(d), "--resume"]) == 2  # indeed no such option
    assert "unrecognized arguments: --resume" in capsys.readouterr().err


_CTRL_C_SCRIPT = """
import signal
import sys
from softhard.solver.cli import main
if __name__ == "__main__":
    # Python's own Ctrl-C handler, as in a terminal (a test started in the background of a
    # non-interactive shell inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_on_a_local_cluster_prints_only_our_lines(tmp_path):
    """A terminal's Ctrl-C reaches the whole process group: each Dask worker printed a traceback
    (``Process Dask Worker process (from Nanny)`` … KeyboardInterrupt) and Dask logged warnings.
    Now the workers ignore SIGINT, this process shuts them down with Dask's loggers quiet: stderr
    holds only softhard's lines, exit 130, and no process of the group is left."""
    import os
    import signal
    import subprocess
    import time

    script = tmp_path / "run.py"
    script.write_text(_CTRL_C_SCRIPT)
    src = tmp_path / "in"
    src.mkdir()
    for name, f in (("ya", "Y a"), ("asb", "a S b"), ("ha", "H a"), ("pa", "P a"), ("yb", "Y b")):
        (src / f"{name}.ltl").write_text(f"alphabet: a b\nformula: {f}\n")
    p = subprocess.Popen([sys.executable, str(script), "certify", str(src), "--regime", "T,U", "--n-max", "1e6",
                          "--workers", "2", "-o", str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = []
    try:
        while True:  # the cluster is up and working once a job has finished
            line = p.stderr.readline()
            assert line, ("no job finished", lines)
            lines.append(line)
            if line.startswith("[1/10]"):
                break
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    lines += err.splitlines(keepends=True)
    assert p.returncode == 130, lines
    assert lines[-1].startswith("softhard: interrupted: ") and "jobs finished" in lines[-1], lines
    # every job reported as finished is counted (one was reported but not counted when the
    # interrupt came while its line was printed)
    reported = sum(ln.startswith("[") for ln in lines)
    assert int(lines[-1].split()[2]) >= reported >= 1, lines
    assert all(ln.startswith(("softhard: ", "[")) for ln in lines), lines  # no traceback, no Dask log line
    deadline = time.monotonic() + 15  # a worker that exited last may be a zombie until init reaps it
    with pytest.raises(ProcessLookupError):  # no worker (or solver child) left in the process group
        while time.monotonic() < deadline:
            os.killpg(p.pid, 0)
            time.sleep(0.05)


def test_plot_title_of_a_long_range_is_not_clipped(tmp_path):
    """``plot`` of a certificate with n_max 1e15: the left panel's title ran past the figure's edge
    ("omita4…").  The range is written 10^15 and a long title wraps; every title lies inside the
    figure (matplotlib's own text extents after drawing)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import softhard
    from softhard.solver.plots import figure, panel_title, plot_data

    spec = softhard.load_formula(str(EXAMPLES / "tomita4.ltl"))
    c = softhard.build(spec, softhard.Params(regime="T", eta="1/4"))
    p = plot_data(softhard.certify(c, n_max=10**15, find_tau=True, numeric=False))
    assert "(n ≤ 10^15)" in panel_title(p) and str(10**15) not in panel_title(p)
    fig = figure([p])
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        for ax in fig.axes:
            t = ax.title.get_window_extent(renderer)
            assert box.x0 <= t.x0 and t.x1 <= box.x1 and t.y1 <= box.y1, (ax.get_title(), t, box)
    finally:
        plt.close(fig)


def test_a_model_plans_exhaustive_words_is_a_cap_and_families_count_what_ran(tmp_path, capsys):
    """A model certificate (ab_subsequence, n ≤ 12) stated ``numeric.plan.exhaustive_words`` 4096
    while the exhaustive family ran 4094 words.  Both are right: the plan's value is a cap — every
    word of length 1..L for the largest L whose count stays within it — and ``families`` holds the
    count that ran: lengths 1..11 over {a, b}, 2 + 4 + … + 2048 = 4094 (length 12 would make 8190).
    The schema and docs say so; verify accepts the certificate."""
    out = tmp_path / "ab.json"
    assert main(["certify", "--model", str(EXAMPLES / "models" / "ab_subsequence.json"), "--n-max", "12",
                 "--epsilon", "1/4", "--tau", "1/40", "-o", str(out)]) in (0, 1)
    cert = json.loads(out.read_text())
    num = cert["numeric"]
    words_up_to = lambda top: sum(2 ** k for k in range(1, top + 1))  # noqa: E731 — words of length 1..top
    assert num["plan"]["exhaustive_words"] == 4096
    assert num["families"]["exhaustive"] == words_up_to(11) == 4094 and words_up_to(12) > 4096
    assert main(["verify", str(out)]) == 0
    schema = json.loads((ROOT / "solver" / "schema" / "certificate-2.schema.json").read_text())
    plan = schema["$defs"]["formula_certificate"]["properties"]["numeric"]["properties"]["plan"]
    assert "exhaustive_words is a cap, not a count" in plan["description"]
