"""All of the depth study's measures on one stack along held-out text (:func:`measure_stack`), and on every
snapshot of one trained cell (:func:`measure_cell`).  docs/depth_study.md states the measures."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from numerics.depth_study import measures as ms
from numerics.depth_study.spectrum import spectrum_summary


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def measure_stack(stack, X0: torch.Tensor, *, probes: int = 8, spectrum_tokens: int = 8,
                  spectrum_windows: int = 4, seed: int = 0, heavy: bool = True) -> dict:
    """Measures (a)–(c) of ``stack`` (float64) from the embedded held-out windows X0 (n, T, d); (c) on the
    first ``spectrum_windows`` windows.  ``heavy=False``: (a) only."""
    with torch.no_grad():
        states = stack.trajectory(X0)
    steps = ms.step_profile(states)
    rough = ms.stack_roughness(stack) if len(stack.layers) > 1 else {}
    out = {"layers": len(stack.layers), "h": stack.h,
           "step": {"profile": steps, "mean": _mean(steps), "path_length": sum(steps)},
           "roughness": {g: {"profile": r, "mean": _mean(r)} for g, r in rough.items()}}
    if heavy:
        fixed = ms.fixed_pattern_profile(stack, states, probes, seed=seed)
        out["fixed_pattern"] = {"profile": fixed, "mean": _mean(fixed)}
        out["spectrum"] = spectrum_summary(stack, X0[:spectrum_windows], spectrum_tokens)
    return out


def measure_cell(cfg, folder: str | Path, *, device: str = "cpu", windows: int = 8, probes: int = 8,
                 spectrum_tokens: int = 8, spectrum_windows: int = 4) -> dict:
    """Every snapshot of the trained cell ``cfg`` (``numerics.depth_study.training``) measured along
    ``windows`` held-out windows, (b) and (c) at the first and last snapshot only; also the cell's
    validation curve and training time."""
    from numerics.text.corpus import ByteCorpus
    from numerics.depth_study.training import load_snapshot

    folder = Path(folder)
    tokens = ByteCorpus.load().validation_windows(cfg.T, windows).to(device)
    run = json.loads((folder / "run.json").read_text())
    out = {"config": cfg.as_dict(), "h": cfg.h, "run": run, "snapshots": {}}
    for step in cfg.snapshots:
        model = load_snapshot(cfg, folder, step, dtype=torch.float64, device=device).requires_grad_(False)
        with torch.no_grad():
            X0 = model.embed[tokens]
        rec = measure_stack(model.stack, X0, probes=probes, spectrum_tokens=spectrum_tokens,
                            spectrum_windows=spectrum_windows, seed=step,
                            heavy=step in (cfg.snapshots[0], cfg.snapshots[-1]))
        out["snapshots"][str(step)] = _to_cpu_floats(rec)
    out["weight_motion"] = weight_motion(folder, cfg.snapshots[0], cfg.snapshots[-1])
    return out


def weight_motion(folder: str | Path, first: int, last: int) -> dict:
    """How far training moved the weights: ‖θ_last − θ_first‖_F/‖θ_first‖_F over the stack's trained tensors
    (all layers together; the causal mask buffers excluded), and the same for the byte embedding."""
    from numerics.depth_study.training import snapshot_path

    a, b = (torch.load(snapshot_path(folder, s), weights_only=True, map_location="cpu") for s in (first, last))

    def rel(keys) -> float:
        num = sum(float((b[k].double() - a[k].double()).pow(2).sum()) for k in keys)
        den = sum(float(a[k].double().pow(2).sum()) for k in keys)
        return (num / den) ** 0.5

    stack = [k for k in a if k.startswith("stack.") and not k.endswith("attn.bias")]
    return {"stack": rel(stack), "embed": rel(["embed"])}


def _to_cpu_floats(obj):
    """The record with every number a plain float (JSON)."""
    if isinstance(obj, dict):
        return {k: _to_cpu_floats(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_cpu_floats(v) for v in obj]
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    return obj
