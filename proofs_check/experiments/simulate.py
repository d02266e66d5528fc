"""``fastslow simulate``: build a random stack, run a random input and the reference trajectory."""

from __future__ import annotations

import time

import torch

from numerics.stacks.spec import DTYPES, StackSpec, build
from proofs_check.validation import validate_simulate


def simulate(spec: StackSpec, *, batch: int = 1, strict: bool = False, max_memory: int | None = None,
             certificate: bool = True, progress: bool = True) -> dict:
    """Run one random input through the stack ``spec`` names; return a JSON-ready summary.

    The summary holds input/output norms, the reference trajectory's homogeneity
    error (max |stack(1x̄ᵀ) − 1x̄_Lᵀ|, which must be at float64 rounding level when
    the gate is 0), and wall times.  With the slow path on (P set) it also holds the
    interval-certified stability margin μ and gate bound g* of the drawn stack
    (``numerics.families.stability.gate_certificate``) and a warning when |gate| exceeds the certified
    bound or no gate is certified; ``strict=True`` turns that warning into a ValueError.
    ``certificate=False`` skips the certificate; its time is ``seconds['certificate']`` (the
    slow-mode maps and their n·d-square spectral norms: seconds at the CLI's defaults on idle cores,
    minutes on loaded ones), shown as a progress bar with the time left unless ``progress=False``.

    Every argument is checked before any work (``proofs_check.validation.validate_simulate``),
    including the memory every stage of the run needs (the certificate included, when it runs)
    against the available memory or ``max_memory`` bytes (``numerics.stacks.memory.run_bytes``).
    """
    if not isinstance(spec, StackSpec):
        raise TypeError(f"simulate takes a numerics.stacks.spec.StackSpec, not {type(spec).__name__}")
    validate_simulate(**spec.flat(), dtype=DTYPES[spec.dtype], device=spec.device, batch=batch, strict=strict,
                      max_memory=max_memory, certificate=certificate)
    T, d, P, seed = spec.T, spec.d, spec.P, spec.seed
    start = time.perf_counter()
    stack = build(spec)
    gate = stack.config.gate
    built = time.perf_counter()
    dev = next(stack.parameters()).device
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch, T, d, generator=gen, dtype=torch.float64, device="cpu").to(dev)
    with torch.no_grad():
        y = stack(x)
        ran = time.perf_counter()
        if not bool(torch.isfinite(y).all()):
            cfg = stack.config
            raise ValueError(f"the forward pass overflowed (non-finite output) with gate={gate}, "
                             f"value_scale={cfg.value_scale}, weight_scale={cfg.weight_scale}, decay={cfg.decay}: "
                             "reduce them")
        summary = {
            "config": stack.config.as_dict(),
            "device": str(dev),
            "parameters": sum(p.numel() for p in stack.parameters()),
            "input_norm": float(x.norm()),
            "output_norm": float(y.norm()),
            "relative_change": float((y - x).norm() / x.norm()),
        }
        if gate == 0.0:
            xbar = torch.randn(d, generator=gen, dtype=torch.float64, device="cpu").to(dev)
            ref = stack.reference_trajectory(xbar)
            full = stack(xbar.expand(T, d))
            summary["reference_final_norm"] = float(ref[-1].norm())
            summary["homogeneity_error"] = float((full - ref[-1]).abs().max())
        else:
            summary["homogeneity_error"] = None
            summary["reference_note"] = "gate != 0: the reference trajectory is not token-homogeneous"
    certified = time.perf_counter()
    if P and certificate:
        _gate_check(stack, gate, strict, summary, progress)
    elif P:
        summary["gate_certificate_text"] = "gate bound not computed (--no-certificate)"
    summary["seconds"] = {"build": built - start, "forward": ran - built,
                          "certificate": time.perf_counter() - certified, "total": time.perf_counter() - start}
    return summary


def _gate_check(stack, gate: float, strict: bool, summary: dict, progress: bool = True) -> None:
    """Certify g* for the drawn stack (Claim 5.1) and warn (or, strict, fail) past it."""
    from numerics.families.stability import AUTOGRAD_LIMIT, gate_certificate, resolve_method
    from proofs_check.progress import steps

    cfg = stack.config
    method = resolve_method(stack)
    if method == "autograd" and cfg.T * (cfg.T // cfg.P) * cfg.d * cfg.d > AUTOGRAD_LIMIT:
        note = ("gate bound not computed: this stack needs the autograd route (no shared frozen kernel, or "
                "numerics.generated.factorisation missing), too slow at this size")
        summary["gate_certificate_text"] = note
        summary.setdefault("warnings", []).append(note)
        return
    with steps("simulate: gate certificate", enabled=progress) as report:
        cert = gate_certificate(stack, method=method, progress=report)
    e = cert.enclosure
    summary["gate_certificate"] = cert.as_dict()
    summary["gate_certificate_text"] = str(cert)
    problem = None
    if not e.admits(gate):
        if e.certified:
            problem = (f"--gate {gate} exceeds the certified gate bound g* ∈ [{e.g_lo:.6g}, {e.g_hi:.6g}] "
                       f"(stability margin μ ∈ [{e.mu_lo:.6g}, {e.mu_hi:.6g}]): the gated linearised "
                       f"product may expand")
        elif gate != 0.0:
            problem = (f"--gate {gate}: the stability margin μ = {e.mu:.3g} is negative, so no gate is "
                       f"certified for this stack (try --decay with a small --ln-gain)")
    if problem:
        if strict:
            raise ValueError(problem + " (--strict)")
        summary.setdefault("warnings", []).append(problem)


def format_summary(summary: dict) -> str:
    cfg = summary["config"]
    lines = [
        f"stack   T={cfg['T']} d={cfg['d']} layers={cfg['layers']} heads={cfg['heads']} kernel={cfg['kernel']}"
        f" P={cfg['P']} gate={cfg['gate']} seed={cfg['seed']} on {summary['device']}"
        f" ({summary['parameters']:,} parameters)",
        f"forward |X_0| = {summary['input_norm']:.4g}   |X_L| = {summary['output_norm']:.4g}"
        f"   |X_L - X_0|/|X_0| = {summary['relative_change']:.4g}",
    ]
    if summary["homogeneity_error"] is not None:
        lines.append(f"reference |x̄_L| = {summary['reference_final_norm']:.4g}   homogeneity error"
                     f" max|stack(1x̄ᵀ) - 1x̄_Lᵀ| = {summary['homogeneity_error']:.3e}")
    else:
        lines.append(f"reference {summary['reference_note']}")
    if "gate_certificate_text" in summary:
        lines.append("gate    " + summary["gate_certificate_text"].replace("\n", "\n        "))
    for line in summary.get("warnings", []):
        lines.append(f"warning {line}")
    s = summary["seconds"]
    lines.append(f"time    build {s['build']:.3f}s  forward {s['forward']:.3f}s  certificate "
                 f"{s.get('certificate', 0.0):.3f}s  total {s['total']:.3f}s")
    return "\n".join(lines)
