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
