"""KLAdaptiveLR (the rsl_rl schedule) and group_optimizers."""

import pytest
import torch

from rl_objectives import KLAdaptiveLR, group_optimizers


def _optim(lr=1e-3):
    return torch.optim.Adam([torch.zeros(2, requires_grad=True)], lr=lr)


def test_the_learning_rate_follows_the_kl_band():
    optim = _optim()
    scheduler = KLAdaptiveLR(optim, target_kl=0.02, factor=2.0, min_lr=1e-4, max_lr=3e-3)
    steps = [(0.05, 5e-4), (0.04, 5e-4), (0.02, 5e-4), (0.005, 1e-3), (0.0, 1e-3), (-0.1, 1e-3),
             (0.001, 2e-3), (0.001, 3e-3), (1.0, 1.5e-3), (1.0, 7.5e-4), (1.0, 3.75e-4),
             (1.0, 1.875e-4), (1.0, 1e-4)]  # fmt: skip
    for kl, lr in steps:
        scheduler.step(torch.tensor(kl) if kl > 0.5 else kl)
        assert scheduler.get_last_lr() == [pytest.approx(lr)], kl
    # 0.04 is exactly 2 * target: inside the band, unchanged


def test_every_parameter_group_is_rescaled_and_state_round_trips():
    a, b = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    optim = torch.optim.SGD([{"params": [a], "lr": 1e-3}, {"params": [b], "lr": 4e-3}])
    scheduler = KLAdaptiveLR(optim, 0.01)
    scheduler.step(0.1)
    assert scheduler.get_last_lr() == [pytest.approx(1e-3 / 1.5), pytest.approx(4e-3 / 1.5)]
    other = KLAdaptiveLR(optim, 0.5)
    other.load_state_dict(scheduler.state_dict())
    assert other.target_kl == 0.01


def test_kl_adaptive_lr_bad_arguments_are_named():
    with pytest.raises(TypeError, match=r"optimizer to be a torch.optim.Optimizer, got list"):
        KLAdaptiveLR([], 0.01)
    with pytest.raises(ValueError, match=r"factor > 1, got 1.0"):
        KLAdaptiveLR(_optim(), 0.01, factor=1.0)
    with pytest.raises(ValueError, match=r"max_lr >= min_lr \(0.1\), got 0.01"):
        KLAdaptiveLR(_optim(), 0.01, min_lr=0.1, max_lr=0.01)
    with pytest.raises(ValueError, match="target_kl > 0, got 0"):
        KLAdaptiveLR(_optim(), 0)
    with pytest.raises(ValueError, match="finite KL divergence, got nan"):
        KLAdaptiveLR(_optim(), 0.01).step(float("nan"))


def test_group_optimizers_keeps_each_groups_hyperparameters():
    p1, p2 = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    grouped = group_optimizers(
        torch.optim.Adam([p1], lr=1e-3), None, torch.optim.Adam([p2], lr=1e-2, weight_decay=0.1)
    )
    assert isinstance(grouped, torch.optim.Adam)
    assert [(g["lr"], g["weight_decay"]) for g in grouped.param_groups] == [(1e-3, 0), (1e-2, 0.1)]
    (p1.sum() + p2.sum()).backward()
    grouped.step()
    assert (p1 != 0).all()
    assert (p2 != 0).all()


def test_group_optimizers_bad_arguments_are_named():
    p = [torch.zeros(1, requires_grad=True)]
    with pytest.raises(ValueError, match=r"optimizers of one class, got \['Adam', 'SGD'\]"):
        group_optimizers(torch.optim.Adam(p), torch.optim.SGD(p, lr=0.1))
    with pytest.raises(ValueError, match="at least one optimizer, got none"):
        group_optimizers(None)
    with pytest.raises(TypeError, match="got str at position 0"):
        group_optimizers("adam")
