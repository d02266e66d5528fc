"""Where the numbers docs/real_models.md quotes come from, beyond ``tests/docs_ties.py``'s: the committed records of
the byte GPT-2 (docs/trained/gpt2-bytes-*.json, its checkpoint's file size) and of the GPT-2-small runs
(docs/scale/hf-gpt2-small-*.json), the code's pre-registered constants, and sizes recomputed here from the
records' shapes by the formula the doc states.

Each function returns the values of one passage of ``tests/docs_quotes_real_models.py``'s ``QUOTES``, by the names
its template gives them (numbers, ("≤", v) or ("≲", v), as in ``tests/docs_ties.py``).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from docs_ties import ROOT, _parse, _record

FLOAT64_U = 2.0 ** -53          # unit roundoff of float64
FLOAT32_BYTES, FLOAT64_BYTES = 4, 8


def _along(path: str) -> dict:
    """A `check --stack` record along held-out text: claim id -> its verdict's measured values."""
    return {c["id"]: c["verdict"]["measured"] for c in _record(path)["claims"]}


def _small_spec() -> dict:
    """The GPT-2-small stack's shape, as its along-text record states it."""
    return _record("docs/scale/hf-gpt2-small-along-text.json")["stack"]["spec"]


def _small_check() -> dict:
    return _record("docs/scale/hf-gpt2-small-check.json")


def import_bound_and_gelu() -> dict:
    """The constant 3 of the hidden-state bound's dot-product length, read back from the code's tolerance at two
    widths (n/L − 2T is linear in d with slope 3 + 2·mlp_ratio), and the largest |GELU − gelu_new| (the erf and
    tanh forms), found here by a dense grid refined with a bounded scalar search."""
    import numpy as np
    from scipy.optimize import minimize_scalar
    from scipy.special import erf

    from numerics.storage.hf_gpt2 import hidden_state_tolerance

    T, L, m = 8, 3, 4
    n = {d: hidden_state_tolerance(T, d, L, m) / (2 * FLOAT64_U) / L - 2 * T for d in (16, 32)}
    three = (n[32] - n[16]) / 16 - 2 * m

    def gap(x):
        exact = 0.5 * x * (1 + erf(x / math.sqrt(2)))
        tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return abs(exact - tanh)

    xs = np.linspace(-8, 8, 160001)
    x0 = xs[np.argmax(gap(xs))]
    best = minimize_scalar(lambda x: -gap(x), bounds=(x0 - 1e-3, x0 + 1e-3), method="bounded", options={"xatol": 1e-12})
    return {"three": three, "gelu": -best.fun}


def claim_table() -> dict:
    """The claim table's settings as the records ran them: 3.2's block size (the byte GPT-2 along text), 6.4's
    embedded text windows and its evaluated modes above 1 GiB (GPT-2-small's check)."""
    reach = _small_check()["claim_6_4_reach"]
    return {"P": _along("docs/trained/gpt2-bytes-along-text.json")["3.2"]["P"],
            "windows": len(reach["real_inputs"]["measured"]), "modes": len(reach["modes"]["evaluated"])}


def bytes_along_text() -> dict:
    """The byte GPT-2's along-text run: its training record's validation loss, the windows, layers and τ of its
    check record, the probes the check draws, and the frozen kernel's miss at the text spread (its reach record)."""
    from proofs_check.claims.along_text import PROBES

    m = _along("docs/trained/gpt2-bytes-along-text.json")
    reach = _record("docs/trained/gpt2-bytes-reach.json")
    text = next(c for c in reach["curve"] if c["s"] == reach["text_spread"])
    return {"loss": _record("docs/trained/gpt2-bytes-train.json")["final_validation_loss"],
            "windows": m["2.1"]["text"]["windows"], "last": len(m["2.1"]["layer_errors"]) - 1,
            "tau": m["3.1"]["tau"], "miss": 100 * text["factorised_error"], "probes": PROBES}


def small_along_text() -> dict:
    """GPT-2-small along text: the last layer's index of each per-layer list, and τ."""
    m = _along("docs/scale/hf-gpt2-small-along-text.json")
    sp, le, q = m["2.1"]["text"]["spread_by_layer"], m["2.1"]["layer_errors"], m["3.1"]["decaying_ratio"]
    return {"sp": sp[-1], "sp_layer": len(sp) - 1, "eL": 100 * le[-1], "e_layer": len(le) - 1, "qL": q[-1],
            "q_layer": len(q) - 1, "tau": m["3.1"]["tau"]}


