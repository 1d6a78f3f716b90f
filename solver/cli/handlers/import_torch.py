"""``softhard import-torch``: load the module, convert it
(:func:`softhard.constructions.torch_import.import_torch`), write the model file and its arrays."""

from __future__ import annotations

import json
from pathlib import Path

from ....constructions.errors import ParameterError
from .console import progress, stdout_console

try:  # PyTorch is the optional extra softhard[torch]: without it the command says so in one line
    from ....constructions import torch_import
    MISSING = None
except ImportError as e:  # pragma: no cover - CI installs the extra
    torch_import, MISSING = None, str(e)


def handle(args) -> int:
    """Write the model file; exit 2 (one line) for a bad factory, state dict or unsupported module."""
    if torch_import is None:
        raise ParameterError(f"import-torch needs PyTorch (pip install 'softhard[torch]'): {MISSING}")
    out = Path(args.output)
    for p in (out, out.with_suffix(".npz")):
        if p.exists() and not args.force:
            raise ParameterError(f"{p}: file exists; use --force to overwrite it")
    with progress(f"loading {args.factory}") as say:
        model = torch_import.load_factory(args.factory, args.state_dict)
        say("converting the module and checking it against torch's forward pass")
        doc, arrays, checked = torch_import.import_torch(model, name=args.name or out.stem)
        say(f"writing {out}")
        torch_import.write_imported(doc, arrays, out)
    res = {"model": str(out), "arrays": str(out.with_suffix(".npz")), "layers": doc["n_layers"],
           "d_model": doc["d_model"], "alphabet": doc["alphabet"], "outputs": doc["outputs"],
           "forward_check": checked}
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        stdout_console().print(
            f"wrote {out} (+ {out.with_suffix('.npz').name}): {doc['description']}; residual width {doc['d_model']}; "
            f"forward check on {checked['words']} words: max |torch - imported soft| = "
            f"{checked['max_abs_difference']:.3g}")
    return 0
