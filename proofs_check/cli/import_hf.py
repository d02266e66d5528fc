"""``fastslow import-hf PATH --out DIR``: a local Hugging Face GPT-2 checkpoint folder as a fastslow checkpoint
(``proofs_check.runners.import_hf``), held against transformers' own hidden states first; nothing is downloaded."""

from __future__ import annotations

from proofs_check.cli.options import add_out, ascii_int


def add_parser(sub) -> None:
    from proofs_check.runners import import_hf

    p = sub.add_parser("import-hf", help="a local Hugging Face GPT-2 checkpoint folder as a fastslow checkpoint "
                                         "(for check --stack)",
                       description=import_hf.__doc__.split("\n\n")[1])
    p.add_argument("path", metavar="PATH", help="folder with config.json and model.safetensors or pytorch_model.bin")
    add_out(p, None)
    p.add_argument("--T", type=ascii_int, default=None,
                   help="tokens of the imported stack (default: the config's n_positions); 2 ≤ T ≤ n_positions")
    p.add_argument("--no-verify", action="store_true",
                   help="skip holding the stack against transformers' own forward pass")
    p.set_defaults(run=run)


def run(args) -> int:
    from proofs_check.runners.import_hf import import_hf

    manifest = import_hf(args.path, args.out, T=args.T, verify=not args.no_verify)
    spec, check = manifest["spec"], manifest["hf_agreement"]
    agree = ("not checked (transformers is not installed)" if check is None else
             f"hidden states match transformers to {check['max_relative_error']:.1e} (bound {check['tolerance']:.1e})")
    print(f"{args.out}: GPT-2 T={spec['T']} d={spec['d']} L={spec['layers']} heads={spec['heads']} from "
          f"{manifest['source']['weights']}; {agree}; run `fastslow check --stack {args.out}`")
    return 0
