"""proofs_check.sweep.digest on hand-made rows whose counts, ranges and medians are known by construction.

Each spec's digest is fed a few rows with chosen values, and each number it writes is compared with the value
worked out by hand here (exact: the inputs are small integers or their ratios, so comparisons are at 1e-12
relative, float64 division's rounding).  Negative controls: a row moved across the line a number counts (a clock
depth one layer shallower, an n/a row at a smaller LN gain) changes the digest, and a digest with a NaN is
refused.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from proofs_check.sweep import digest as D
from proofs_check.sweep.store import Store

REL = 1e-12  # float64 division of small integers: exact to a few ulps


def _frame(sweep: str, rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"sweep": sweep, "version": "0.1.0", **r} for r in rows])


def _depth_clock_rows(shift: int = 0) -> list[dict]:
    # (kernel, measured ℓ*, clock ℓ̂*): equal twice, deeper by 1 and 3, one without a measured ℓ*
    cases = [("causal", 2, 2), ("causal", 1, 2), ("full", 0, 0), ("full", 1, 4), ("full", None, 3)]
    return [{"kernel": k, "verdict": "holds", "measured_saturation_depth": m,
             "predicted_clock_saturation_depth": p if i else p - shift} for i, (k, m, p) in enumerate(cases)]


def test_depth_clock_counts_equal_deeper_and_shallower_depths():
    out = D.digest(_frame("depth_clock", _depth_clock_rows()))
    assert out["rows"] == 5 and out["counts"] == {"holds": 5}
    assert (out["compared"], out["equal"], out["deeper"], out["shallower"]) == (4, 2, 2, 0)
    assert out["deeper_by"] == [1.0, 3.0]
    assert out["mean_difference"]["causal"] == pytest.approx(-0.5, rel=REL)      # (0 − 1) / 2
    assert out["mean_difference"]["full"] == pytest.approx(-1.5, rel=REL)        # (0 − 3) / 2


def test_a_clock_depth_one_layer_shallower_is_counted_as_shallower():
    out = D.digest(_frame("depth_clock", _depth_clock_rows(shift=1)))
    assert (out["equal"], out["shallower"]) == (1, 1)


def _gate_bounds_rows(na_gain: float = 0.7) -> list[dict]:
    held = [(1.0, 5.0, 100.0), (2.0, 20.0, 200.0), (0.5, 5.0, 25.0)]   # g*, onset, g⁺
    rows = [{"verdict": "holds", "ln_gain": 0.1, "predicted_g_star": g, "measured_onset_min": on,
             "predicted_g_plus_min": up} for g, on, up in held]
    return rows + [{"verdict": "n/a", "ln_gain": gain, "predicted_g_star": None, "measured_onset_min": None,
                    "predicted_g_plus_min": None} for gain in (1.0, na_gain)]


def test_gate_bounds_tightness_of_both_ends():
    out = D.digest(_frame("gate_bounds", _gate_bounds_rows()))
    assert out["counts"] == {"holds": 3, "n/a": 2}
    assert out["onset_over_g_star"] == pytest.approx([5.0, 10.0, 10.0], rel=REL)     # 5, 10, 10
    assert out["g_plus_over_onset"] == pytest.approx([5.0, 10.0, 20.0], rel=REL)     # 20, 10, 5
    assert out["na_ln_gain"] == 0.7
    assert D.digest(_frame("gate_bounds", _gate_bounds_rows(na_gain=0.4)))["na_ln_gain"] == 0.4


def test_gate_margin_counts_certified_stacks_with_and_without_an_onset():
    rows = [{"verdict": "holds", "ln_gain": 0.1, "predicted_g_star": 2.0, "measured_onset": 10.0},
            {"verdict": "holds", "ln_gain": 0.2, "predicted_g_star": 1.0, "measured_onset": 60.0},
            {"verdict": "holds", "ln_gain": 0.4, "predicted_g_star": 1.0, "measured_onset": 7.0},
            {"verdict": "holds", "ln_gain": 1.0, "predicted_g_star": 0.1, "measured_onset": None},
            {"verdict": "conditional", "ln_gain": 0.7, "predicted_g_star": None, "measured_onset": 3.0}]
    out = D.digest(_frame("gate_margin", rows))
    assert (out["certified"], out["with_onset"]) == (4, 3)
    assert out["onset_over_g_star"] == pytest.approx([5.0, 7.0, 60.0], rel=REL)
    assert out["uncertified_ln_gain"] == 0.7


def test_coarse_graining_takes_the_last_depth_of_each_row():
    rows = [{"verdict": v, "kernel": k, "value_scale": c, "measured_two_sided": json.dumps(r),
             "predicted_saturation_depth": sd}
            for v, k, c, r, sd in [("conditional", "causal", 0.0, [0.7, 0.8], None),
                                   ("conditional", "causal", 2.0, [0.9, 0.68], 3.0),
                                   ("holds", "full", 2.0, [0.9, 0.3], 5.0), ("holds", "full", 2.0, [0.1, 0.2], 0.0),
                                   ("holds", "full", 20.0, [0.05], 0.0)]]
    out = D.digest(_frame("coarse_graining", rows))
    assert out["two_sided_max"] == {"causal": {"0": 0.8, "2": 0.68}, "full": {"2": 0.3, "20": 0.05}}
    assert out["two_sided_range"] == {"causal": [0.68, 0.8], "full": [0.05, 0.3]}
    assert out["saturation_depth"] == {"causal": {"2": [3.0, 3.0]}, "full": {"2": [0.0, 5.0], "20": [0.0, 0.0]}}


def test_an_unlisted_sweep_gets_its_counts_only():
    out = D.digest(_frame("visibility", [{"verdict": "holds"}, {"verdict": "n/a"}, {"verdict": "holds"}]))
    assert out == {"sweep": "visibility", "rows": 3, "version": "0.1.0", "counts": {"holds": 2, "n/a": 1}}


def test_write_reads_the_stored_rows_and_refuses_a_nan(tmp_path):
    store = Store(tmp_path / "sweep")
    rows = [{"row_key": f"k{i}", "sweep": "gate_bounds", "version": "0.1.0", **r}
            for i, r in enumerate(_gate_bounds_rows())]
    store.append(rows)
    out = D.write(tmp_path / "sweep", tmp_path / "digest.json")
    assert json.loads((tmp_path / "digest.json").read_text()) == out and out["rows"] == 5
    nan_store = Store(tmp_path / "nan")
    bad = [dict(r, row_key=f"n{i}", predicted_g_star=math.nan if i == 0 else r["predicted_g_star"])
           for i, r in enumerate(rows)]
    nan_store.append(bad)
    with pytest.raises(ValueError, match="non-finite"):
        D.write(tmp_path / "nan", tmp_path / "nan.json")
    assert not (tmp_path / "nan.json").exists()
