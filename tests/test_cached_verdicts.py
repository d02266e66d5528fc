"""A cached intermediate passes the same ledger gates as a fresh one: a verdict does not depend on
whether the run found a cache.

Claim 7.3's check reads its trained runs from a cache folder (``numerics.text.training.run_experiment``).
The ledger refuses a claim whose check never calls a generated function it declares
(``proofs_check.runners.exercised``); a cached result used to skip the Bayes computation, the only
caller of ``topic_transition``, so the second ``check --claim 7.3`` in one folder was *failed*.  The
Bayes losses are now recomputed on every call and only the training curves come from the cache.
"""

from __future__ import annotations

import re
from pathlib import Path

from proofs_check.runners.exercised import count_calls

ROOT = Path(__file__).resolve().parents[1]
TOPIC = "numerics.generated.emissions.topic_transition"


def test_every_claim_reading_a_cache_is_covered_here():
    """The claims whose checks read the cache folder (``cache_dir_for``): each must have its rerun test
    in this file.  A new one fails this test until it gets one."""
    readers = set()
    for path in (ROOT / "proofs_check" / "claims").rglob("*.py"):
        text = path.read_text()
        for match in re.finditer(r'@claim\("([0-9.]+)"', text):
            body = text[match.end():].split("\n@claim(", 1)[0]
            if "cache_dir_for" in body:
                readers.add(match.group(1))
    assert readers == {"7.3"}


def test_7_3_rerun_on_its_cache_calls_the_generated_code_and_gives_the_same_summary(tmp_path):
    from numerics.text.training import run_experiment

    runs = []
    for _ in range(2):
        with count_calls([TOPIC]) as counts:
            result = run_experiment(smoke=True, cache_dir=tmp_path)
        runs.append((counts[TOPIC], result))
    (fresh_calls, fresh), (cached_calls, cached) = runs
    assert list((tmp_path / "emissions_training").glob("*/result.json")), "the first run wrote no cache"
    assert fresh_calls > 0 and cached_calls > 0  # the cached run calls the generated code too
    assert cached["summary"] == fresh["summary"]
    assert cached["settings"]["iid"]["bayes"] == fresh["settings"]["iid"]["bayes"]
