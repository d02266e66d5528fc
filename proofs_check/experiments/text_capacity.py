"""Claim 7.3 on text, the capacity control: coupled vs capacity-matched, paired by seed.

The pre-registration is docs/trained/text-7.3-capacity.md (committed before the runs); the arms
are ``proofs_check.experiments.text_arms``.  Each seed trains the ``coupled`` and the
``capacity`` arm from the same weights on the same batches (the recorded experiment's
configuration, ``text_experiment.TEXT_73``); the ``frozen`` arm's losses are the recorded run's
(docs/trained/text-7.3.json), usable in the pairing only where this run's coupled arm reproduces
that record's coupled arm bit for bit.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from proofs_check.experiments.text_experiment import MODULES, RECORDED, TEXT_73

RUN_ARMS = ("coupled", "capacity")
SEEDS = (3, 4, 5, 6, 7)
#: The committed record of the capacity control and its pre-registration.
CAPACITY_RECORD = RECORDED.with_name("text-7.3-capacity.json")
PREREGISTRATION = "docs/trained/text-7.3-capacity.md"
KEY_MODULES = MODULES + ("proofs_check.experiments.text_arms",)


def capacity_key(cfg, seeds) -> str:
    from numerics.text.training import source_key

    return source_key(KEY_MODULES, {"config": cfg.as_dict(), "seeds": list(seeds), "arms": list(RUN_ARMS)})


def _job(args) -> dict:
    cfg, arm, out = args
    from proofs_check.experiments.text_arms import train_arm

    return train_arm(cfg, arm, out, threads=1)


def run(cache_dir: str | Path, cfg=TEXT_73, seeds=SEEDS, *, workers: int = 1, partial: str | Path | None = None) -> dict:
    """Train both arms for every seed (resuming from ``cache_dir/text_7_3_capacity/<key>/``);
    after each finished run, write the runs so far to ``partial`` (JSON) when given."""
    import torch

    seeds = tuple(seeds)
    key = capacity_key(cfg, seeds)
    folder = Path(cache_dir) / "text_7_3_capacity" / key
    # coupled on the first seed (the reproducibility check), then every capacity run, then the other coupled runs
    order = [(seeds[0], "coupled")] + [(s, "capacity") for s in seeds] + [(s, "coupled") for s in seeds[1:]]
    jobs = []
    for seed, arm in order:
        run_cfg = replace(cfg, arch="hierarchical", seed=seed, freeze_gates=False)
        jobs.append((run_cfg, arm, folder / f"{arm}-{run_cfg.label()}"))
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    runs = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for future in as_completed([pool.submit(_job, job) for job in jobs]):
            runs.append(future.result())
            print(f"done: seed {runs[-1]['seed']} {runs[-1]['arm']} validation {runs[-1]['final_eval_loss']:.4f}",
                  file=sys.stderr, flush=True)
            if partial is not None:
                Path(partial).write_text(json.dumps({"source_key": key, "started": started, "runs": runs}))
    runs.sort(key=lambda r: (r["seed"], RUN_ARMS.index(r["arm"])))
    return {"config": cfg.as_dict(), "seeds": list(seeds), "arms": list(RUN_ARMS), "runs": runs,
            "source_key": key, "started": started, "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__}


if __name__ == "__main__":   # python -m proofs_check.experiments.text_capacity OUT.json CACHE [seeds...]
    out, cache = sys.argv[1], sys.argv[2]
    seeds = tuple(int(s) for s in sys.argv[3:]) or SEEDS
    result = run(cache, seeds=seeds, workers=2, partial=out + ".partial")
    Path(out).write_text(json.dumps(result))
