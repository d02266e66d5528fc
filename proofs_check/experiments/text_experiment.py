"""Claim 7.3 on text: does the slow path's gate open, and does it lower the loss, on real text?

Arms, on the bytes of the CPython documentation (``numerics.text.corpus``): the hierarchical stack of
docs/theory.md §0 (causal fast path over every earlier byte, slow path over block means of P
bytes, zero-initialised gates) with its gates learnt (``coupled``), and the same stack with every
gate frozen at 0 (``frozen``: the fast-only model).  At g = 0 the slow path is computed and adds
exactly nothing, so the two arms cost the same compute, and each seed starts both from the same
weights and feeds them the same batches: a paired design, as in Claim 7.3's synthetic runs.

What the theory says here, fixed before any run (:data:`PREDICTION`): Claim 7.3 assumes blocks
with no shared structure.  Text shares structure across blocks (a topic, its vocabulary and its
syntax run on for hundreds of bytes), so the claim does not force ∂R/∂g = 0 at g = 0: the gate
may open.  But the fast path already attends to every earlier byte, so the slow path's block
means carry no information the fast path cannot reach: a loss gain is allowed, not predicted
(a second route to the same information can speed learning or cost capacity).  The paper's v1
reports a neutral result at about 500k tokens.

Decision rule (Claim 7.3's, ``numerics.text.training.paired_gap``): gap = mean over seeds of
loss(frozen) − loss(coupled) on the validation windows, crit = √((t·se_seed)² + (Z·se_eval)²);
*helps* when gap > crit, *hurts* when gap < −crit, else *neutral*.  The gate *opens* when some
layer's learnt gate ends, in every seed, with the same sign and |g| above a tenth of the largest
displacement AdamW can give it, Σ_t lr_t (each AdamW step moves a parameter by at most about
its learning rate).
"""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from proofs_check.experiments.train import TextConfig

ARMS = ("coupled", "frozen")
SEEDS = (0, 1, 2)
#: The experiment's model: ``fastslow train``'s default sizes (d = 128, L = 6, T = 256, P = 8, 500k tokens).
TEXT_73 = TextConfig(arch="hierarchical")
OPEN_FRACTION = 0.1
#: Where ``reproduce`` finds the recorded run (too long for it: about 20 CPU-minutes).
RECORDED = Path(__file__).resolve().parents[2] / "docs" / "trained" / "text-7.3.json"
#: The 3-seed run the power analysis (:data:`POWER_ANALYSIS`) was computed from.
PILOT = RECORDED.with_name("text-7.3-pilot.json")
#: The modules the runs execute (their imports followed): the key of a run's folder and of the record.
MODULES = ("numerics.text.training", "numerics.text.corpus", "numerics.storage.checkpoint", "numerics.stacks.spec", "proofs_check.experiments.train")

PREDICTION = ("Claim 7.3 needs blocks with no shared structure; text shares structure across blocks, so "
              "∂R/∂g at g = 0 is not forced to 0 and the gate may open. The fast path attends to every earlier "
              "byte, so the slow path adds no information it cannot reach: a loss gain is allowed, not "
              "predicted. The paper (v1) reports a neutral result at about 500k tokens.")


def run_config(cfg: TextConfig, arm: str, seed: int) -> TextConfig:
    if arm not in ARMS:
        raise ValueError(f"arm={arm!r} is not one of {', '.join(ARMS)}")
    return replace(cfg, arch="hierarchical", seed=seed, freeze_gates=arm == "frozen")


def experiment_key(cfg: TextConfig, seeds) -> str:
    """The source key of the experiment: every source file its runs execute, torch, and the settings."""
    from numerics.text.training import source_key

    return source_key(MODULES, {"config": cfg.as_dict(), "seeds": list(seeds)})


def _train_one(args) -> dict:
    cfg, out, progress = args
    from proofs_check.experiments.train import train_text

    manifest = train_text(cfg, out, progress=progress, threads=1)
    c = manifest["curves"]
    return {"seed": cfg.seed, "arm": "frozen" if cfg.freeze_gates else "coupled", "checkpoint": str(out),
            "final_eval_loss": c["eval_loss"][-1], "final_eval_per_seq": c["final_eval_per_seq"],
            "eval_step": c["eval_step"], "eval_loss": c["eval_loss"], "lr": c["lr"],
            "gates_final": [g[-1] for g in c["gates"]], "gates": c["gates"],
            "tokens": c["tokens"], "seconds": c["seconds"]}


