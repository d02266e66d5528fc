"""Hypothesis profiles: ``ci`` (default; bounded, derandomised), ``random`` and ``thorough``.

Choose with ``HYPOTHESIS_PROFILE=random`` (or ``thorough``).  ``ci`` is derandomised, so a
failure reproduces exactly and CI sees the same examples every run (the strategies in
``tests/strategies.py`` still reach T, d = 32).  ``random`` draws new examples every run,
keeps the ``.hypothesis`` example database (a failure found once is replayed first next time)
and prints the seed of a failing run (``--hypothesis-seed=N`` replays it); ``thorough`` is
``random`` with 200 examples per property, meant for a GPU machine.
"""

import os
import sys

import torch
from hypothesis import HealthCheck, Phase, settings

# No explain phase: it traces every line a failing case runs while shrinking (to report which lines
# it covered); under xdist, after other tests, a traced shrink of a stack evaluation ran for minutes.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)
settings.register_profile("ci", max_examples=10, deadline=None, derandomize=True, print_blob=True, database=None,
                          phases=PHASES, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("random", max_examples=25, deadline=None, derandomize=False, print_blob=True,
                          phases=PHASES, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=200, deadline=None, derandomize=False, print_blob=True,
                          phases=PHASES, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The test files import their shared helpers by name (``from strategies import ...``): this folder is put on
# sys.path here, so they import the same way under any --import-mode, in the repository, in mutmut's
# mutants/ copy and in a scratch copy of the tests (proofs_check.mutation.mutmut_code copies every helper).
_TESTS = os.path.dirname(os.path.abspath(__file__))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# Under pytest-xdist each worker gets one thread, so `-n 2` uses the two cores without oversubscribing.
torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else min(2, torch.get_num_threads()))

# `fastslow mutate` runs the family's tests with a theory mutant installed: the wrong
# derivation is regenerated into a scratch module before any test imports the numerics.
if os.environ.get("FASTSLOW_MUTANT"):
    from proofs_check.mutation.hand_written_theory import install

    install(os.environ["FASTSLOW_MUTANT"])
