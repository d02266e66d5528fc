"""``fastslow import-hf``: local GPT-2 checkpoints as the stack of docs/theory.md §0 (numerics/storage/hf_gpt2.py).

Every model is built here (``GPT2LMHeadModel(GPT2Config(...))``, nothing downloaded) in float64 with
eager attention, and every parameter is redrawn, biases included (HF initialises them to zero,
which would hide a bias mapped to the wrong place).  The imported stack's trajectory must equal
HF's ``output_hidden_states`` layer by layer (HF's last entry has ln_f applied) to the float64
bound ``hidden_state_tolerance``: 2n·u, n = L(2T + (3 + 2·mlp_ratio)d) the summed dot-product
lengths each route rounds.  The controls break one step of the mapping and fail by the amount the
broken step predicts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from numerics.storage import checkpoint as ckpt  # noqa: E402
from numerics.storage import hf_gpt2  # noqa: E402
from proofs_check.cli import main  # noqa: E402
from proofs_check.runners.import_hf import import_hf  # noqa: E402

F64 = torch.float64
SIZES = dict(vocab_size=40, n_positions=12, n_embd=8, n_layer=3, n_head=2)


def tiny_gpt2(seed: int = 0, **overrides):
    """A random GPT-2 in float64, eager attention, every parameter redrawn (LN gains around 1)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(**{**SIZES, **overrides}, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = "eager"
    model = GPT2LMHeadModel(cfg).to(F64).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=F64)
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.copy_(1.0 + 0.2 * noise)
            elif p.dim() == 1:
                p.copy_(0.3 * noise)
            else:
                p.copy_(noise / math.sqrt(p.shape[0]))
    return model


def save_bin(model, folder: Path) -> Path:
    """The pytorch_model.bin format: config.json and a torch-pickled state dict."""
    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    torch.save(model.state_dict(), folder / hf_gpt2.PYTORCH)
    return folder


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(model, {"safetensors": folder, "pytorch": folder})."""
    root = tmp_path_factory.mktemp("gpt2")
    model = tiny_gpt2()
    model.save_pretrained(root / "st")
    assert (root / "st" / hf_gpt2.SAFETENSORS).is_file()
    return model, {"safetensors": root / "st", "pytorch": save_bin(model, root / "pt")}


def hf_states(model, tokens=None, embeds=None) -> torch.Tensor:
    with torch.no_grad():
        out = model(input_ids=None if tokens is None else tokens[None],
                    inputs_embeds=None if embeds is None else embeds[None], output_hidden_states=True)
    return torch.stack([h[0] for h in out.hidden_states])


def imported(folder: Path, T: int | None = None):
    config = hf_gpt2.read_config(folder)
    tensors = hf_gpt2.checked_tensors(hf_gpt2.weights_file(folder), config)
    _, stack = hf_gpt2.build_stack(config, tensors, T)
    return config, stack, hf_gpt2.outside_tensors(tensors)


def layer_errors(stack, outside, X0, hidden) -> list[float]:
    with torch.no_grad():
        traj = stack.trajectory(X0)
        ours = torch.cat([traj[:-1], hf_gpt2.final_norm(outside, traj[-1:], stack.config.ln_eps)])
    return [float((a - b).norm() / b.norm()) for a, b in zip(ours, hidden)]


def captured(model, tokens, modules: dict) -> dict:
    """Inputs and outputs of HF's own submodules during its forward pass at ``tokens`` (forward hooks)."""
    seen, hooks = {}, []
    for name, module in modules.items():
        def hook(mod, args, out, name=name):
            seen[name] = (args[0][0].detach(), (out[0] if isinstance(out, tuple) else out)[0].detach())
        hooks.append(module.register_forward_hook(hook))
    try:
        hf_states(model, tokens)
    finally:
        for h in hooks:
            h.remove()
    return seen


def tolerance(stack) -> float:
    c = stack.config
    return hf_gpt2.hidden_state_tolerance(c.T, c.d, c.layers, c.mlp_ratio)


# ---------------------------------------------------------------------------- the mapping
@pytest.mark.parametrize("fmt", ["safetensors", "pytorch"])
def test_hidden_states_match_hf_at_random_tokens(saved, fmt):
    model, folders = saved
    config, stack, outside = imported(folders[fmt])
    assert stack.config.h == 1.0 and stack.config.decay == 0.0 and stack.config.activation == "gelu_new"
    for seed in range(3):
        tokens = torch.randint(0, SIZES["vocab_size"], (SIZES["n_positions"],),
                               generator=torch.Generator().manual_seed(seed))
        errors = layer_errors(stack, outside, hf_gpt2.embed(outside, tokens), hf_states(model, tokens))
        # float64: both routes round the same dot products, at most n·u each: 2n·u (hidden_state_tolerance)
        assert max(errors) <= tolerance(stack), errors


