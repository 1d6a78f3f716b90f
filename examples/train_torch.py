"""Train a small PyTorch encoder on a language from examples/, import it, and certify at which
temperature and lengths its argmax-attention counterpart and the trained softmax model agree
(docs/torch.md).  CPU only; the default run takes well under two minutes.

    python examples/train_torch.py --out /tmp/tomita1             # train, import, certify, verify
    python examples/train_torch.py --steps 30 --n-max 3 --out DIR  # a seconds-long smoke run

Steps: (1) train ``examples/torch/encoder.py``'s EncoderClassifier on words of length 1..--train-len
labelled by the language (tomita1: only 1s, as examples/tomita1.ltl; aba: contains aba, as
examples/aba.ltl), checking the accuracy on every word up to that length; (2) ``import_torch`` to
``DIR/model.json``; (3) the gap analysis and a certificate for n ≤ --n-max with ε just below the
output margin and the largest certifiable τ (``--find-tau``), verified by replay; (4) the trained
model at its own temperature (1/τ = 1) run soft against its argmax counterpart on every word up to
--n-max.  The summary (JSON) is printed and written to ``DIR/summary.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "torch"))
import encoder  # noqa: E402

import softhard  # noqa: E402
from softhard.constructions.engine import forward  # noqa: E402
from softhard.constructions.errors import NotSimulable, SearchFailed  # noqa: E402
from softhard.constructions.torch_import import import_torch, write_imported  # noqa: E402

LANGUAGES = {
    "tomita1": (["0", "1"], lambda w: all(s == "1" for s in w), "examples/tomita1.ltl: 1*"),
    "aba": (["a", "b"], lambda w: "aba" in "".join(w), "examples/aba.ltl: contains aba"),
}


def batch(lang: str, rng: np.random.Generator, size: int, max_len: int):
    """Words of one random length, half of them in the language (rejection-balanced)."""
    alphabet, member, _ = LANGUAGES[lang]
    n = int(rng.integers(1, max_len + 1))
    words, labels = [], []
    while len(words) < size:
        if lang == "tomita1" and rng.random() < 0.5:
            w = ["1"] * n
            if rng.random() < 0.5:
                w[int(rng.integers(n))] = "0"
        else:
            w = list(rng.choice(alphabet, n))
        words.append(w)
        labels.append(int(member(w)))
    return words, torch.tensor(labels)


def train(lang: str, steps: int, train_len: int, seed: int, layers: int) -> tuple[encoder.EncoderClassifier, float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    encoder.ALPHABET[:] = LANGUAGES[lang][0]
    model = encoder.EncoderClassifier(d_model=16, nhead=2, layers=layers, ff=32, max_len=32)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        words, y = batch(lang, rng, 64, train_len)
        loss = torch.nn.functional.cross_entropy(model(model.encode(["".join(w) for w in words])), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model, accuracy(model, lang, train_len)


def accuracy(model, lang: str, n_max: int) -> float:
    alphabet, member, _ = LANGUAGES[lang]
    right = total = 0
    with torch.no_grad():
        for n in range(1, n_max + 1):
            words = ["".join(w) for w in itertools.product(alphabet, repeat=n)]
            pred = model(model.encode(words)).argmax(-1).numpy()
            right += int(sum(int(p) == int(member(w)) for p, w in zip(pred, words)))
            total += len(words)
    return right / total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--language", choices=sorted(LANGUAGES), default="tomita1")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--train-len", type=int, default=10)
    ap.add_argument("--n-max", type=int, default=8, help="certify for every word of length <= n-max")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: the model is 16 wide, more threads only add waiting)")
    ap.add_argument("--out", required=True, help="directory for weights, model file, certificate, summary")
    a = ap.parse_args(argv)
    if a.threads < 1:  # (torch's own refusal is a RuntimeError traceback)
        ap.error(f"--threads must be at least 1, got {a.threads}")
    torch.set_num_threads(a.threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    model, acc = train(a.language, a.steps, a.train_len, a.seed, a.layers)
    t_train = time.perf_counter() - t0
    torch.save(model.state_dict(), out / "weights.pt")
    doc, arrays, checked = import_torch(model, name=f"trained_{a.language}")
    write_imported(doc, arrays, out / "model.json")
    spec = softhard.load_model(out / "model.json")
    summary = {"language": LANGUAGES[a.language][2], "layers": a.layers, "steps": a.steps, "train_seconds": round(t_train, 1),
               "accuracy_all_words_up_to_train_len": acc, "train_len": a.train_len,
               "import_forward_check": checked, "n_max": a.n_max}
    # the trained softmax model (1/tau = 1) against its argmax counterpart on every word up to n_max
    hm = spec.canonical()
    tr = hm.transformer()
    o = hm.outputs[0]
    disagree = words = 0
    for n in range(1, a.n_max + 1):
        ws = [list(w) for w in itertools.product(spec.alphabet, repeat=n)]
        tok = tr.encode(ws)
        hx, sx = forward(tr, tok, mode="hard").x, forward(tr, tok, mode="soft", inv_tau=1.0).x
        hv, sv = hx[:, -1, o.coords].argmax(-1), sx[:, -1, o.coords].argmax(-1)
        disagree += int((hv != sv).sum())
        words += len(ws)
    summary["tau_1_soft_vs_argmax"] = {"words": words, "disagreements": disagree}
    try:
        c, an = softhard.build_model(spec, n_max=a.n_max, epsilon="margin")
        summary["gap_premises"] = an.report.to_json()["method"]
        summary["min_gap"] = min(float(h.gap) for h in an.report.heads.values() if h.gap is not None)
        summary["margin"] = float(min(om.margin for om in an.report.outputs.values() if om.margin is not None))
        cert = softhard.certify_model(c, an, n_max=a.n_max, find_tau=True)
        softhard.write_certificate(cert, out / "certificate.json")
        summary["certificate"] = {"status": cert["status"], "inv_tau": cert["construction"]["inv_tau_decimal"],
                                  "epsilon": str(c.params.epsilon), "verified": softhard.verify(cert).ok}
    except (NotSimulable, SearchFailed) as e:
        summary["certificate"] = {"status": "not certified", "reason": str(e)}
    summary["total_seconds"] = round(time.perf_counter() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