def bytes_trained() -> dict:
    """The byte GPT-2's training record (its GPT2Config, optimiser settings, evaluation windows), the size of the
    committed checkpoint's files, and the windows its 6.4 rerun and its reach run embedded."""
    train = _record("docs/trained/gpt2-bytes-train.json")
    g, cfg = train["gpt2_config"], train["config"]
    size = sum(f.stat().st_size for f in (ROOT / "docs/trained/gpt2-bytes").iterdir() if f.is_file())
    check = _record("docs/trained/gpt2-bytes-check.json")["imports"]
    six = [_parse(next(c for c in imp["claims"] if c["id"] == "6.4")["condition"], r"on ([0-9]+) validation windows")
           for imp in check.values()]
    assert len({w for (w,) in six}) == 1, six
    reach = _record("docs/trained/gpt2-bytes-reach.json")
    (reach_windows,) = _parse(reach["inputs"], r"^([0-9]+) validation windows")
    assert reach_windows == len(reach["text_spreads"])
    return {"vocab": g["vocab_size"], "pos": g["n_positions"], "embd": g["n_embd"], "layer": g["n_layer"],
            "head": g["n_head"], "lr": cfg["lr"], "warmup": cfg["warmup"], "wd": cfg["weight_decay"],
            "eval": cfg["eval_windows"], "mb": size / 1e6, "windows": six[0][0], "reach_windows": reach_windows,
            "s001": min(c["s"] for c in reach["curve"])}


def gpt2_small_parameters(vocab: int, T: int, d: int, L: int, mlp_ratio: int = 4) -> int:
    """GPT-2's parameter count with its tied head: wte, wpe, per layer two LayerNorms, c_attn, attn.c_proj,
    mlp.c_fc, mlp.c_proj (weights and biases), and ln_f."""
    layer = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (mlp_ratio * d * d + mlp_ratio * d) + (mlp_ratio * d * d + d)
    return vocab * d + T * d + L * layer + 2 * d


def gpt2_small_size() -> dict:
    """The GPT-2-small runs: the saved float32 model's size and the hidden-state bound 2n·u (both recomputed from
    the record's config), the claims' errors and the 6.4 rerun of docs/scale/hf-gpt2-small-check.json, the dense
    6.4's T·L·d² float64 numbers, and the load, date and resources that record holds."""
    config = _record("docs/scale/hf-gpt2-small-along-text.json")["stack"]["config"]
    spec = _small_spec()
    T, d, L, m = spec["T"], spec["d"], spec["layers"], spec["knobs"]["mlp_ratio"]
    rec = _small_check()
    claims = {c["id"]: c for c in rec["claims"]}
    reach = rec["claim_6_4_reach"]
    hour, minute = _parse(rec["date"], r"^\S+ ([0-9]{2}):([0-9]{2})-")
    params = gpt2_small_parameters(config["vocab_size"], config["n_positions"], config["n_embd"], config["n_layer"])
    out = {"vocab": config["vocab_size"], "mb": params * FLOAT32_BYTES / 1e6,
           "bound": 2 * L * (2 * T + (3 + 2 * m) * d) * FLOAT64_U, "dense_gb": T * L * d * d * FLOAT64_BYTES / 1e9,
           "modes_T": T, "lo": rec["load_1min"]["min"], "hi": rec["load_1min"]["max"], "mean": rec["load_1min"]["mean"],
           "hour": hour, "minute": minute, "wall_min": rec["wall_s"] // 60, "wall_s": rec["wall_s"] % 60,
           "cpu": rec["cpu_s"], "rss": rec["peak_rss_gib"], "six_s": claims["6.4"]["seconds"],
           "evaluated": len(reach["modes"]["evaluated"]), "decaying": reach["modes"]["decaying_modes"],
           "miss": reach["max_log_error"], "power": reach["power_law_max_log_error"], "r": reach["r_last"][0],
           "rhat": reach["rhat_last"][0], "growth": reach["spread_growth"], "exp": reach["exponent"],
           "pred": reach["predicted_exponent"], "windows": len(reach["real_inputs"]["measured"]),
           "real": reach["real_inputs"]["max_log_error"]}
    for cid in ("1.2", "2.1", "2.2", "2.3", "2.4"):
        key = cid.replace(".", "")
        out[f"e{key}"], out[f"t{key}"] = claims[cid]["error"], claims[cid]["tolerance"]
    return out


