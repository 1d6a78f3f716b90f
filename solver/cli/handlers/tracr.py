"""``softhard tracr compile`` (docs/tracr.md): :func:`softhard.constructions.tracr_compile.compile_program`
then :func:`~softhard.constructions.tracr_compile.write_export`.  Exit 0 when the export is
written, 2 for bad input (a program that does not import or compile, a bad vocabulary)."""

from __future__ import annotations

import json

from ....constructions.tracr_compile import compile_program, parse_vocab, write_export
from .console import progress


def handle(args) -> int:
    """Compile and write the export; print its path (``--json``: a JSON object)."""
    vocab = parse_vocab(args.vocab)
    with progress(f"compiling {args.program} with Tracr (max_seq_len {args.max_seq_len})") as say:
        meta, arrays, _, _ = compile_program(args.program, vocab, args.max_seq_len, args.args,
                                          mlp_exactness=args.mlp_exactness, causal=args.causal, name=args.name)
        say(f"writing the export to {args.out}")
        stem = write_export(meta, arrays, args.out, args.name)
    cfg = meta["config"]
    if args.json:
        print(json.dumps({"path": str(stem), "program": meta["program"], "label": meta["program_label"],
                          "config": cfg, "output_is_categorical": meta["output_is_categorical"]}))
    else:
        print(f"wrote {stem}.json and {stem}.npz: {meta['program']} (output {meta['program_label']}, "
              f"{'categorical' if meta['output_is_categorical'] else 'numerical'}), {cfg['num_layers']} layer(s) x "
              f"{cfg['num_heads']} head(s), key_size {cfg['key_size']}, MLP width {cfg['mlp_hidden_size']}, "
              f"d_model {meta['d_model']}; next: softhard certify --tracr {stem}")
    return 0
