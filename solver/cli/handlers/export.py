"""``softhard export``: build the source's transformer on the one pipeline, write it with
:func:`softhard.constructions.torch_export.export_torch`, reload it and compare it with the NumPy
forward pass (soft and hard) on test words."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path


from ....constructions.errors import ParameterError
from ....constructions.modelfile import load_model, model_from_doc
from ....constructions.tie_breaks import tie_break
from ....constructions.tracr_load import load_tracr
from ...certificate import construction_params
from ...certjson import load_certificate
from ...pipeline import rebuild
from .console import progress, stdout_console
from .formula import formula_construction

try:  # PyTorch is the optional extra softhard[torch]
    from ....constructions import torch_export
    MISSING = None
except ImportError as e:  # pragma: no cover - CI installs the extra
    torch_export, MISSING = None, str(e)

DEFAULT_N_MAX = 64


def _model_outputs(hm) -> list[dict]:
    out = []
    for o in hm.outputs:
        out.append({"name": o.name, "type": o.type, "coordinates": [hm.labels[c] for c in o.coords],
                    "indices": list(o.coords), "at": o.at,
                    **({"threshold": float(o.threshold), "rule": "x[coordinate] > threshold"} if o.type == "boolean"
                       else {"classes": o.classes, "rule": "argmax over the coordinates"} if o.type == "categorical"
                       else {"rule": "the coordinate's value"})})
    return out


def source_transformer(args):
    """``(transformer, inv_tau, outputs, source description, n_max limit)`` of the chosen source."""
    picked = [k for k in ("model", "tracr", "certificate") if getattr(args, k)] + (["formula"] if args.formula else [])
    if len(picked) > 1:
        raise ParameterError(f"export: give one source, got {', '.join(picked)}")
    if args.certificate:
        cert = load_certificate(args.certificate)
        inv_tau = Fraction(cert.get("construction", {}).get("inv_tau", "0") or "0")
        if cert.get("kind") == "formula":
            c = rebuild(cert["source"], construction_params(cert))
            tr, outs, lim = c.model, _formula_outputs(c.model), None
        elif cert.get("kind") == "model":
            hm = model_from_doc(cert["source"]["model"]).canonical()
            betas = {k: Fraction(v) for k, v in cert["source"].get("tie_break", {}).items()}
            if betas:
                hm, _ = tie_break(hm, betas, int(cert["source"]["n_max"]))
            tr, outs, lim = hm.transformer(), _model_outputs(hm), hm.n_max
        else:
            raise ParameterError(f"export --certificate: a {cert.get('kind')!r} certificate; use --tracr for Tracr models")
        if inv_tau <= 0:
            raise ParameterError(f"{args.certificate}: the certificate states no certified tau")
        return tr, float(inv_tau), outs, {"kind": cert["kind"], "certificate": str(args.certificate),
                                          "inv_tau": "certified"}, lim
    tau = args.tau
    if args.model:
        hm = load_model(args.model).canonical()
        inv = float(1 / tau) if tau else float(hm.spec.inv_tau or 0)
        src = {"kind": "model", "file": args.model}
        return hm.transformer(), inv, _model_outputs(hm), src, hm.n_max
    if args.tracr:
        tm = load_tracr(args.tracr)
        hm = tm.hard_model()
        inv = float(1 / tau) if tau else tm.inv_tau_float
        return hm.transformer(), inv, _model_outputs(hm), {"kind": "tracr", "file": args.tracr}, hm.n_max
    if not args.formula:
        raise ParameterError("export: give a formula, --model, --tracr or --certificate")
    c = formula_construction(args)
    return c.model, float(1 / tau) if tau else 0.0, _formula_outputs(c.model), {"kind": "formula",
                                                                                 "formula": args.formula}, None


def _formula_outputs(tr) -> list[dict]:
    return [{"name": lab, "type": "boolean", "coordinates": [lab], "indices": [tr.index(lab)], "at": "last",
             "threshold": 0.5, "rule": "x[coordinate] > threshold (acceptance: at the last position)"}
            for lab in tr.outputs]


def handle(args) -> int:
    """Write, reload and check the program; exit 1 when the check fails."""
    if torch_export is None:
        raise ParameterError(f"export --format torch needs PyTorch (pip install 'softhard[torch]'): {MISSING}")
    out = Path(args.output)
    for p in (out, Path(str(out) + ".json")):
        if p.exists() and not args.force:
            raise ParameterError(f"{p}: file exists; use --force to overwrite it")
    with progress("building the transformer") as say:
        tr, inv_tau, outs, src, lim = source_transformer(args)
        res = _write_and_check(args, out, tr, inv_tau, outs, src, lim, say)
    return _report(args, out, tr, res)


def _write_and_check(args, out: Path, tr, inv_tau: float, outs: list[dict], src: dict, lim, say) -> dict:
    """Write the TorchScript program, reload and check it; returns the summary ``--json`` prints
    (``say``: the progress callback).  Raises :class:`ParameterError` for no temperature or an
    ``--n-max`` beyond the model's positional table."""
    if not inv_tau > 0:
        raise ParameterError("export: give --tau (or --certificate): the soft program needs a temperature")
    n_max = args.n_max or min(DEFAULT_N_MAX, lim or DEFAULT_N_MAX)
    if lim is not None and n_max > lim:
        raise ParameterError(f"export: --n-max {n_max} is beyond the model's positional table (n <= {lim})")
    src["inv_tau_float"] = inv_tau
    say(f"writing the TorchScript program {out} (n <= {n_max})")
    torch_export.export_torch(tr, out, n_max=n_max, inv_tau=inv_tau, outputs=outs, source=src)
    say(f"reloading {out} and comparing it with the NumPy forward pass")
    check = torch_export.check_export(out, tr, inv_tau, n_max)
    return {"program": str(out), "sidecar": str(out) + ".json", "n_max": n_max, "inv_tau": inv_tau, "check": check}


def _report(args, out: Path, tr, res: dict) -> int:
    """Print the export's summary ``res`` (``--json``: the object); exit 1 when the check failed."""
    check, n_max, inv_tau = res["check"], res["n_max"], res["inv_tau"]
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        stdout_console().print(
            f"wrote {out} (+ {out.name}.json): {len(tr.blocks)} block(s), d = {tr.d}, vocab BOS + {list(tr.alphabet)}, "
            f"n <= {n_max}, 1/tau = {inv_tau:g}; reloaded and run on {check['words']} words: max |torch - numpy| = "
            f"{check['max_abs_difference']:.3g} (soft and hard), rounding allowance {check['allowance']:.3g} -> "
            + ("ok" if check["ok"] else "FAILED"))
    return 0 if check["ok"] else 1


