"""A Hugging Face GPT-2 checkpoint as the untied pre-LN stack of docs/theory.md §0.

GPT-2's block is the stack's layer with h = 1, no damping, ``gelu_new`` and attention biases
(``numerics.stacks.stack``: ``step``, ``activation``, ``ln_eps``, ``attn_bias``).  The weight mapping,
for layer ℓ of ``transformer.h.ℓ`` (HF's Conv1D computes x W + b with W of shape (in, out)):

- ``ln_1``/``ln_2`` weight, bias → LN₁/LN₂ γ, β, with the config's ``layer_norm_epsilon``;
- ``attn.c_attn`` (d, 3d) = [W_Q | W_K | W_V], each (d, d) split into heads of d_k = d/H
  consecutive columns: W_Q[h] = W[:, h d_k:(h+1) d_k], W_K[h] = W[:, d + …], W_V[h] = W[:, 2d + …];
  its bias [b_Q | b_K | b_V]: b_Q is kept (per head), b_K is dropped exactly (it adds q_i·b_K to
  every score of query row i, and softmax ignores a per-row constant), b_V is folded into the
  output bias (softmax rows sum to 1, so A(V + 1b_Vᵀ)W_O = AVW_O + 1(b_Vᵀ W_O));
- ``attn.c_proj`` (d, d): W_O[h] = W[h d_k:(h+1) d_k, :], b_O = c_proj.bias + b_V W (b_V (d,) all heads);
- ``mlp.c_fc``, ``mlp.c_proj`` → W1, b1, W2, b2.

``wte`` + ``wpe`` give X₀ (:func:`embed`) and ``ln_f`` + the tied head the readout (:func:`readout`):
both stay outside the stack.  The proofs of the b_K and b_V steps are
``theory.factorisation_proofs.prove_attention_biases``.

Refused, with the reason (:class:`HFImportError`, a ValueError): another ``model_type`` (GPT-NeoX,
Llama, …: rotary positions make attention at 1x̄ᵀ non-uniform, RMSNorm, SwiGLU and the parallel
residual are not this stack), ``scale_attn_by_inverse_layer_idx``, ``reorder_and_upcast_attn``,
``add_cross_attention``, ``scale_attn_weights = false``, activations other than GELU's two forms,
and any file that is missing, corrupt, truncated, of another model or of the wrong shape: the
message names the file and the field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import torch

CONFIG = "config.json"
SAFETENSORS = "model.safetensors"
PYTORCH = "pytorch_model.bin"
#: HF activation_function -> StackConfig.activation (``gelu_pytorch_tanh`` is gelu_new's formula).
ACTIVATIONS = {"gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new", "gelu": "gelu"}
#: GPT-2 options this import cannot represent, with the value it needs and why.
REFUSED_OPTIONS = {
    "scale_attn_by_inverse_layer_idx": (False, "scores scaled by 1/(ℓ+1) per layer are not the stack's attention"),
    "reorder_and_upcast_attn": (False, "the reordered, upcast attention is a different rounding of the scores"),
    "add_cross_attention": (False, "cross-attention reads an encoder's states: the stack has none"),
    "scale_attn_weights": (True, "unscaled scores (no 1/√d_k) are not the stack's attention"),
}
#: other families: why their claims do not transfer to this stack.
OTHER_FAMILIES = {
    "gpt_neox": "rotary positions make attention at 1x̄ᵀ non-uniform, and its parallel residual is not the stack's",
    "llama": "rotary positions make attention at 1x̄ᵀ non-uniform; RMSNorm and SwiGLU are not the stack's LN and MLP",
    "mistral": "rotary positions, RMSNorm and SwiGLU (as Llama)",
    "gptj": "rotary positions and a parallel residual",
    "gpt_neo": "local attention layers and unscaled scores",
}
#: parameters that are not weights: the causal mask buffers older checkpoints carry.
MASK_BUFFERS = (".attn.bias", ".attn.masked_bias")


class HFImportError(ValueError):
    """A checkpoint folder that cannot be imported; the message names the file and the field."""


# ---------------------------------------------------------------------------- the config
def read_config(folder: str | Path) -> dict:
    """The folder's config.json, checked: GPT-2, no refused option, integer sizes that fit."""
    path = Path(folder) / CONFIG
    if not path.is_file():
        raise HFImportError(f"{path}: no such file (a Hugging Face checkpoint folder holds config.json)")
    from numerics.storage.io import read_input

    try:
        config = json.loads(read_input(path, "config.json", max_bytes=2**20).decode("utf-8"))
    except (OSError, ValueError) as exc:  # unreadable, not a regular file, too large, not UTF-8, not JSON
        raise HFImportError(f"{path} is corrupt ({type(exc).__name__}: {exc})") from exc
    if not isinstance(config, dict):
        raise HFImportError(f"{path} is corrupt: not a JSON object")
    kind = config.get("model_type")
    if kind != "gpt2":
        why = OTHER_FAMILIES.get(kind, "only GPT-2 (model_type 'gpt2') maps onto the stack")
        raise HFImportError(f"{path}: field 'model_type' is {kind!r}, not 'gpt2': {why}")
    for name in ("n_embd", "n_layer", "n_head", "n_positions", "vocab_size"):
        value = config.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HFImportError(f"{path}: field {name!r} = {value!r} must be a positive integer")
    if config["n_embd"] % config["n_head"]:
        raise HFImportError(f"{path}: field 'n_head' = {config['n_head']} does not divide n_embd = {config['n_embd']}")
    inner = config.get("n_inner")
    if inner is not None and (isinstance(inner, bool) or not isinstance(inner, int) or inner < 1
                              or inner % config["n_embd"]):
        raise HFImportError(f"{path}: field 'n_inner' = {inner!r} must be a positive multiple of n_embd = "
                            f"{config['n_embd']} (the stack's MLP width is mlp_ratio·d)")
    eps = config.get("layer_norm_epsilon", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (math.isfinite(eps) and eps > 0):
        raise HFImportError(f"{path}: field 'layer_norm_epsilon' = {eps!r} must be a positive number")
    act = config.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        raise HFImportError(f"{path}: field 'activation_function' = {act!r} is not one of {', '.join(ACTIVATIONS)} "
                            "(the factorisation needs the activation's derivative, derived for GELU's two forms)")
    for name, (needed, why) in REFUSED_OPTIONS.items():
        if bool(config.get(name, needed)) != needed:
            raise HFImportError(f"{path}: field {name!r} = {config.get(name)!r} is not supported: {why}")
    return config


def stack_knobs(config: dict) -> dict:
    """The StackSpec knobs of GPT-2's block for this config."""
    d = config["n_embd"]
    return {"mlp_ratio": (config.get("n_inner") or 4 * d) // d, "step": 1.0,
            "activation": ACTIVATIONS[config.get("activation_function", "gelu_new")],
            "ln_eps": float(config.get("layer_norm_epsilon", 1e-5)), "attn_bias": True}


def stack_spec(config: dict, T: int | None = None):
    """The StackSpec of the imported stack: causal, GPT-2's block, T tokens (default n_positions)."""
    from numerics.stacks.spec import StackSpec

    T = config["n_positions"] if T is None else T
    if isinstance(T, bool) or not isinstance(T, int) or not 2 <= T <= config["n_positions"]:
        raise HFImportError(f"--T={T!r} must be an integer in [2, n_positions = {config['n_positions']}]")
    return StackSpec(T=T, d=config["n_embd"], layers=config["n_layer"], heads=config["n_head"], kernel="causal",
                     knobs=stack_knobs(config))


# ---------------------------------------------------------------------------- the tensors
def weights_file(folder: str | Path) -> Path:
    """model.safetensors if present, else pytorch_model.bin; sharded checkpoints are refused."""
    folder = Path(folder)
    for name in (SAFETENSORS, PYTORCH):
        if (folder / name).is_file():
            return folder / name
    if any(folder.glob("*.index.json")):
        raise HFImportError(f"{folder}: a sharded checkpoint (*.index.json) is not supported; save it with "
                            "save_pretrained(..., max_shard_size='100GB') as one file")
    raise HFImportError(f"{folder}: neither {SAFETENSORS} nor {PYTORCH} is there")


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """The state dict in ``path`` (safetensors, or a torch pickle loaded with weights_only=True)."""
    try:
        if path.name.endswith(".safetensors"):
            from safetensors.torch import load_file

            state = load_file(str(path), device="cpu")
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except ImportError:
        raise
    except Exception as exc:  # safetensors and torch raise many types for a foreign or truncated file
        raise HFImportError(f"{path} is corrupt or not a tensor file ({type(exc).__name__}: "
                            f"{' '.join(str(exc).split())[:200]})") from exc
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise HFImportError(f"{path} is not a state dict of tensors")
    return {k.removeprefix("transformer."): v for k, v in state.items()}


def expected_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """Every GPT-2 weight the import reads, with its shape (names without the ``transformer.`` prefix)."""
    d, V, n_pos = config["n_embd"], config["vocab_size"], config["n_positions"]
    m = config.get("n_inner") or 4 * d
    shapes = {"wte.weight": (V, d), "wpe.weight": (n_pos, d), "ln_f.weight": (d,), "ln_f.bias": (d,)}
    for ell in range(config["n_layer"]):
        p = f"h.{ell}."
        shapes.update({p + "ln_1.weight": (d,), p + "ln_1.bias": (d,), p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
                       p + "attn.c_attn.weight": (d, 3 * d), p + "attn.c_attn.bias": (3 * d,),
                       p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
                       p + "mlp.c_fc.weight": (d, m), p + "mlp.c_fc.bias": (m,),
                       p + "mlp.c_proj.weight": (m, d), p + "mlp.c_proj.bias": (d,)})
    return shapes


def checked_tensors(path: Path, config: dict) -> dict[str, torch.Tensor]:
    """The tensors of ``path`` as float64, every expected field present, of its shape, finite, and no
    other (a config with fewer layers than the file, or a stray key, is refused); an untied config
    needs its ``lm_head.weight`` and keeps it, a tied one must not carry a different one."""
    state = read_tensors(path)
    out = {}
    for name, shape in expected_shapes(config).items():
        if name not in state:
            raise HFImportError(f"{path}: field {name!r} is missing (not a GPT-2 checkpoint of this config.json)")
        t = state[name]
        if tuple(t.shape) != shape:
            raise HFImportError(f"{path}: field {name!r} has shape {tuple(t.shape)}, config.json implies {shape}")
        if not t.is_floating_point():
            raise HFImportError(f"{path}: field {name!r} has dtype {t.dtype}, not a floating type")
        t = t.to(torch.float64)
        if not torch.isfinite(t).all():
            raise HFImportError(f"{path}: field {name!r} has non-finite entries (NaN or inf)")
        out[name] = t
    extra = sorted(k for k in state if k not in out and k != "lm_head.weight" and not _BUFFER.match(k))
    if extra:
        layer = _LAYER.match(extra[0])
        why = (f"config.json's n_layer = {config['n_layer']} but the file holds layer {layer.group(1)}"
               if layer and int(layer.group(1)) >= config["n_layer"] else "not a GPT-2 weight of this config.json")
        raise HFImportError(f"{path}: field {extra[0]!r} ({len(extra)} unexpected in all): {why}; the config must "
                            "describe the weight file exactly")
    head = state.get("lm_head.weight")
    tied = config.get("tie_word_embeddings", True)
    if not tied and head is None:
        raise HFImportError(f"{path}: field 'lm_head.weight' is missing, but config.json sets tie_word_embeddings "
                            "= false (an untied head); the readout would silently be wte")
    if head is not None and tuple(head.shape) != out["wte.weight"].shape:
        raise HFImportError(f"{path}: field 'lm_head.weight' has shape {tuple(head.shape)}; expected "
                            f"{tuple(out['wte.weight'].shape)}")
    if head is not None and tied and not torch.equal(head.to(torch.float64), out["wte.weight"]):
        raise HFImportError(f"{path}: field 'lm_head.weight' differs from wte, but config.json ties them "
                            "(tie_word_embeddings); set it to false for an untied head")
    if head is not None and not tied:
        if not torch.isfinite(head).all():
            raise HFImportError(f"{path}: field 'lm_head.weight' has non-finite entries (NaN or inf)")
        out["lm_head.weight"] = head.to(torch.float64)
    return out


#: buffers older transformers versions save beside the weights (the causal mask), not weights
_BUFFER = re.compile(r"^h\.[0-9]+\.attn\.(masked_)?bias$")
_LAYER = re.compile(r"^h\.([0-9]+)\.")


# ---------------------------------------------------------------------------- the mapping
def layer_weights(tensors: dict[str, torch.Tensor], ell: int, heads: int) -> dict[str, torch.Tensor]:
    """Layer ℓ's stack parameters (``Layer.named_parameters`` names) from GPT-2's tensors."""
    p = f"h.{ell}."
    W, b = tensors[p + "attn.c_attn.weight"], tensors[p + "attn.c_attn.bias"]
    d = W.shape[0]
    dk = d // heads

    def per_head(block):  # (d, d) columns -> (heads, d, d_k)
        return block.reshape(d, heads, dk).permute(1, 0, 2).contiguous()

    Wp, bp = tensors[p + "attn.c_proj.weight"], tensors[p + "attn.c_proj.bias"]
    b_V = b[2 * d:]
    return {
        "ln1.gamma": tensors[p + "ln_1.weight"], "ln1.beta": tensors[p + "ln_1.bias"],
        "attn.W_Q": per_head(W[:, :d]), "attn.W_K": per_head(W[:, d:2 * d]), "attn.W_V": per_head(W[:, 2 * d:]),
        "attn.W_O": Wp.reshape(heads, dk, d).contiguous(),
        "attn.b_Q": b[:d].reshape(heads, 1, dk).contiguous(),  # b_K = b[d:2d] drops out of the softmax
        "attn.b_O": bp + b_V @ Wp,                               # b_V through W_O, since A1 = 1
        "ln2.gamma": tensors[p + "ln_2.weight"], "ln2.beta": tensors[p + "ln_2.bias"],
        "mlp.W1": tensors[p + "mlp.c_fc.weight"], "mlp.b1": tensors[p + "mlp.c_fc.bias"],
        "mlp.W2": tensors[p + "mlp.c_proj.weight"], "mlp.b2": tensors[p + "mlp.c_proj.bias"],
    }


def build_stack(config: dict, tensors: dict[str, torch.Tensor], T: int | None = None):
    """(spec, float64 stack) with GPT-2's weights in place of the random draw."""
    spec = stack_spec(config, T)
    stack = spec.build()
    with torch.no_grad():
        for ell, layer in enumerate(stack.layers):
            values = layer_weights(tensors, ell, config["n_head"])
            for name, param in layer.named_parameters():
                param.copy_(values[name])
    stack.check_finite()
    return spec, stack


def outside_tensors(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The embedding and the readout, kept outside the stack: wte, wpe, ln_f and the head."""
    out = {"embedding.wte": tensors["wte.weight"], "embedding.wpe": tensors["wpe.weight"],
           "readout.ln_f.gamma": tensors["ln_f.weight"], "readout.ln_f.beta": tensors["ln_f.bias"]}
    out["readout.head"] = tensors.get("lm_head.weight", tensors["wte.weight"])
    return out


def embed(outside: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """X₀ = wte[tokens] + wpe[0..T−1], (..., T, d)."""
    T = tokens.shape[-1]
    return outside["embedding.wte"][tokens] + outside["embedding.wpe"][:T]


def readout(outside: dict[str, torch.Tensor], X: torch.Tensor, ln_eps: float) -> torch.Tensor:
    """Logits ln_f(X_L) Wᵀ with W the (tied) head, (..., T, vocab)."""
    from numerics.stacks.stack import layer_norm

    z = layer_norm(X, outside["readout.ln_f.gamma"], outside["readout.ln_f.beta"], ln_eps)
    return z @ outside["readout.head"].T


def final_norm(outside: dict[str, torch.Tensor], X: torch.Tensor, ln_eps: float) -> torch.Tensor:
    """ln_f(X): what HF reports as the last hidden state."""
    from numerics.stacks.stack import layer_norm

    return layer_norm(X, outside["readout.ln_f.gamma"], outside["readout.ln_f.beta"], ln_eps)


def hidden_state_tolerance(T: int, d: int, layers: int, mlp_ratio: int) -> float:
    """Relative float64 bound for the stack's X_ℓ against HF's hidden state ℓ, per layer ℓ ≤ L:
    both routes round each layer's dot products (summed inner length n = L(2T + (3 + 2·mlp_ratio)d),
    ``numerics.linearised.matrix_free.dot_product_length``), each to at most n·u, so they differ by ≤ 2n·u."""
    from numerics.linearised.matrix_free import dot_product_length, unit_roundoff

    return 2 * dot_product_length(T, d, layers, mlp_ratio) * unit_roundoff(torch.float64)
