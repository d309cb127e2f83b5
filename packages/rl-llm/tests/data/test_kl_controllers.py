import math

import pytest
import torch

from rl_llm.data import AdaptiveKLController, ConstantKLController


def _reference(coef, target, horizon, batches):
    # Ziegler et al. (2019), Sec. 2.2, written out in float64.
    for kls in batches:
        e = min(max(sum(kls) / len(kls) / target - 1.0, -0.2), 0.2)
        coef = coef * (1.0 + e * len(kls) / horizon)
    return coef


def test_adaptive_follows_the_paper():
    batches = [[1.0, 2.0], [30.0], [6.0, 6.0, 6.0], [0.0], [5.9, 6.3]]
    ctl = AdaptiveKLController(init_kl_coef=0.1, target=6.0, horizon=100)
    for kls in batches:
        got = ctl.update(kls)
    assert math.isclose(got, _reference(0.1, 6.0, 100, batches), rel_tol=1e-12)
    # Above target the coefficient grows, below it shrinks.
    up = AdaptiveKLController(init_kl_coef=1.0, target=1.0, horizon=10)
    assert up.update([2.0]) > 1.0
    assert up.update([0.1]) < up.coef / (1 - 0.2 / 10) + 1e-12


def test_controllers_write_the_model_attribute():
    model = torch.nn.Linear(1, 1)
    model.kl_coef = 0.0
    ctl = AdaptiveKLController(init_kl_coef=0.5, target=1.0, horizon=1, model=model)
    assert model.kl_coef == 0.5
    ctl.update([10.0])
    assert model.kl_coef == pytest.approx(0.6)
    const = ConstantKLController(kl_coef=0.3, model=model)
    assert const.update([100.0]) == 0.3
    assert model.kl_coef == 0.3


def test_bad_arguments():
    with pytest.raises(ValueError, match="expected kl_coef"):
        ConstantKLController()
    with pytest.raises(ValueError, match="expected target > 0"):
        AdaptiveKLController(init_kl_coef=0.1, target=0.0, horizon=1)
    with pytest.raises(ValueError, match="at least one KL value"):
        AdaptiveKLController(init_kl_coef=0.1, target=1.0, horizon=1).update([])
    with pytest.raises(AttributeError, match="no 'kl_coef' attribute"):
        ConstantKLController(kl_coef=0.1, model=object())


def test_adaptive_skips_non_finite_kl_values():
    model = torch.nn.Linear(1, 1)
    model.kl_coef = 0.0
    ctl = AdaptiveKLController(init_kl_coef=0.1, target=1.0, horizon=10, model=model)
    # Only 2.0 counts: error = clip(2 / 1 - 1, -0.2, 0.2) = 0.2, one step of ten.
    with pytest.warns(RuntimeWarning, match=r"skipped 2 non-finite kl value\(s\)"):
        got = ctl.update([float("nan"), 2.0, float("inf")])
    assert got == pytest.approx(0.1 * (1 + 0.2 * 1 / 10), rel=1e-12)
    assert model.kl_coef == got
    # Nothing finite: the coefficient stays as it was.
    with pytest.warns(RuntimeWarning, match="non-finite kl"):
        assert ctl.update([float("nan")]) == got
    assert math.isfinite(ctl.update([1.5]))


def test_adaptive_stays_positive_when_an_update_sees_more_values_than_the_horizon():
    # 100 values against horizon=10 would give 1 - 0.2 * 100 / 10 = -1: the step factor
    # n / horizon is clamped to 1, so one update corrects by at most the clip range (20 %).
    ctl = AdaptiveKLController(init_kl_coef=0.1, target=1.0, horizon=10)
    assert ctl.update([0.0] * 100) == pytest.approx(0.1 * (1 - 0.2), rel=1e-12)
    assert ctl.update([50.0] * 11) == pytest.approx(0.1 * 0.8 * (1 + 0.2), rel=1e-12)
    # Up to horizon values per update, the paper's rule applies unchanged.
    assert ctl.update([0.0] * 10) == pytest.approx(0.1 * 0.8 * 1.2 * 0.8, rel=1e-12)
    assert ctl.update([0.9] * 5) == pytest.approx(0.1 * 0.8 * 1.2 * 0.8 * 0.95, rel=1e-12)
