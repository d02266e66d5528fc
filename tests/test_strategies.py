"""The stack strategies reach realistic sizes within the CI profile's example budget."""

from hypothesis import HealthCheck, find, settings
from hypothesis.errors import NoSuchExample
import pytest

from strategies import HARD_CASES, stack_specs

CI = settings(max_examples=10, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


def test_ci_budget_reaches_large_sizes():
    """Within the 10 derandomised examples of the ci profile some draw has T > 16 and one has d > 16."""
    assert find(stack_specs(), lambda s: s.T > 16, settings=CI).T > 16
    assert find(stack_specs(), lambda s: s.d > 16, settings=CI).d > 16


def test_sizes_stay_in_range_and_bias_small():
    """Control on the bias: no draw leaves [2, 32], and the first band (T ≤ 8) is reached too."""
    with pytest.raises(NoSuchExample):
        find(stack_specs(), lambda s: s.T > 32 or s.d > 32 or s.T < 2, settings=CI)
    assert find(stack_specs(), lambda s: s.T <= 8, settings=CI).T <= 8


@pytest.mark.parametrize("spec", HARD_CASES, ids=lambda s: f"{s.kernel}-T{s.T}")
def test_hard_cases_build(spec):
    stack = spec.build()
    assert stack.config.T == spec.T and stack.config.kernel == spec.kernel
