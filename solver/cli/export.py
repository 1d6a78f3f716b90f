"""``softhard export``: a construction as a PyTorch (TorchScript) program that runs without softhard
(docs/torch.md).  The parser only (light); the work: :mod:`softhard.solver.cli.handlers.export`."""

from __future__ import annotations

from .options import FORMULA_HELP, add_formula_options, length_option, tau_option

HELP = "export a construction (formula, --model, --tracr) as a TorchScript program (needs softhard[torch])"
DESCRIPTION = ("Write the transformer of a formula, a model file or a Tracr export as a float64 TorchScript program "
               "(torch.jit.load, no softhard needed) with soft (softmax at 1/tau) and hard (argmax) modes, plus a "
               "sidecar FILE.json documenting the vocabulary (BOS first), the residual labels and how to read each "
               "output. The temperature is --tau, the certified one of --certificate CERT, or the model's own. The "
               "program is checked against softhard's NumPy forward pass (soft and hard) on test words.")


def add_arguments(p) -> None:
    add_formula_options(p, formula_nargs="?", formula_help=FORMULA_HELP + " (omit with --model/--tracr/--certificate)")
    p.add_argument("--model", default=None, metavar="FILE", help="a model file instead of a formula")
    p.add_argument("--tracr", default=None, metavar="MODEL", help="a Tracr export instead of a formula")
    p.add_argument("--certificate", default=None, metavar="CERT",
                   help="export the construction of a formula or model certificate at its certified tau")
    p.add_argument("--format", choices=["torch"], default="torch", help="output format (torch: TorchScript)")
    p.add_argument("--tau", type=tau_option, default=None, help="the soft program's default temperature, exact")
    p.add_argument("--n-max", type=length_option("--n-max"), default=None,
                   help="longest word the program accepts (positional table; default 64, or the model's table)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the program (.pt); FILE.json beside it")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
