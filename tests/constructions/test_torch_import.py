"""import-torch (issue 17, item 3): a TransformerEncoder classifier becomes a model file whose soft
run at τ = 1 is the torch model (checked against torch's own forward pass, an independent
implementation), unsupported modules are refused with one line naming them, and gap / certify /
hahn work on the result.  PyTorch is a test dependency: without it this module fails to import."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from softhard.constructions.engine import forward
from softhard.constructions.errors import ModelFormatError, ParameterError
from softhard.constructions.modelfile import load_model
from softhard.constructions.torch_import import import_torch, load_factory, write_imported
from softhard.solver.cli import main

ROOT = Path(__file__).resolve().parents[2]
FACTORY = ROOT / "examples" / "torch" / "encoder.py"
sys.path.insert(0, str(FACTORY.parent))
import encoder  # noqa: E402


def _roundtrip(model, tmp_path):
    doc, arrays, checked = import_torch(model, name="t")
    p = write_imported(doc, arrays, tmp_path / "m.json")
    return load_model(p), checked


@pytest.mark.parametrize("kw", [dict(), dict(layers=2, norm_first=True, final_norm=True), dict(layers=2, nhead=1),
                                dict(classes=1)])
def test_imported_soft_model_is_the_torch_model(kw, tmp_path):
    torch.manual_seed(7)
    m = encoder.EncoderClassifier(**kw).eval()
    spec, checked = _roundtrip(m, tmp_path)
    assert checked["max_abs_difference"] < 1e-12
    hm = spec.canonical()
    tr = hm.transformer()
    coords = [hm.labels.index(c) for c in spec.doc["outputs"][0].get("coordinates", [spec.doc["outputs"][0].get("coordinate")])]
    m64 = m.double()
    rng = np.random.default_rng(1)
    for n in (5, 9, 16):
        w = "".join(rng.choice(["a", "b"], n))
        with torch.no_grad():
            ref = m64(m64.encode([w]))[0].numpy()
        got = forward(tr, tr.encode([w]), mode="soft", inv_tau=1.0).x[0, -1, coords]
        assert np.max(np.abs(got - ref)) < 1e-12
    assert spec.inv_tau == 1 and spec.n_max == 16


class _Gelu(encoder.EncoderClassifier):
    def __init__(self):
        super().__init__()
        self.encoder.layers[0].activation = nn.functional.gelu


class _Extra(encoder.EncoderClassifier):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8)


class _NoBosMask(encoder.EncoderClassifier):
    def __init__(self):
        super().__init__(layers=2)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))[None]
        return self.readout(self.encoder(x))[:, -1]


@pytest.mark.parametrize("cls, message", [
    (_Gelu, r"^import-torch: encoder\.layers\.0\.activation \(.*\): the feed-forward activation must be ReLU"),
    (_Extra, r"^import-torch: lstm \(torch\.nn\.modules\.rnn\.LSTM\): not a supported module"),
    (_NoBosMask, r"^import-torch: the module's forward differs from the imported model by"),
])
def test_unsupported_modules_are_refused_in_one_line(cls, message):
    with pytest.raises(ModelFormatError, match=message) as e:
        import_torch(cls().eval())
    assert "\n" not in str(e.value)


def test_factory_and_state_dict_errors(tmp_path):
    with pytest.raises(ParameterError, match="expected MODULE:FACTORY"):
        load_factory("nofactory")
    with pytest.raises(ParameterError, match="has no callable 'nope'"):
        load_factory(f"{FACTORY}:nope")
    torch.save({"tok.weight": torch.zeros(2, 2)}, tmp_path / "bad.pt")
    with pytest.raises(ParameterError, match="the state dict does not fit EncoderClassifier: missing keys 'pos.weight'") as e:
        load_factory(f"{FACTORY}:make_model", str(tmp_path / "bad.pt"))
    assert "\n" not in str(e.value)


def test_cli_import_then_gap_certify_and_hahn(tmp_path, capsys):
    m = encoder.make_model()
    torch.save(m.state_dict(), tmp_path / "w.pt")
    out = tmp_path / "enc.json"
    assert main(["import-torch", f"{FACTORY}:make_model", "--state-dict", str(tmp_path / "w.pt"), "-o", str(out),
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["forward_check"]["max_abs_difference"] < 1e-12 and res["layers"] == 2  # encoder layer + read-out
    assert main(["import-torch", f"{FACTORY}:make_model", "-o", str(out)]) == 2  # exists, no --force
    capsys.readouterr()
    assert main(["gap", "--model", str(out), "--n-max", "3", "--json"]) in (0, 1)
    gap = json.loads(capsys.readouterr().out)
    assert gap["report"]["method"] == "exhaustive" and gap["report"]["layernorms"]
    # a certificate at the trained model's own temperature (1/tau = 1): proved, refuted or unknown —
    # but a valid certificate that verify accepts
    cert = tmp_path / "c.json"
    code = main(["certify", "--model", str(out), "--n-max", "3", "--epsilon", "margin", "--tau", "1",
                 "-o", str(cert)])
    capsys.readouterr()
    if gap["simulable"]:
        assert code in (0, 1) and main(["verify", str(cert)]) == 0
    assert main(["hahn", "--model", str(out), "--tau", "1"]) == 1
    assert "layer norms" in capsys.readouterr().out


def test_train_example_refuses_a_thread_count_below_one(tmp_path, monkeypatch, capsys):
    """``--threads 0`` is a usage error (exit 2, one line), not torch's RuntimeError traceback."""
    monkeypatch.setattr(sys, "argv", ["train_torch.py", "--threads", "0", "--out", str(tmp_path)])
    monkeypatch.setattr(sys, "path", list(sys.path))
    threads = torch.get_num_threads()
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(ROOT / "examples" / "train_torch.py"), run_name="__main__")
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--threads must be at least 1, got 0" in err and "Traceback" not in err
    assert torch.get_num_threads() == threads and not list(tmp_path.iterdir())


def test_train_example_runs_end_to_end_in_seconds(tmp_path, monkeypatch, capsys):
    """examples/train_torch.py, very short (30 steps, words up to length 3): trains, imports,
    compares the softmax model with its argmax counterpart on every word, certifies and verifies.

    Run as ``__main__`` in this process (``runpy``: the script's own code path, argument parsing
    included), which has torch and softhard imported already; what the script changes in the
    process — the example encoder's alphabet, torch's thread count, ``sys.path`` — is restored."""
    monkeypatch.setattr(sys, "argv", ["train_torch.py", "--steps", "30", "--train-len", "4", "--n-max", "3",
                                      "--out", str(tmp_path)])
    monkeypatch.setattr(sys, "path", list(sys.path))
    alphabet, threads = list(encoder.ALPHABET), torch.get_num_threads()
    try:
        with pytest.raises(SystemExit) as e:
            runpy.run_path(str(ROOT / "examples" / "train_torch.py"), run_name="__main__")
    finally:
        encoder.ALPHABET[:] = alphabet
        torch.set_num_threads(threads)
    assert e.value.code == 0, capsys.readouterr().err
    s = json.loads((tmp_path / "summary.json").read_text())
    assert json.loads(capsys.readouterr().out) == s  # the summary printed is the one written
    assert s["import_forward_check"]["max_abs_difference"] < 1e-12
    assert s["tau_1_soft_vs_argmax"]["words"] == 2 + 4 + 8
    assert 0 <= s["accuracy_all_words_up_to_train_len"] <= 1
    cert = s["certificate"]
    assert cert["status"] == "not certified" or cert["verified"]