def run(cache_dir: str | Path, cfg: TextConfig = TEXT_73, seeds=SEEDS, *, workers: int = 1,
        progress: bool = False) -> dict:
    """Train both arms for every seed (resuming from ``cache_dir/text_7_3/<key>/``), in ``workers``
    processes of one thread each; return the runs, the summary and their provenance (JSON-ready)."""
    import torch

    from proofs_check.experiments.train import git_hash, package_version

    seeds = tuple(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise ValueError(f"--seeds {seeds!r} must be one or more integers")
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ValueError(f"--seeds {' '.join(map(str, seeds))}: seed {', '.join(map(str, repeated))} given more than "
                         "once; one seed is one run, counted once (give distinct seeds)")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--workers={workers!r} must be a positive integer")
    from proofs_check.experiments.train import check_training_fits

    check_training_fits(run_config(cfg, "coupled", seeds[0]), copies=min(workers, 2 * len(seeds)))
    key = experiment_key(cfg, seeds)
    folder = Path(cache_dir) / "text_7_3" / key
    jobs = [(run_config(cfg, arm, seed), folder / run_config(cfg, arm, seed).label(), progress)
            for seed in seeds for arm in ARMS]
    if workers == 1:
        runs = [_train_one(job) for job in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            runs = list(pool.map(_train_one, jobs))
    result = {"config": cfg.as_dict(), "seeds": list(seeds), "runs": runs, "prediction": PREDICTION,
              "source_key": key, "git": git_hash(), "package_version": package_version(),
              "torch": torch.__version__}
    result["summary"] = summarise(result)
    return result


def summarise(result: dict) -> dict:
    """The paired gap with its interval and verdict, and whether the gate opens (module docstring)."""
    import torch

    from numerics.text.training import paired_gap

    runs = {arm: sorted((r for r in result["runs"] if r["arm"] == arm), key=lambda r: r["seed"]) for arm in ARMS}
    per_seq = {arm: torch.tensor([r["final_eval_per_seq"] for r in runs[arm]], dtype=torch.float64, device="cpu") for arm in ARMS}  # host: Python floats from the runs
    gap = paired_gap(per_seq["frozen"], per_seq["coupled"])
    verdict = "helps" if gap["gap"] > gap["crit"] else "hurts" if gap["gap"] < -gap["crit"] else "neutral"
    reach = sum(runs["coupled"][0]["lr"])   # Σ_t lr_t: the largest displacement AdamW gives a parameter
    gates = torch.tensor([r["gates_final"] for r in runs["coupled"]], dtype=torch.float64, device="cpu")   # (seeds, layers)
    same_sign = (torch.sign(gates) == torch.sign(gates[:1])).all(0)
    large = (gates.abs() > OPEN_FRACTION * reach).all(0)
    open_layers = [int(i) for i in torch.nonzero(same_sign & large).flatten()]
    frozen_gates = [g for r in runs["frozen"] for g in r["gates_final"]]
    return {**gap, "verdict": verdict, "interval": [gap["gap"] - gap["crit"], gap["gap"] + gap["crit"]],
            "paired_t": paired_t(gap["gap_per_seed"]),
            "loss": {arm: [r["final_eval_loss"] for r in runs[arm]] for arm in ARMS},
            "gates": gates.tolist(), "gate_reach": reach, "open_threshold": OPEN_FRACTION * reach,
            "open_layers": open_layers, "gate_opens": bool(open_layers),
            "frozen_gates_zero": all(g == 0.0 for g in frozen_gates)}


#: The pre-registered test of the powered rerun (docs/trained/text-7.3-power.md): two-sided paired t on
#: the per-seed gaps at this level; the power analysis there chose the seed count.
ALPHA = 0.01
POWER_ANALYSIS = "docs/trained/text-7.3-power.md"


def paired_t(gaps) -> dict:
    """The pre-registered paired t-test of the per-seed gaps Δ_s = loss(frozen) − loss(coupled):
    mean, sd (n − 1), Cohen's d_z = mean/sd, t = mean/(sd/√n) on n − 1 dof, its two-sided p, the
    (1 − ALPHA) interval mean ± t_{1−α/2, n−1}·sd/√n, and the verdict: *helps* (p < α, mean > 0),
    *hurts* (p < α, mean < 0), else *not detected* (not a claim that the arms are equal)."""
    import math

    from scipy import stats

    gaps = [float(g) for g in gaps]
    n = len(gaps)
    mean = sum(gaps) / n
    out = {"n": n, "alpha": ALPHA, "mean": mean, "sd": None, "d_z": None, "t": None, "dof": n - 1, "p": None,
           "interval": None, "verdict": "not detected", "rule": POWER_ANALYSIS}
    if n < 2:
        return out
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (n - 1))
    if sd == 0.0:
        return out
    se = sd / math.sqrt(n)
    t = mean / se
    half = float(stats.t.ppf(1 - ALPHA / 2, n - 1)) * se
    p = float(2 * stats.t.sf(abs(t), n - 1))
    verdict = "not detected" if p >= ALPHA else ("helps" if mean > 0 else "hurts")
    return {**out, "sd": sd, "d_z": mean / sd, "t": t, "p": p, "interval": [mean - half, mean + half],
            "verdict": verdict}


def paired_t_sentence(s: dict) -> str:
    """The pre-registered test in one sentence (the ledger's 7.3 finding and the report)."""
    pt = s.get("paired_t") or paired_t(s["gap_per_seed"])
    if pt["p"] is None:
        return f"paired t-test: not computable with {pt['n']} seed(s)"
    lo, hi = pt["interval"]
    return (f"paired t-test (decision rule of {pt['rule']}, α = {pt['alpha']:g} two-sided, n = {pt['n']} seeds): "
            f"mean gap {pt['mean']:+.4f} nats/byte, Cohen's d_z = {pt['d_z']:.2f}, {100 * (1 - pt['alpha']):.0f} % "
            f"interval [{lo:+.4f}, {hi:+.4f}], t = {pt['t']:.2f} on {pt['dof']} dof, p = {pt['p']:.2g}: "
            f"{pt['verdict']}")


def short_finding() -> str | None:
    """The recorded run's result in one clause, for the claims' summary (None when nothing is recorded)."""
    result = recorded()
    if result is None:
        return None
    pt = result["summary"]["paired_t"]
    if pt["p"] is None:
        return f"on text: {pt['n']} seed(s), no test"
    code = "" if result["current"] else "; recorded with other code"
    return (f"on text with the paper's all-token causal fast path (seeds {', '.join(map(str, result['seeds']))}{code}): "
            f"loss(frozen) − loss(coupled) = {pt['mean']:+.4f} nats/byte, d_z = {pt['d_z']:.2f}, "
            f"{100 * (1 - pt['alpha']):.0f} % interval [{pt['interval'][0]:+.4f}, {pt['interval'][1]:+.4f}], "
            f"p = {pt['p']:.2g}: {pt['verdict']}")


def statement(result: dict) -> str:
    """The finding in one paragraph (the ledger's and the report's wording)."""
    s = result["summary"]
    n = len(result["seeds"])
    cfg = result["config"]
    gates = ", ".join("(" + ", ".join(f"{g:+.3f}" for g in row) + ")" for row in s["gates"])
    opens = (f"the gate opens (layers {', '.join(map(str, s['open_layers']))} end with one sign in every seed and "
             f"|g| > {s['open_threshold']:.3f})" if s["gate_opens"] else
             f"the gate does not open (no layer ends with one sign in every seed and |g| > {s['open_threshold']:.3f})")
    per_seed = ", ".join(f"{g:+.4f}" for g in s["gap_per_seed"])
    better = sum(g > 0 for g in s["gap_per_seed"])
    return (f"On the CPython documentation ({cfg['tokens']} training bytes, d = {cfg['d']}, L = {cfg['layers']}, "
            f"T = {cfg['T']}, P = {cfg['P']}, seeds {', '.join(map(str, result['seeds']))}): "
            f"{paired_t_sentence(s)} (per seed {per_seed}: the coupled arm is lower in {better} of {n}; the "
            f"paper (v1) reports a neutral result). The earlier rule (interval t·se_seed ⊕ Z·se_eval) gives "
            f"[{s['interval'][0]:+.4f}, {s['interval'][1]:+.4f}]: {s['verdict']}. {opens[0].upper() + opens[1:]}; "
            f"learnt gates per seed: {gates}.")


def write_figure(result: dict, path: str | Path) -> Path:
    """Validation loss of both arms over training (mean over seeds, each seed faint) and the coupled
    arm's gate values over training steps, one line per layer and seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from numerics.storage.io import atomic_path

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for arm, color in zip(ARMS, ("C0", "C7")):
        runs = [r for r in result["runs"] if r["arm"] == arm]
        for r in runs:
            axes[0].plot(r["eval_step"], r["eval_loss"], color=color, alpha=0.3, lw=0.8)
        mean = [sum(v) / len(v) for v in zip(*(r["eval_loss"] for r in runs))]
        axes[0].plot(runs[0]["eval_step"], mean, "o-", color=color, ms=3,
                     label=f"{arm} ({'gates learnt' if arm == 'coupled' else 'gates frozen at 0'})")
    s = result["summary"]
    axes[0].set_xlabel("training step")
    axes[0].set_ylabel("validation loss (nats/byte)")
    axes[0].set_title(f"gap frozen − coupled = {s['gap']:+.4f} ± {s['crit']:.4f}: {s['verdict']}", fontsize=9)
    axes[0].legend(fontsize=8)
    for r in (r for r in result["runs"] if r["arm"] == "coupled"):
        for layer, curve in enumerate(r["gates"]):
            axes[1].plot(range(1, len(curve) + 1), curve, color=f"C{layer}", lw=0.8,
                         label=f"layer {layer}" if r["seed"] == result["seeds"][0] else None)
    for sign in (1, -1):
        axes[1].axhline(sign * s["open_threshold"], color="black", ls=":", lw=0.7)
    axes[1].set_xlabel("training step")
    axes[1].set_ylabel("gate g_ℓ (coupled arm)")
    axes[1].set_title(f"learnt gates, {len(result['seeds'])} seeds (dotted: ±{OPEN_FRACTION} Σ lr_t)", fontsize=9)
    axes[1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


def recorded() -> dict | None:
    """The committed run (:data:`RECORDED`) with ``current``: whether its source key is this checkout's."""
    if not RECORDED.exists():
        return None
    result = json.loads(RECORDED.read_text())
    result["summary"] = summarise(result)   # from the recorded runs, by this checkout's decision rule
    cfg = TextConfig(**result["config"])
    result["current"] = experiment_key(cfg, result["seeds"]) == result["source_key"]
    return result


def report_section(result: dict | None, figures_dir: Path) -> list[str]:
    """The report's section on the recorded run: the prediction, the finding, its provenance, the figure."""
    lines = ["", "## Claim 7.3 on text", ""]
    if result is None:
        return lines + ["Not recorded: run `fastslow train --experiment 7.3 --workers 2 --json "
                        "docs/trained/text-7.3.json --figure docs/trained/text-7.3.png`."]
    lines += [f"**Prediction (fixed before the runs).** {PREDICTION}", "",
              f"**Finding.** {statement(result)}", "",
              f"Power analysis and the pre-registered decision rule: `{POWER_ANALYSIS}`.", ""]
    if PILOT.exists():
        pilot = json.loads(PILOT.read_text())
        pilot["summary"] = summarise(pilot)
        lines += [f"Pilot run `{PILOT.name}` (seeds {', '.join(map(str, pilot['seeds']))}, before the power "
                  f"analysis; it chose the seed count): {paired_t_sentence(pilot['summary'])}.", ""]
    git = (f"started from git {result['git_at_start']}" if result.get("git_at_start")   # the code the runs executed
           else f"git {result.get('git') or 'unknown'}")
    provenance = (f"Recorded run `{RECORDED.name}` ({git}, torch {result['torch']}, "
                  f"source key {result['source_key']}). ")
    provenance += ("Its source key is this checkout's: the code that produced it is the code here." if result["current"]
                   else "**Its source key differs from this checkout's: the code changed since it was recorded; "
                        "the finding is the earlier code's, not a verdict on this one.**")
    lines += [provenance, ""]
    return lines + figure_lines(RECORDED.with_suffix(".png"), "Claim 7.3 on text", figures_dir)


def figure_lines(image: Path, title: str, figures_dir: Path) -> list[str]:
    """A committed figure copied into the report's ``figures/trained/`` and its Markdown line (none when absent)."""
    from numerics.storage.io import write_bytes

    if not image.exists():
        return []
    (figures_dir / "trained").mkdir(parents=True, exist_ok=True)
    write_bytes(figures_dir / "trained" / image.name, image.read_bytes())
    return [f"![{title}](figures/trained/{image.name})", ""]


def ledger_entry(result: dict | None) -> dict:
    """The ledger's record of the recorded run: the finding and whether it is this code's."""
    if result is None:
        return {"status": "not recorded"}
    return {"status": "recorded" if result["current"] else "recorded with other code",
            "finding": statement(result), "prediction": PREDICTION, "summary": result["summary"],
            "source_key": result["source_key"], "current": result["current"], "git": result.get("git")}


def format_result(result: dict) -> str:
    s = result["summary"]
    rows = [f"  seed {r['seed']} {r['arm']:8s}: validation {r['final_eval_loss']:.4f} nats/byte, gates "
            + ", ".join(f"{g:+.3f}" for g in r["gates_final"])
            + f" ({r['tokens'] / r['seconds']:.0f} tokens/s)" for r in result["runs"]]
    return "\n".join(rows + [statement(result), f"(gap per seed: {', '.join(f'{g:+.4f}' for g in s['gap_per_seed'])})"])
