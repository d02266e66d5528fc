"""The one log–log fitter (numerics.fitting.loglog_fit): exact on power laws, and wrong by exactly the
exponent's difference when the data follow another one."""

import math

import numpy as np
import pytest

from numerics.fitting import loglog_fit

EPS = float(np.finfo(np.float64).eps)


def power_law(xs, c: float, p: float) -> list[float]:
    return [c * x ** p for x in xs]


def slope_tolerance(xs, ys, p: float) -> float:
    """Rounding bound of the fitted slope of float64 data on a power law y = c xᵖ.

    Each point's residual ln yᵢ − p ln xᵢ − ln c carries the rounding of yᵢ (c·xᵖ: pow and a product, ≤ 2u
    relative, so ≤ 2u in ln y), of ln yᵢ (≤ u |ln yᵢ|) and of ln xᵢ times p (≤ |p| u |ln xᵢ|): at most
    δ = u (2 + max|ln y| + |p| max|ln x|).  The slope Σ x̃ᵢ rᵢ / Σ x̃ᵢ² (x̃ = centred ln x) moves by at most
    δ ‖x̃‖₁/‖x̃‖₂²; the two length-n sums and the centring add n u relative each, 4 n u |p| in all."""
    lx, ly = np.log(np.asarray(xs)), np.log(np.asarray(ys))
    xc = lx - lx.mean()
    delta = EPS * (2 + np.abs(ly).max() + abs(p) * np.abs(lx).max())
    return float(delta * np.abs(xc).sum() / (xc ** 2).sum() + 4 * len(xs) * EPS * abs(p))


@pytest.mark.parametrize("p", [1.0, 2.0, -0.5, 3.7])
def test_power_law_slope_and_intercept_exact(p):
    xs = [10.0 ** (-5 + k / 2) for k in range(9)]
    ys = power_law(xs, 0.3, p)
    fit = loglog_fit(xs, ys)
    tol = slope_tolerance(xs, ys, p)
    assert abs(fit.slope - p) <= tol, (fit.slope, tol)
    # the intercept mean(ln y) − p mean(ln x) moves by the slope error times |mean ln x| plus δ
    assert abs(fit.intercept - math.log(0.3)) <= tol * (1 + abs(np.log(xs).mean())) + tol
    assert fit.max_residual <= tol * (1 + np.abs(np.log(xs)).max()) + tol


def test_another_exponent_fails_by_the_exponents_difference():
    """Negative control: data on y ∝ x^2.5 checked against p = 2 miss by 0.5 (to rounding), not by less."""
    xs = [10.0 ** (-4 + k / 3) for k in range(7)]
    ys = power_law(xs, 1.7, 2.5)
    fit = loglog_fit(xs, ys)
    tol = slope_tolerance(xs, ys, 2.5)
    assert abs(fit.slope - 2.0) > tol  # the check of p = 2 fails ...
    assert abs(abs(fit.slope - 2.0) - 0.5) <= tol  # ... by the predicted 0.5


def test_residual_measures_the_departure_from_a_power_law():
    """ln x = 0, 1, 2 with the middle point raised by η in ln y: the least-squares line keeps slope p
    (the middle point has centred ln x = 0), its intercept rises by η/3 and the largest residual is 2η/3."""
    p, eta = 1.5, 0.3
    xs = [1.0, math.e, math.e ** 2]
    ys = [x ** p for x in xs]
    ys[1] *= math.exp(eta)
    fit = loglog_fit(xs, ys)
    tol = 64 * EPS  # three points of magnitude ≤ e³: a few roundings of O(3) numbers
    assert abs(fit.slope - p) <= tol
    assert abs(fit.intercept - eta / 3) <= tol
    assert abs(fit.max_residual - 2 * eta / 3) <= tol


def test_two_points_give_the_endpoint_slope():
    x1, y1, x2, y2 = 2.0, 3.0, 16.0, 0.25
    expected = math.log(y2 / y1) / math.log(x2 / x1)
    # both are ratios of O(1) logarithms: a few ulps apart
    assert abs(loglog_fit([x1, x2], [y1, y2]).slope - expected) <= 16 * EPS * abs(expected)


@pytest.mark.parametrize("xs, ys, word", [([1.0, 2.0], [1.0], "equal length"), ([1.0], [1.0], "at least two"),
                                          ([1.0, 2.0], [1.0, 0.0], "positive"), ([1.0, -2.0], [1.0, 2.0], "positive"),
                                          ([1.0, 2.0], [1.0, float("nan")], "finite"),
                                          ([3.0, 3.0], [1.0, 2.0], "distinct")])
def test_bad_input_is_named(xs, ys, word):
    with pytest.raises(ValueError, match=word):
        loglog_fit(xs, ys)