def test_hidden_states_match_hf_at_the_homogeneous_reference(saved):
    """At X₀ = 1x̄ᵀ (fed to HF as inputs_embeds = 1x̄ᵀ − wpe) the trajectories agree layer by layer,
    stay token-homogeneous, and the stack's token map x̄_ℓ (b_O included) is HF's common row."""
    model, folders = saved
    _, stack, outside = imported(folders["safetensors"])
    T, d = SIZES["n_positions"], SIZES["n_embd"]
    xbar = torch.randn(d, generator=torch.Generator().manual_seed(5), dtype=F64)
    hidden = hf_states(model, embeds=xbar.expand(T, d) - outside["embedding.wpe"][:T])
    tol = tolerance(stack)
    assert float((hidden[0] - xbar).norm() / xbar.norm()) <= tol  # (x̄ − p) + p: one rounding per entry
    assert max(layer_errors(stack, outside, hidden[0], hidden)) <= tol
    with torch.no_grad():
        ref = stack.reference_trajectory(hidden[0, 0])
    for ell in range(1, SIZES["n_layer"]):  # HF's rows at layer ℓ < L are all x̄_ℓ (the last has ln_f)
        row_err = float((hidden[ell] - ref[ell]).norm() / hidden[ell].norm())
        assert row_err <= tol, (ell, row_err)


def test_control_exact_gelu_fails_by_the_activation_gap(saved):
    """The stack with the exact GELU instead of gelu_new: layer 1 differs from HF by exactly
    (GELU − gelu_new)(pre) W₂ with pre taken from HF's own block 0 (torch's two GELUs, no stack code)."""
    model, folders = saved
    config, _, outside = imported(folders["safetensors"])
    tensors = hf_gpt2.checked_tensors(hf_gpt2.weights_file(folders["safetensors"]), config)
    _, wrong = hf_gpt2.build_stack({**config, "activation_function": "gelu"}, tensors)
    tokens = torch.arange(SIZES["n_positions"]) % SIZES["vocab_size"]
    hidden = hf_states(model, tokens)
    errors = layer_errors(wrong, outside, hf_gpt2.embed(outside, tokens), hidden)
    block = model.transformer.h[0]
    pre = captured(model, tokens, {"c_fc": block.mlp.c_fc})["c_fc"][1]
    with torch.no_grad():
        gap = (torch.nn.functional.gelu(pre) - torch.nn.functional.gelu(pre, approximate="tanh")) @ block.mlp.c_proj.weight
    predicted = float(gap.norm() / hidden[1].norm())
    assert predicted > 1e3 * tolerance(wrong)                       # the gap is far above rounding
    # layer 1 differs by the gap alone (same U, same pre): the two norms agree to the routes' rounding
    assert abs(errors[1] - predicted) <= tolerance(wrong)


def test_key_bias_is_invisible_and_query_bias_is_not(saved):
    """b_K drops out exactly (HF's own forward does not move beyond rounding when b_K changes) while a
    change of b_Q of the same size moves the hidden states far above rounding: b_Q must be kept."""
    model, _ = saved
    tokens = torch.arange(SIZES["n_positions"]) % SIZES["vocab_size"]
    base = hf_states(model, tokens)
    d = SIZES["n_embd"]
    tol = hf_gpt2.hidden_state_tolerance(SIZES["n_positions"], d, SIZES["n_layer"], 4)
    moved = {}
    for name, part in (("b_K", slice(d, 2 * d)), ("b_Q", slice(0, d))):
        changed = tiny_gpt2()
        with torch.no_grad():
            for block in changed.transformer.h:
                block.attn.c_attn.bias[part] += 0.5
        moved[name] = max(float((a - b).norm() / b.norm()) for a, b in zip(hf_states(changed, tokens), base))
    assert moved["b_K"] <= tol, moved
    assert moved["b_Q"] > 1e6 * tol, moved