def scale_budget() -> dict:
    """The GPT-2-small benchmark's budget (its pre-registered defaults), the check record's peak RSS, 6.4's
    one-mode block (L·d² float64 numbers) and work (L products and eigenproblems of d × d, SCALE_MODES of the
    T − 1 decaying modes), and the autograd route's limit."""
    import inspect

    from benchmarks.hf_gpt2_small import run
    from numerics.families.depth_clock_scale import AUTOGRAD_BYTES_LIMIT, SCALE_MODES

    defaults = inspect.signature(run).parameters
    spec = _small_spec()
    L, d = spec["layers"], spec["d"]
    rec = _small_check()
    minutes, gib = defaults["budget_seconds"].default / 60, defaults["budget_gib"].default
    return {"min": minutes, "gib": gib, "min2": minutes, "gib2": gib, "rss": rec["peak_rss_gib"],
            "scale_modes": SCALE_MODES, "block_mb": L * d * d * FLOAT64_BYTES / 1e6, "L1": L, "L2": L, "d1": d,
            "d2": d, "modes": len(rec["claim_6_4_reach"]["modes"]["evaluated"]),
            "decaying": rec["claim_6_4_reach"]["modes"]["decaying_modes"], "autograd": AUTOGRAD_BYTES_LIMIT / 2 ** 30}



def _fastslow(*args: str) -> None:
    """Run the console script's command line with this interpreter (the venv need not be on PATH)."""
    subprocess.run([sys.executable, "-c", "import sys; from proofs_check.cli import main; sys.exit(main())", *args],
                   check=True, capture_output=True)


def hierarchical_along_text() -> dict:
    """The trained hierarchical stack, rerun here: the doc's own `fastslow train --arch hierarchical …` command
    (seeded, a few seconds), then `check --stack` along held-out text; its gates, 4.2's largest gate derivative
    over its rounding floor, the misses of 2.1 (worst layer), 2.3, 2.4, 3.2 (worst window), 4.1 and the text's
    mean spread."""
    doc = (ROOT / "docs/real_models.md").read_text()
    (command,) = re.findall(r"`fastslow train (--arch hierarchical[^`]*)`", doc)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, record = Path(tmp) / "ckpt", Path(tmp) / "check.json"
        _fastslow("train", *command.split(), "--out", str(ckpt), "--no-progress")
        _fastslow("check", "--stack", str(ckpt), "--claim", "2.1", "2.3", "2.4", "3.2", "4.1", "4.2",
                  "--json", str(record))
        v = {c["id"]: c["verdict"] for c in json.loads(record.read_text())["claims"]}
    m42 = v["4.2"]["measured"]
    return {"g0": m42["gates"][0], "g1": m42["gates"][1],
            "floor": max(abs(x) for x in m42["dloss_dgate"]) / m42["rounding_floor"],
            "e21": 100 * v["2.1"]["error"], "e23": 100 * v["2.3"]["error"], "e24": 100 * v["2.4"]["error"],
            "e32": 100 * v["3.2"]["error"], "e41": 100 * v["4.1"]["error"],
            "spread": v["2.1"]["measured"]["text"]["spread_mean"]}


def clock_scale_route() -> dict:
    """6.4's one-mode-at-a-time route against the dense one on tests/test_depth_clock_scale.py's two small stacks
    (T = 6, d = 8, L = 8, seed 3; the ideal value path and GPT-2's configuration), every mode, rerun here: the
    largest relative difference of the ratios r_ℓ(λ) (rounding level), and the constant of the tolerance
    10·L·(d + 1)·ε that 6.4's code states, read back from it."""
    from numerics.families import depth_clock_scale as S
    from numerics.families import depth_slow_manifold as nds
    from numerics.stacks.spec import StackSpec
    from numerics.stacks.stack import random_xbar
    from proofs_check.claims.depth_slow_manifold import identity_tolerance

    L, d, eps = 8, 8, 2.0 ** -52
    gaps = []
    for knobs in ({"value_scale": 20.0}, {"activation": "gelu_new", "attn_bias": True, "step": 1.0, "ln_eps": 1e-5}):
        stack = StackSpec.of(T=6, d=d, layers=L, heads=2, kernel="causal", seed=3, **knobs).build()
        xbar = random_xbar(d, 3)
        lams, dense = nds.measured_ratios(stack, xbar)
        limit, S.BLOCK_BYTES_LIMIT = S.BLOCK_BYTES_LIMIT, 0       # force the one-mode-at-a-time route
        try:
            _, one_at_a_time, modes = S.measured_ratios(stack, xbar, n=len(lams))
        finally:
            S.BLOCK_BYTES_LIMIT = limit
        assert modes["form"] == "mode subset"
        gaps.append(float((one_at_a_time / dense - 1).abs().max()))
    return {"ten": identity_tolerance(L, d) / (L * (d + 1) * eps), "measured": ("≲", max(gaps))}
