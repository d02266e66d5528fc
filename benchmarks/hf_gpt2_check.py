"""The claims on a GPT-2 trained with ``transformers`` (``benchmarks.hf_gpt2_train``): a recorded run.

Imports the checkpoint twice with ``fastslow import-hf``: at its full context (T = n_positions,
above T·d = 256, so ``check --stack`` runs the matrix-free scale forms) and at T = 256 // d (the
dense forms, which also reach 3.1, 3.2 and 4.1).  Runs ``check --stack`` on both, and measures the
validation loss through the import's own embedding and readout (X₀ = wte + wpe, ln_f and the tied
head outside the stack) against transformers' loss on the same windows: the part of the model
the stack does not hold is checked too.  Writes one JSON.

    nice -n 10 python -m benchmarks.hf_gpt2_check docs/trained/gpt2-bytes --json docs/trained/gpt2-bytes-check.json \
        --reach docs/trained/gpt2-bytes-reach.json

``--reach`` adds the reach measurements of 2.1/2.3, 2.4 and 4.1 (``proofs_check.runners.reach.reach_on_stack``:
expansion orders and coefficients off 1x̄ᵀ, the curves up to the text's spread, the per-layer spreads) on
the full-context import, at 4 validation windows embedded by the import's own wte + wpe.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


def validation_losses(folder: Path, out: Path, windows: int = 64) -> dict:
    """Mean next-byte loss (nats/byte) of the imported stack and of transformers on the same windows."""
    import torch
    from transformers import GPT2LMHeadModel

    from numerics.storage import checkpoint as ckpt
    from numerics.text.corpus import ByteCorpus
    from numerics.storage.hf_gpt2 import embed, readout
    from numerics.stacks.spec import StackSpec

    tensors, manifest = ckpt.load(out)
    spec = StackSpec.from_dict({**manifest["spec"], "checkpoint": str(out)})
    stack = spec.build()
    outside = tensors["outside"]
    val = ByteCorpus.load().validation_windows(spec.T, windows).long()
    model = GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                            local_files_only=True).eval()
    with torch.no_grad():
        ours = readout(outside, stack(embed(outside, val)), stack.config.ln_eps)[:, :-1]
        theirs = model(val).logits[:, :-1]
        target = val[:, 1:].reshape(-1)
        loss = {name: float(torch.nn.functional.cross_entropy(l.reshape(-1, l.shape[-1]), target))
                for name, l in (("imported", ours), ("transformers", theirs))}
        loss["max_logit_difference"] = float((ours - theirs).abs().max())
    loss["windows"] = windows
    return loss


def reach(folder: Path, windows: int = 4) -> dict:
    """``reach_on_stack`` on the full-context import, at ``windows`` embedded validation windows."""
    from numerics.storage import checkpoint as ckpt
    from numerics.text.corpus import ByteCorpus
    from numerics.storage.hf_gpt2 import embed
    from numerics.stacks.spec import StackSpec
    from proofs_check.runners.import_hf import import_hf
    from proofs_check.runners.reach import reach_on_stack

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "full"
        import_hf(folder, out)
        tensors, manifest = ckpt.load(out)
        stack = StackSpec.from_dict({**manifest["spec"], "checkpoint": str(out)}).build()
        tokens = ByteCorpus.load().validation_windows(stack.config.T, windows).long()
        result = reach_on_stack(f"{folder.name} (transformers-trained GPT-2, imported)", stack,
                                embed(tensors["outside"], tokens))
    result["seconds"] = time.perf_counter() - start
    result["inputs"] = f"{windows} validation windows of the byte corpus, X0 = wte + wpe (numerics.storage.hf_gpt2.embed)"
    return result


def run(folder: Path) -> dict:
    from numerics.storage import checkpoint as ckpt
    from proofs_check.runners.check import run_stack_checks
    from proofs_check.runners.import_hf import import_hf

    record = {"checkpoint": str(folder), "imports": {}}
    with tempfile.TemporaryDirectory() as tmp:
        full = import_hf(folder, Path(tmp) / "full")
        d = full["spec"]["d"]
        imports = {"matrix-free": Path(tmp) / "full", "dense": Path(tmp) / "dense"}
        import_hf(folder, imports["dense"], T=max(2, 256 // d))
        for form, out in imports.items():
            manifest = ckpt.read_manifest(out)
            start = time.perf_counter()
            ledger = run_stack_checks(str(out), progress=False)
            record["imports"][form] = {
                "T": manifest["spec"]["T"], "hf_agreement": manifest["hf_agreement"],
                "check_seconds": time.perf_counter() - start,
                "claims": [{"id": c["id"], "title": c["title"], "status": c["status"], "reason": c["reason"],
                            "form": ((c.get("verdict") or {}).get("measured") or {}).get("form"),
                            "error": (c.get("verdict") or {}).get("error"),
                            "tolerance": (c.get("verdict") or {}).get("tolerance"),
                            "condition": (c.get("verdict") or {}).get("condition")} for c in ledger["claims"]]}
        record["validation_loss"] = validation_losses(folder, imports["matrix-free"])
        record["environment"] = ledger["environment"]
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", help="the Hugging Face checkpoint folder (save_pretrained)")
    parser.add_argument("--json", required=True)
    parser.add_argument("--reach", metavar="JSON", help="also write the reach measurements here")
    args = parser.parse_args(argv)
    from numerics.storage.io import write_json

    write_json(args.json, run(Path(args.folder)))
    if args.reach:
        write_json(args.reach, reach(Path(args.folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
