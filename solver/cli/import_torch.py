"""``softhard import-torch``: a trained ``torch.nn.TransformerEncoder`` classifier as a model file
(docs/torch.md).  The parser only (light); the work: :mod:`softhard.solver.cli.handlers.import_torch`."""

from __future__ import annotations

HELP = "convert a trained torch TransformerEncoder classifier into a model file (needs softhard[torch])"
DESCRIPTION = ("Load MODULE:FACTORY() (MODULE a dotted module name or a .py file), load --state-dict into it, and "
               "write its argmax-attention counterpart as a model file (JSON + .npz): embedding, positional table, "
               "encoder layers (pre- or post-norm, ReLU, layer norms), linear read-out. Unsupported modules are "
               "refused with one line naming the module. The imported model is checked against the module's own "
               "forward pass on a few words. Then gap, certify --model and run --model work on it.")


def add_arguments(p) -> None:
    p.add_argument("factory", metavar="MODULE:FACTORY", help="e.g. examples/torch/encoder.py:make_model")
    p.add_argument("--state-dict", default=None, metavar="FILE", help="weights saved with torch.save(model.state_dict())")
    p.add_argument("-o", "--output", required=True, metavar="MODEL.json", help="model file to write (plus MODEL.npz)")
    p.add_argument("--name", default=None, help="model name (default: the output file's stem)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.add_argument("--json", action="store_true", help="print JSON")