def test_value_bias_folds_into_the_output_bias(saved):
    """The stack's attention sublayer equals HF's block.attn on the same normalised tokens (b_V
    folded into b_O); the control without the fold (b_O = c_proj.bias) differs on every token by
    exactly b_V W_O, HF's own value bias through HF's own c_proj."""
    model, folders = saved
    _, stack, _ = imported(folders["safetensors"])
    d, T = SIZES["n_embd"], SIZES["n_positions"]
    block, layer = model.transformer.h[1], stack.layers[1]
    tokens = torch.arange(T) % SIZES["vocab_size"]
    z, theirs = captured(model, tokens, {"attn": block.attn})["attn"]
    with torch.no_grad():
        ours = layer.attn(z)
        shift = block.attn.c_attn.bias[2 * d:] @ block.attn.c_proj.weight
        unfolded = ours - layer.attn.b_O + block.attn.c_proj.bias
    scale = float(theirs.norm())
    # float64: one attention sublayer, dot products of length ≤ T + 3d, both routes: 2(T + 3d)·u
    tol = 2 * (T + 3 * d) * torch.finfo(F64).eps / 2
    assert float((ours - theirs).norm()) / scale <= tol
    assert float(shift.norm()) > 1e6 * tol * scale / math.sqrt(T)
    assert float((theirs - unfolded - shift).norm()) / scale <= tol   # the control misses exactly 1(b_V W_O)ᵀ


# ---------------------------------------------------------------------------- the command
def test_cli_imports_both_formats_and_check_stack_reads_them(saved, tmp_path, capsys):
    from proofs_check.runners.check import run_stack_checks

    _, folders = saved
    for fmt, folder in folders.items():
        out = tmp_path / fmt
        assert main(["import-hf", str(folder), "--out", str(out), "--T", "6"]) == 0
        manifest = ckpt.read_manifest(out)
        assert manifest["kind"] == "hf-gpt2" and manifest["spec"]["T"] == 6
        assert manifest["hf_agreement"]["holds"] and manifest["source"]["weights"] == (
            hf_gpt2.SAFETENSORS if fmt == "safetensors" else hf_gpt2.PYTORCH)
    ledger = run_stack_checks(str(tmp_path / "safetensors"), ["2.1", "2.4"], progress=False)
    # measured along held-out text: exact at 1x̄ᵀ only, so conditional with the number the text misses by
    assert [c["status"] for c in ledger["claims"]] == ["conditional", "conditional"], ledger["claims"]
    assert all(c["verdict"]["measured"]["form"] == "along held-out text" for c in ledger["claims"])


def _refused(args, capsys, *words):
    assert main(args) == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err, err
    return err


def _copy(folder: Path, dest: Path) -> Path:
    dest.mkdir()
    for f in folder.iterdir():
        (dest / f.name).write_bytes(f.read_bytes())
    return dest


@pytest.mark.parametrize("case", ["not-json", "llama", "inverse-layer-idx", "reorder", "cross-attention",
                                  "missing-field", "truncated", "foreign-bytes", "foreign-state", "wrong-shape",
                                  "non-finite", "no-weights", "fewer-layers", "untied-no-head", "stray-key",
                                  "tied-but-different"])
