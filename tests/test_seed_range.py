"""Every way a seed enters takes the same range, 0 ≤ N < 2**63 − 1 (SEED_MAX): a stack's spec, ``--seed``, a check's
context, a sweep's first seed and a training run.  ``simulate`` also draws with seed + 1, which must stay a signed
64-bit integer, so SEED_MAX itself is refused everywhere."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from numerics.stacks.params import SEED_MAX
from numerics.stacks.spec import StackSpec
from proofs_check.experiments.train import TextConfig
from proofs_check.sweep.spec import _SweepKeys
from proofs_check.validation import seed_value
from proofs_check.verdicts.evidence import CheckContext

ENTRIES = {
    "StackSpec": lambda s: StackSpec(T=4, d=4, layers=1, heads=1, seed=s),
    "--seed": lambda s: seed_value(str(s)),
    "CheckContext": lambda s: CheckContext(seed=s),
    "sweep first_seed": lambda s: _SweepKeys(claim="3.2", first_seed=s),
    "fastslow train": lambda s: TextConfig(seed=s),
}
REFUSED = (ValueError, ValidationError, argparse.ArgumentTypeError)


def test_seed_max_is_signed_64_bit():
    assert SEED_MAX == 2**63 - 1


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_the_last_seed_is_accepted_and_seed_max_refused(entry):
    ENTRIES[entry](SEED_MAX - 1)
    ENTRIES[entry](0)
    for bad in (SEED_MAX, -1):
        with pytest.raises(REFUSED):
            ENTRIES[entry](bad)
