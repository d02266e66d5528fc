"""Train a small GPT-2 with ``transformers`` itself on the shipped byte corpus.

The model is ``GPT2LMHeadModel(GPT2Config(vocab_size=256, ...))``: GPT-2's own code (pre-LN
blocks with h = 1, ``gelu_new``, Conv1D projections with biases, tied head), trained here so
that ``fastslow import-hf`` and ``fastslow check --stack`` run on a GPT-2 whose weights were
learnt from text, not drawn.  The corpus is ``numerics.text.corpus.ByteCorpus`` (CPython's
reference-manual pages as bytes, the last 10 % held out); the validation loss is in nats per
byte, to be read against the unigram entropy of the training bytes (what a model that ignores
context achieves).

Usage (one core, about five minutes)::

    nice -n 10 python -m benchmarks.hf_gpt2_train --out docs/trained/gpt2-bytes \\
        --json docs/trained/gpt2-bytes-train.json

Writes the model with ``save_pretrained`` (config.json + model.safetensors) and a JSON record
of the config, the loss curve, the validation loss against the unigram entropy and the time.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class HFTrainConfig:
    n_embd: int = 64
    n_layer: int = 4
    n_head: int = 4
    T: int = 64
    batch: int = 32
    steps: int = 1500
    lr: float = 3e-3
    warmup: int = 75
    weight_decay: float = 0.01
    clip: float = 1.0
    eval_every: int = 250
    eval_windows: int = 256
    seed: int = 0
    threads: int = 1


def gpt2_config(cfg: HFTrainConfig):
    from transformers import GPT2Config

    return GPT2Config(vocab_size=256, n_positions=cfg.T, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
                      n_head=cfg.n_head, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                      bos_token_id=0, eos_token_id=0)


def validation_loss(model, windows, batch: int = 64) -> float:
    """Mean next-byte cross-entropy (nats/byte) over the validation windows."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, windows.shape[0], batch):
            chunk = windows[i:i + batch]
            logits = model(chunk).logits[:, :-1]
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                     chunk[:, 1:].reshape(-1), reduction="sum")
            total += float(loss)
            count += chunk[:, 1:].numel()
    return total / count


def train(cfg: HFTrainConfig, out: Path, progress: bool = True) -> dict:
    import torch
    import transformers
    from transformers import GPT2LMHeadModel

    from numerics.text.corpus import ByteCorpus, unigram_entropy
    from proofs_check.experiments.train import git_hash

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    corpus = ByteCorpus.load()
    model = GPT2LMHeadModel(gpt2_config(cfg)).float()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    def factor(step):
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        return 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    val = corpus.validation_windows(cfg.T, cfg.eval_windows).long()
    curve = {"step": [], "train_loss": [], "eval_step": [], "eval_loss": []}
    start = time.perf_counter()
    model.train()
    for step in range(cfg.steps):
        tokens = corpus.windows("train", cfg.batch, cfg.T, cfg.seed * 1_000_003 + step).long()
        loss = model(tokens, labels=tokens).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        sched.step()
        curve["step"].append(step + 1)
        curve["train_loss"].append(loss.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            model.eval()
            curve["eval_step"].append(step + 1)
            curve["eval_loss"].append(validation_loss(model, val))
            model.train()
            if progress:
                print(f"step {step + 1}/{cfg.steps}: train {float(loss):.3f}, validation "
                      f"{curve['eval_loss'][-1]:.3f} nats/byte, {time.perf_counter() - start:.0f} s",
                      file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    entropy = unigram_entropy(corpus.train.to(torch.uint8).numpy().tobytes())
    n_params = sum(p.numel() for p in model.parameters())
    return {"config": asdict(cfg), "gpt2_config": gpt2_config(cfg).to_dict(), "parameters": n_params,
            "tokens": cfg.steps * cfg.batch * cfg.T, "seconds": seconds,
            "tokens_per_second": cfg.steps * cfg.batch * cfg.T / seconds,
            "final_validation_loss": curve["eval_loss"][-1], "unigram_entropy_train": entropy,
            "corpus_sha256": corpus.sha256, "curve": curve, "checkpoint": str(out),
            "transformers": transformers.__version__, "torch": torch.__version__, "git": git_hash(),
            "machine": "2-core shared VM, training on one thread under nice -n 10"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for save_pretrained")
    parser.add_argument("--json", required=True, help="the run's record")
    parser.add_argument("--steps", type=int, default=HFTrainConfig.steps)
    args = parser.parse_args(argv)
    from numerics.storage.io import write_json

    record = train(HFTrainConfig(steps=args.steps), Path(args.out))
    write_json(args.json, record)
    print(json.dumps({k: record[k] for k in ("final_validation_loss", "unigram_entropy_train", "seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