def test_bad_checkpoints_are_refused_with_exit_2_and_nothing_written(saved, tmp_path, capsys, case):
    _, folders = saved
    src = _copy(folders["safetensors"] if case != "foreign-state" else folders["pytorch"], tmp_path / "src")
    cfg_path, weights = src / hf_gpt2.CONFIG, src / hf_gpt2.SAFETENSORS
    config = json.loads(cfg_path.read_text())
    words = []
    if case == "not-json":
        cfg_path.write_text("{ not json")
        words = ["config.json", "corrupt"]
    elif case in ("llama", "inverse-layer-idx", "reorder", "cross-attention"):
        field, value = {"llama": ("model_type", "llama"), "inverse-layer-idx": ("scale_attn_by_inverse_layer_idx", True),
                        "reorder": ("reorder_and_upcast_attn", True),
                        "cross-attention": ("add_cross_attention", True)}[case]
        cfg_path.write_text(json.dumps({**config, field: value}))
        words = ["config.json", field]
    elif case == "missing-field":
        cfg_path.write_text(json.dumps({k: v for k, v in config.items() if k != "n_head"}))
        words = ["config.json", "n_head"]
    elif case == "truncated":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
        words = ["model.safetensors", "corrupt"]
    elif case == "foreign-bytes":
        weights.write_bytes(b"\x00" * 64 + b"not a tensor file")
        words = ["model.safetensors"]
    elif case == "foreign-state":
        torch.save({"model.layers.0.self_attn.q_proj.weight": torch.zeros(8, 8)}, src / hf_gpt2.PYTORCH)
        words = ["pytorch_model.bin", "wte.weight"]
    elif case == "wrong-shape":
        cfg_path.write_text(json.dumps({**config, "n_inner": 16}))  # the file's MLP is 4·8 = 32 wide
        words = ["model.safetensors", "h.0.mlp.c_fc.weight", "shape"]
    elif case == "non-finite":
        from safetensors.torch import load_file, save_file

        state = load_file(str(weights))
        state["transformer.h.1.ln_2.bias"][0] = float("nan")
        save_file(state, str(weights))
        words = ["model.safetensors", "h.1.ln_2.bias", "non-finite"]
    elif case == "no-weights":
        weights.unlink()
        words = ["model.safetensors", "pytorch_model.bin"]
    elif case == "fewer-layers":  # the import read h.0, h.1 and silently dropped h.2
        cfg_path.write_text(json.dumps({**config, "n_layer": 2}))
        words = ["model.safetensors", "h.2.", "n_layer = 2"]
    elif case == "untied-no-head":  # the readout silently became wte
        cfg_path.write_text(json.dumps({**config, "tie_word_embeddings": False}))
        words = ["model.safetensors", "lm_head.weight", "tie_word_embeddings"]
    elif case in ("stray-key", "tied-but-different"):
        from safetensors.torch import load_file, save_file

        state = load_file(str(weights))
        if case == "stray-key":
            state["transformer.h.0.attn.rotary.weight"] = torch.zeros(2)
            words = ["model.safetensors", "h.0.attn.rotary.weight", "not a GPT-2 weight"]
        else:
            state["lm_head.weight"] = state["transformer.wte.weight"] + 1.0
            words = ["model.safetensors", "lm_head.weight", "differs from wte"]
        save_file(state, str(weights))
    out = tmp_path / "out"
    _refused(["import-hf", str(src), "--out", str(out)], capsys, *words)
    assert not out.exists()


def test_out_folder_of_another_run_is_refused_and_left_alone(saved, tmp_path, capsys):
    _, folders = saved
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    _refused(["import-hf", str(folders["safetensors"]), "--out", str(out)], capsys, "--out", "did not write")
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_T_beyond_the_context_is_refused(saved, tmp_path, capsys):
    _, folders = saved
    _refused(["import-hf", str(folders["safetensors"]), "--out", str(tmp_path / "o"), "--T", "13"], capsys,
             "--T", "n_positions = 12")
    assert not (tmp_path / "o").exists()


def test_generated_gelu_new_and_its_derivative_are_torchs_tanh_gelu():
    """numerics.generated's gelu_tanh and gelu_tanh_prime (derived in theory/factorisation.py) against
    torch's F.gelu(approximate="tanh") and its autograd derivative; the exact GELU, the control,
    differs from it by the known gap max|GELU − gelu_new| ≈ 4.7e-4 (at |y| ≈ 2)."""
    from numerics.generated import factorisation as gen

    y = torch.linspace(-8, 8, 4001, dtype=F64, requires_grad=True)
    ref = torch.nn.functional.gelu(y, approximate="tanh")
    (slope,) = torch.autograd.grad(ref.sum(), y)
    y = y.detach()
    eps = torch.finfo(F64).eps
    # a dozen float64 operations on values ≤ |y|³·0.045: each route rounds to ≤ 16 eps (1 + |y|)
    assert ((gen.gelu_tanh(y) - ref.detach()).abs() <= 16 * eps * (1 + y.abs())).all()
    assert ((gen.gelu_tanh_prime(y) - slope).abs() <= 16 * eps * (1 + y.abs() ** 3)).all()
    gap = float((torch.nn.functional.gelu(y) - ref.detach()).abs().max())
    assert 4.6e-4 < gap < 4.8e-4, gap


def test_a_second_import_into_a_folder_being_written_is_refused(saved, tmp_path, capsys):
    """import-hf locks its --out: while another process holds the folder, the import exits 2 and
    writes nothing (two imports into one folder both succeeded before)."""
    import subprocess
    import sys

    _, folders = saved
    out = tmp_path / "out"
    code = ("import sys, time; from numerics.storage import checkpoint\n"
            "with checkpoint.claim(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        _refused(["import-hf", str(folders["safetensors"]), "--out", str(out), "--no-verify"], capsys,
                 "--out", "another fastslow process")
        assert not (out / "manifest.json").exists()
    finally:
        proc.kill()
        proc.wait()
