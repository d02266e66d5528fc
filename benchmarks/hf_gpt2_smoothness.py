"""Depth smoothness of the GPT-2 trained with transformers (``benchmarks.hf_gpt2_train``): a recorded run.

Claim 1.1 reads an untied stack as an Euler scheme when its weights sample a smooth path in depth; then
the depth roughness r_ℓ = ‖θ_{ℓ+1} − θ_ℓ‖_F/‖θ_ℓ‖_F (``proofs_check.experiments.depth_smoothness``)
falls like 1/L.  Weights drawn i.i.d. per layer give r ≈ √2 for zero-mean matrices.  Here r is
measured per parameter group and per layer on the trained checkpoint imported with ``import-hf``,
beside the same model's initialisation (``GPT2LMHeadModel`` of the training config under the training
seed, rebuilt: transformers draws every matrix i.i.d. N(0, 0.02²), the output projections with
0.02/√(2L), the biases 0 and the LayerNorm gains 1) and beside the training update θ_ℓ − θ_ℓ(init).

    nice -n 10 python -m benchmarks.hf_gpt2_smoothness docs/trained/gpt2-bytes \
        --json docs/trained/gpt2-bytes-depth-smoothness.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


def imported_stack(folder: Path, out: Path):
    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    from proofs_check.runners.import_hf import import_hf

    import_hf(folder, out)
    return StackSpec.from_dict({**ckpt.read_manifest(out)["spec"], "dtype": "float64",
                                "checkpoint": str(out)}).build()


def per_layer(stack, reference=None) -> dict[str, list[float | None]]:
    """r_ℓ per group and layer pair ℓ = 0..L−2 (None where ‖θ_ℓ‖ = 0: zero-initialised biases)."""
    from proofs_check.experiments.depth_smoothness import group_tensors

    own = group_tensors(stack)
    if reference is not None:
        ref = group_tensors(reference)
        own = {g: [a - b for a, b in zip(own[g], ref[g])] for g in own}
    return {g: [None if float(a.norm()) == 0 else float((b - a).norm() / a.norm()) for a, b in zip(ts, ts[1:])]
            for g, ts in own.items()}


def mean(values) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if len(vals) == len(values) and vals else None


def run(folder: Path) -> dict:
    import torch
    import transformers
    from transformers import GPT2LMHeadModel

    from benchmarks.hf_gpt2_train import HFTrainConfig, gpt2_config
    from proofs_check.experiments.depth_smoothness import IID_RATIO

    cfg = HFTrainConfig()
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(cfg.seed)
        GPT2LMHeadModel(gpt2_config(cfg)).float().save_pretrained(Path(tmp) / "init-hf")
        trained = imported_stack(folder, Path(tmp) / "trained")
        init = imported_stack(Path(tmp) / "init-hf", Path(tmp) / "init")
    layers = {"trained": per_layer(trained), "init": per_layer(init), "update": per_layer(trained, init)}
    means = {kind: {g: mean(v) for g, v in rows.items()} for kind, rows in layers.items()}
    mats = ("W_QK", "W_VO", "W1", "W2")
    statement = (f"GPT-2 trained on bytes (L = {len(trained.layers)}, d = {trained.config.d}): the layer-to-layer change "
                 + ", ".join(f"{g} {means['trained'][g]:.2f}" for g in mats)
                 + f" (mean over depth; its initialisation " + ", ".join(f"{means['init'][g]:.2f}" for g in mats)
                 + f"; i.i.d. √2 = {IID_RATIO:.2f}); of the training update alone "
                 + ", ".join(f"{g} {means['update'][g]:.2f}" for g in mats) + ".")
    return {"checkpoint": str(folder), "config": cfg.__dict__, "transformers": transformers.__version__,
            "init": f"GPT2LMHeadModel(gpt2_config(HFTrainConfig())) after torch.manual_seed({cfg.seed}), as the training "
                    "script builds it (rebuilt here, not saved by the training run)",
            "definition": "r_l = ||theta_(l+1) - theta_l||_F / ||theta_l||_F per group (proofs_check.experiments."
                          "depth_smoothness.GROUPS), on the imported stack; None where ||theta_l|| = 0",
            "by_layer": layers, "mean": means, "iid_ratio": IID_RATIO, "statement": statement}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", help="the Hugging Face checkpoint folder (save_pretrained)")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    from numerics.storage.io import write_json

    record = run(Path(args.folder))
    write_json(args.json, record)
    print(record["statement"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
