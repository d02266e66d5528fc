"""The GPT-2 weight mapping (``numerics.storage.hf_gpt2``) against an independent GPT-2 forward, on built-in tiny checkpoints.

The claims run on imported GPT-2 checkpoints only through the mapping (config fields → the stack's knobs, Conv1D
blocks → W_Q, W_K, W_V, W_O per head, b_K dropped, b_V folded into b_O).  This check writes two tiny random
GPT-2 checkpoints (config.json + pytorch_model.bin, one per GELU form, ``layer_norm_epsilon`` = 0.05 away from
its default, every bias nonzero), imports each through ``numerics.storage.hf_gpt2`` exactly as ``fastslow import-hf``
does, and compares the stack's states X_0..X_L and ln_f(X_L) with the hidden states of

- ``transformers.GPT2Model`` when transformers is installed, and always
- :func:`gpt2_forward`: GPT-2's block written here from its equations in plain torch (Radford et al. 2019;
  HF's modeling_gpt2), sharing no code with ``numerics.storage.hf_gpt2`` or ``numerics.stacks.stack``.

Tolerance (float64): each route rounds each layer's dot products, of summed inner length
n = L(2T + 11d) (softmax normaliser and mixing over T, Q/K/V, O and LN over d, the MLP's two products over
4d), to ≤ n·u each, so the routes differ by ≤ 2n·u relative.  The control: the same comparison with the
reference forward given one mapping mistake each (ε at its 1e-5 default, the other GELU form, b_V not folded)
must exceed the tolerance by 10³ — a mapping mistake of that kind cannot pass.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import torch

F64 = torch.float64
U = 2.0 ** -53
TINY = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 2, "n_positions": 8, "vocab_size": 11,
        "layer_norm_epsilon": 0.05}
FORMS = ("gelu_new", "gelu")          # HF activation_function values: the tanh form and the exact (erf) form
T_TOKENS = 8


def tiny_state_dict(config: dict, seed: int) -> dict[str, torch.Tensor]:
    """A random GPT-2 state dict in HF's names (``transformer.`` prefix, Conv1D weights (in, out)); every bias
    and LN parameter drawn away from 0/1 so that a dropped or misplaced one shows."""
    g = torch.Generator().manual_seed(seed)
    d, m, V, n = config["n_embd"], 4 * config["n_embd"], config["vocab_size"], config["n_positions"]

    def r(*shape, s):
        return s * torch.randn(*shape, generator=g, dtype=F64, device="cpu")  # seeded on the host (a CPU generator): a tiny state dict saved to disk

    sd = {"transformer.wte.weight": r(V, d, s=1.0), "transformer.wpe.weight": r(n, d, s=0.5),
          "transformer.ln_f.weight": 1 + r(d, s=0.2), "transformer.ln_f.bias": r(d, s=0.2)}
    for ell in range(config["n_layer"]):
        p = f"transformer.h.{ell}."
        sd.update({p + "ln_1.weight": 1 + r(d, s=0.2), p + "ln_1.bias": r(d, s=0.2),
                   p + "attn.c_attn.weight": r(d, 3 * d, s=1 / math.sqrt(d)), p + "attn.c_attn.bias": r(3 * d, s=0.5),
                   p + "attn.c_proj.weight": r(d, d, s=1 / math.sqrt(d)), p + "attn.c_proj.bias": r(d, s=0.5),
                   p + "ln_2.weight": 1 + r(d, s=0.2), p + "ln_2.bias": r(d, s=0.2),
                   p + "mlp.c_fc.weight": r(d, m, s=1 / math.sqrt(d)), p + "mlp.c_fc.bias": r(m, s=0.5),
                   p + "mlp.c_proj.weight": r(m, d, s=1 / math.sqrt(m)), p + "mlp.c_proj.bias": r(d, s=0.5)})
    return sd


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps) * w + b


def _act(x, form):
    if form == "gelu_new":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gpt2_forward(sd: dict, config: dict, ids: torch.Tensor, *, eps: float | None = None, form: str | None = None,
                 fold_b_v: bool = True) -> list[torch.Tensor]:
    """GPT-2's hidden states [h_0, …, h_L, ln_f(h_L)] for token ids (T,), from HF's state dict ``sd``.

    h_0 = wte[ids] + wpe[0..T−1]; per block: a = LN₁(h); [q|k|v] = a W_attn + b_attn; per head
    softmax(q kᵀ/√d_k + causal mask) v; h += concat(heads) W_proj + b_proj; h += act(LN₂(h) W_fc + b_fc) W_mp + b_mp.
    ``eps``, ``form`` and ``fold_b_v=False`` (v without its bias b_V) exist for the control only."""
    eps = config["layer_norm_epsilon"] if eps is None else eps
    form = config.get("activation_function", "gelu_new") if form is None else form
    d, H = config["n_embd"], config["n_head"]
    dk, T = d // H, ids.shape[0]
    mask = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
    h = sd["transformer.wte.weight"][ids] + sd["transformer.wpe.weight"][:T]
    states = [h]
    for ell in range(config["n_layer"]):
        p = f"transformer.h.{ell}."
        a = _ln(h, sd[p + "ln_1.weight"], sd[p + "ln_1.bias"], eps)
        bias = sd[p + "attn.c_attn.bias"].clone()
        if not fold_b_v:
            bias[2 * d:] = 0.0
        q, k, v = (a @ sd[p + "attn.c_attn.weight"] + bias).split(d, dim=-1)
        q, k, v = (t.reshape(T, H, dk).transpose(0, 1) for t in (q, k, v))          # (H, T, d_k)
        scores = (q @ k.transpose(-1, -2) / math.sqrt(dk)).masked_fill(~mask, -math.inf)
        o = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(T, d)
        h = h + o @ sd[p + "attn.c_proj.weight"] + sd[p + "attn.c_proj.bias"]
        z = _ln(h, sd[p + "ln_2.weight"], sd[p + "ln_2.bias"], eps) @ sd[p + "mlp.c_fc.weight"] + sd[p + "mlp.c_fc.bias"]
        h = h + _act(z, form) @ sd[p + "mlp.c_proj.weight"] + sd[p + "mlp.c_proj.bias"]
        states.append(h)
    return states + [_ln(h, sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"], eps)]


def transformers_forward(sd: dict, config: dict, ids: torch.Tensor) -> list[torch.Tensor] | None:
    """The same hidden states from ``transformers.GPT2Model`` (None when transformers is not installed):
    its hidden_states are h_0..h_{L−1} and ln_f(h_L); h_L itself is not reported (None in its place)."""
    try:
        from transformers import GPT2Config, GPT2Model
    except ImportError:
        return None
    model = GPT2Model(GPT2Config(**config, bos_token_id=0, eos_token_id=0)).to(F64).eval()
    model.load_state_dict({k.removeprefix("transformer."): v for k, v in sd.items()}, strict=False)
    with torch.no_grad():
        hs = model(ids[None], output_hidden_states=True).hidden_states
    return [t[0] for t in hs[:-1]] + [None, hs[-1][0]]


def imported_states(folder: Path, ids: torch.Tensor) -> list[torch.Tensor]:
    """X_0..X_L and ln_f(X_L) through the import (``numerics.storage.hf_gpt2``), as ``fastslow import-hf`` builds them."""
    from numerics.storage import hf_gpt2 as hf
    config = hf.read_config(folder)
    tensors = hf.checked_tensors(hf.weights_file(folder), config)
    spec, stack = hf.build_stack(config, tensors, T=ids.shape[0])
    outside = hf.outside_tensors(tensors)
    with torch.no_grad():
        states = list(stack.trajectory(hf.embed(outside, ids)))
        return states + [hf.final_norm(outside, states[-1], stack.config.ln_eps)]


def relative_gap(a: list, b: list) -> float:
    return max(float(torch.linalg.norm(x - y) / torch.linalg.norm(y)) for x, y in zip(a, b) if x is not None
               and y is not None)


def mapping_check(seed: int = 0) -> dict:
    """The cross-check's record: status ``verified`` when every imported state matches the reference forward
    (and transformers', when installed) within 2n·u and each control mistake misses by more than 10³ × that."""
    T, L, d = T_TOKENS, TINY["n_layer"], TINY["n_embd"]
    n = L * (2 * T + 11 * d)
    tol = 2 * n * U
    rows, worst, separated = [], 0.0, True
    for i, form in enumerate(FORMS):
        config = dict(TINY, activation_function=form)
        sd = tiny_state_dict(config, seed + i)
        ids = torch.randint(config["vocab_size"], (T,), generator=torch.Generator().manual_seed(seed + 10 + i), device="cpu")  # seeded on the host (a CPU generator): token ids for the saved model
        with tempfile.TemporaryDirectory(prefix="fastslow-gpt2-mapping-") as folder:
            (Path(folder) / "config.json").write_text(json.dumps(config))
            torch.save(sd, Path(folder) / "pytorch_model.bin")
            got = imported_states(Path(folder), ids)
        routes = {"hand-written GPT-2 forward": gpt2_forward(sd, config, ids)}
        hf_states = transformers_forward(sd, config, ids)
        if hf_states is not None:
            routes["transformers.GPT2Model"] = hf_states
        for route, ref in routes.items():
            err = relative_gap(got, ref)
            worst = max(worst, err / tol)
            rows.append({"activation_function": form, "route": route, "max relative gap": err, "tol 2n·u": tol})
        other = FORMS[1 - i]
        for mistake, kw in (("ε at its 1e-5 default", {"eps": 1e-5}), (f"activation {other}", {"form": other}),
                            ("b_V not folded into b_O", {"fold_b_v": False})):
            gap = relative_gap(got, gpt2_forward(sd, config, ids, **kw))
            separated = separated and gap > 1e3 * tol
            rows.append({"activation_function": form, "route": f"control: {mistake}", "max relative gap": gap,
                         "tol 2n·u": tol})
    ok = worst <= 1.0 and separated
    controls = [r for r in rows if r["route"].startswith("control")]
    return {"name": "GPT-2 mapping (numerics.storage.hf_gpt2) against an independent GPT-2 forward",
            "status": "verified" if ok else "failed", "max_error": worst, "tolerance": 1.0, "table": rows,
            "detail": (f"tiny GPT-2 (d = {d}, {TINY['n_head']} heads, L = {L}, T = {T}, layer_norm_epsilon = "
                       f"{TINY['layer_norm_epsilon']}) for activation_function {', '.join(FORMS)}: max gap/(2n·u) = "
                       f"{worst:.2f} over {', '.join(sorted({r['route'] for r in rows if 'control' not in r['route']}))}; "
                       f"controls (one mapping mistake each) miss by {min(r['max relative gap'] for r in controls):.1e}"
                       f" ≥ 10³·tol = {1e3 * tol:.1e}: {separated}")}
