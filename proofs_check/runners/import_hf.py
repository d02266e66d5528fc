"""``fastslow import-hf PATH --out DIR``: a local Hugging Face GPT-2 checkpoint as a fastslow checkpoint.

PATH is a folder holding config.json and model.safetensors or pytorch_model.bin (what
``save_pretrained`` writes); nothing is downloaded.  The mapping is ``numerics.storage.hf_gpt2``.  The
result is the checkpoint format of ``fastslow train`` (``numerics.storage.checkpoint``): manifest.json
(kind ``hf-gpt2``, the HF config, the stack's spec, the source files' sha256) and
weights-00000000.pt holding the stack's state dict under ``model`` (float64) and the embedding
and readout (wte, wpe, ln_f, head) under ``outside``, so that ``fastslow check --stack DIR`` runs
every on-stack claim on GPT-2's weights.

Before anything is written the imported stack is held against GPT-2's own forward pass when
``transformers`` is installed (the ``[hf]`` extra): HF's ``output_hidden_states`` in float64 with
eager attention, at a seeded random token sequence, layer by layer, within the float64 bound of
``numerics.storage.hf_gpt2.hidden_state_tolerance``; the measured errors go into the manifest.

Bad input — a missing or corrupt file, another model type, a refused option, a tensor of the wrong
shape, an output folder holding something this command did not write — exits 2 naming the file
and the field, before any file is written.  The output folder is claimed and locked
(``numerics.storage.checkpoint.claim``) from the check against transformers to the save, so a second import
into the same folder is refused (exit 2) instead of both succeeding.
"""

from __future__ import annotations

from pathlib import Path

KIND = "hf-gpt2"


def hf_hidden_states(folder: Path, tokens):
    """GPT-2's own hidden states (L+1, T, d) at ``tokens`` (T,), float64, eager attention; None
    when ``transformers`` is not installed."""
    try:
        import torch
        from transformers import GPT2LMHeadModel
    except ImportError:
        return None
    model = GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                            local_files_only=True)
    model.eval()
    with torch.no_grad():
        out = model(tokens[None], output_hidden_states=True)
    return torch.stack([h[0] for h in out.hidden_states])


def agreement(stack, outside: dict, ln_eps: float, hidden, tokens) -> dict:
    """Per layer ℓ, ‖X_ℓ − HF_ℓ‖/‖HF_ℓ‖ with X the stack's trajectory from X₀ = wte[tokens] + wpe, and
    ln_f(X_L) against HF's last hidden state (HF applies ln_f to it)."""
    import torch

    from numerics.storage import hf_gpt2
    with torch.no_grad():
        traj = stack.trajectory(hf_gpt2.embed(outside, tokens))
        ours = torch.cat([traj[:-1], hf_gpt2.final_norm(outside, traj[-1:], ln_eps)])
        errors = [float((a - b).norm() / b.norm()) for a, b in zip(ours, hidden)]
    cfg = stack.config
    tol = hf_gpt2.hidden_state_tolerance(cfg.T, cfg.d, cfg.layers, cfg.mlp_ratio)
    return {"relative_errors": errors, "max_relative_error": max(errors), "tolerance": tol,
            "tokens_seed": 0, "holds": max(errors) <= tol}


def check_out(out: Path) -> None:
    """Refuse an output folder that holds anything but an earlier import (never overwrite another run)."""
    from numerics.storage import checkpoint as ckpt
    from numerics.storage import outdir
    from numerics.storage.io import is_own_temp

    if not out.is_dir() or not [e for e in out.iterdir() if e.name not in (outdir.MARKER, outdir.LOCK)
                                and not is_own_temp(e)]:
        return
    try:
        manifest = ckpt.read_manifest(out)
    except ckpt.CheckpointError:
        manifest = None
    if manifest is None or manifest.get("kind") != KIND:
        raise ValueError(f"--out {out}: the folder holds files this command did not write; give a new or empty "
                         "folder (or an earlier import-hf output)")


def import_hf(path: str | Path, out: str | Path, T: int | None = None, verify: bool = True) -> dict:
    """Import the GPT-2 checkpoint folder ``path`` into the fastslow checkpoint ``out``; return the manifest."""
    from numerics.storage import checkpoint as ckpt
    from numerics.storage import hf_gpt2
    folder, out = Path(path), Path(out)
    if not folder.is_dir():
        raise hf_gpt2.HFImportError(f"PATH {folder}: not a folder (a Hugging Face checkpoint folder: config.json "
                                    "plus model.safetensors or pytorch_model.bin)")
    check_out(out)
    config = hf_gpt2.read_config(folder)
    wfile = hf_gpt2.weights_file(folder)
    tensors = hf_gpt2.checked_tensors(wfile, config)
    spec, stack = hf_gpt2.build_stack(config, tensors, T)
    outside = hf_gpt2.outside_tensors(tensors)
    with ckpt.claim(out, name="--out"):  # locked: a second import into the same folder is refused
        return _verify_and_save(folder, out, config, wfile, spec, stack, outside, verify)


def _verify_and_save(folder, out, config, wfile, spec, stack, outside, verify) -> dict:
    import torch

    from numerics.storage import checkpoint as ckpt
    from numerics.storage import hf_gpt2
    from proofs_check.experiments.train import git_hash, package_version

    check = None
    if verify:
        tokens = torch.randint(0, config["vocab_size"], (spec.T,), generator=torch.Generator().manual_seed(0), device="cpu")  # seeded on the host (a CPU generator): host ids for both models
        hidden = hf_hidden_states(folder, tokens)
        if hidden is not None:
            check = agreement(stack, outside, stack.config.ln_eps, hidden, tokens)
            if not check["holds"]:
                raise hf_gpt2.HFImportError(
                    f"{wfile}: the imported stack does not reproduce GPT-2's hidden states (max relative error "
                    f"{check['max_relative_error']:.2e} > {check['tolerance']:.2e}); the checkpoint uses an option "
                    "this import does not map")
    manifest = {"kind": KIND, "config": config, "step": 0, "curves": {"eval_loss": []},
                "spec": spec.as_dict(),
                "source": {"path": str(folder.resolve()), "weights": wfile.name,
                           "sha256": {p.name: ckpt.sha256_file(p) for p in (folder / hf_gpt2.CONFIG, wfile)}},
                "hf_agreement": check, "package_version": package_version(), "git": git_hash(),
                "torch": torch.__version__}
    ckpt.save(out, {"model": {f"stack.{k}": v for k, v in stack.state_dict().items()}, "outside": outside},
              manifest)
    return ckpt.read_manifest(out)
