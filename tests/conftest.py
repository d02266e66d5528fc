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

# The family property tests: the eigen-solves, SVDs and products whose rounding depends on the maths
# library's code path. CI runs them a second time under MKL_CBWR=AVX512 (`-m linalg`), so both vendors'
# branches of MKL are exercised on whichever x86 processor CI lands on.
LINALG_MODULES = frozenset({
    "test_coarse_graining.py", "test_factorisation.py", "test_stability.py", "test_gate_bounds.py",
    "test_depth_slow_manifold.py", "test_slow_manifold.py", "test_jacobians.py", "test_matrix_free.py",
    "test_depth_flow.py", "test_visibility.py", "test_saturation_quotient.py", "test_depth_clock_scale.py",
})


def pytest_configure(config):
    config.addinivalue_line("markers", "linalg: a family property test whose rounding depends on the LAPACK/BLAS code path")


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if item.path.name in LINALG_MODULES:
            item.add_marker(pytest.mark.linalg)
