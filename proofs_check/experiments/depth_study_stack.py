"""The depth study's measures on one checkpoint (``fastslow study depth --stack DIR``): a ``fastslow train``
checkpoint (byte embedding ``embed``) or one ``import-hf`` wrote (GPT-2's ``wte`` + ``wpe``).

The held-out windows are the shipped text's validation bytes.  For a GPT-2 vocabulary each byte is mapped to
GPT-2's own single-byte token (its byte-level alphabet, ids 0–255, without BPE merges): a valid GPT-2 input,
though unmerged text is not what GPT-2 was trained on; the record says so.  One checkpoint fixes L, so there
is no fit in L: the record is the per-layer table (step, invariant roughness, fixed-pattern error) and the
finite-time spectrum.
"""

from __future__ import annotations

from pathlib import Path

import torch


def gpt2_byte_ids() -> torch.Tensor:
    """GPT-2's token id of each byte 0..255: the printable bytes (33–126, 161–172, 174–255) take ids 0–187 in
    order, the other 68 bytes ids 188–255 in order (so the space, byte 32, is id 220, 'Ġ')."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    rest = [b for b in range(256) if b not in printable]
    ids = torch.empty(256, dtype=torch.long, device="cpu")  # a host lookup table: the looked-up ids move on
    for i, b in enumerate(printable + rest):
        ids[b] = i
    return ids


def held_out_input(tensors: dict, T: int, windows: int, dtype=torch.float64, device: str = "cpu"):
    """(X0 (n, T, d), how the text was tokenised) from the checkpoint's own embedding."""
    from numerics.storage.checkpoint import CheckpointError
    from numerics.text.corpus import ByteCorpus

    tokens = ByteCorpus.load().validation_windows(T, windows)
    if "outside" in tensors:
        from numerics.storage import hf_gpt2
        outside = {k: v.to(dtype=dtype, device=device) for k, v in tensors["outside"].items()}
        V = outside["embedding.wte"].shape[0]
        if V < 256:
            raise CheckpointError(f"vocabulary of {V} tokens: the held-out bytes need GPT-2's 256 byte tokens")
        return hf_gpt2.embed(outside, gpt2_byte_ids()[tokens].to(device)), "bytes as GPT-2's byte tokens (no merges)"
    model = tensors.get("model", {})
    if "embed" not in model:
        raise CheckpointError("the checkpoint holds neither a byte embedding ('embed') nor GPT-2's 'outside' tensors")
    return model["embed"].to(dtype=dtype, device=device)[tokens.to(device)], "bytes (the checkpoint's byte embedding)"


def measure_checkpoint(path: str | Path, *, windows: int = 8, probes: int = 8, spectrum_tokens: int = 8,
                       spectrum_windows: int = 4, device: str = "cpu") -> dict:
    """Measures (a)–(c) of docs/depth_study.md on the checkpoint's stack along held-out text (float64)."""
    from numerics.storage import checkpoint as ckpt
    from numerics.depth_study.cell import _to_cpu_floats, measure_stack
    from numerics.stacks.spec import StackSpec

    tensors, manifest = ckpt.load(path)
    spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64", "device": device})
    stack = spec.with_(checkpoint=str(path)).build().requires_grad_(False)
    X0, text = held_out_input(tensors, spec.T, windows, device=device)
    rec = measure_stack(stack, X0, probes=probes, spectrum_tokens=min(spectrum_tokens, spec.T),
                        spectrum_windows=spectrum_windows)
    return {"checkpoint": str(path), "spec": spec.with_(device="cpu").as_dict(), "text": text,
            "windows": int(X0.shape[0]), **_to_cpu_floats(rec)}


def table(rec: dict) -> str:
    """The per-layer table and the spectrum's gap, as text."""
    from proofs_check.tables import text_table

    groups = list(rec["roughness"])
    rows = [["layer", "step", "fixed-pattern e", *(f"r {g}" for g in groups)]]
    for ell, s in enumerate(rec["step"]["profile"]):
        rough = [rec["roughness"][g]["profile"] for g in groups]
        rows.append([ell, f"{s:.3f}", f"{rec['fixed_pattern']['profile'][ell]:.3f}",
                     *(f"{p[ell]:.3f}" if ell < len(p) else "—" for p in rough)])
    sp = rec["spectrum"]
    return ("\n".join(text_table(rows, align="<" + ">" * (len(rows[0]) - 1))) + f"\nL = {rec['layers']}, h = {rec['h']:g}: mean step {rec['step']['mean']:.3f}; "
            f"spectrum (first {len(sp['per_window'])} windows, LN-quotiented): largest log-gap g = {sp['g']:.3f} "
            f"(positions {sp['k']}), depth-wise ε = L·h/g = {sp['eps']:.3g}; text: {rec['text']}")
