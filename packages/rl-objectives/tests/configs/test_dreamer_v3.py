"""DreamerV3's optimizer, stepper and update-ratio configs: typed, and they build their class."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-objectives[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, MissingMandatoryValue, ValidationError

from rl_objectives.configs import (
    DreamerV3OptimizationStepperConfig,
    DreamerV3OptimizerConfig,
    DreamerV3UpdateRatioConfig,
)
from rl_objectives.trainers import (
    DreamerV3OptimizationStepper,
    DreamerV3Optimizer,
    DreamerV3UpdateRatio,
)


def test_optimizer_config_builds_the_optimizer_with_its_settings():
    cfg = OmegaConf.merge(OmegaConf.structured(DreamerV3OptimizerConfig),
                          {"lr": 0.01, "warmup_steps": 0})  # fmt: skip
    w = torch.nn.Parameter(torch.tensor([1.0, -1.0]))
    optimizer = instantiate(cfg)([w])
    assert type(optimizer) is DreamerV3Optimizer
    w.square().sum().backward()
    optimizer.step()
    # clipped, RMS-normalised and bias-corrected: each entry moves by exactly lr
    torch.testing.assert_close(w.detach(), torch.tensor([0.99, -0.99]))


def test_stepper_config_is_called_with_the_loss_and_optimizer():
    cfg = OmegaConf.merge(OmegaConf.structured(DreamerV3OptimizationStepperConfig),
                          {"warmup_steps": 2})  # fmt: skip
    loss = torch.nn.Linear(1, 1)
    stepper = instantiate(cfg)(loss, DreamerV3Optimizer(loss.parameters()))
    assert type(stepper) is DreamerV3OptimizationStepper
    assert (stepper.warmup_steps, stepper.target_updater) == (2, None)


def test_update_ratio_config_needs_a_ratio_and_builds_the_schedule():
    with pytest.raises(MissingMandatoryValue):
        instantiate(OmegaConf.structured(DreamerV3UpdateRatioConfig))
    schedule = instantiate(OmegaConf.structured(DreamerV3UpdateRatioConfig(ratio=0.25)))
    assert type(schedule) is DreamerV3UpdateRatio
    assert (schedule(4), schedule(8)) == (1, 1)


def test_a_wrong_type_or_unknown_key_is_refused_naming_it():
    with pytest.raises(ValidationError, match=r"(?s)full_key: warmup_steps"):
        OmegaConf.merge(OmegaConf.structured(DreamerV3OptimizerConfig), {"warmup_steps": "many"})
    with pytest.raises(ValidationError, match=r"(?s)full_key: ratio"):
        OmegaConf.merge(OmegaConf.structured(DreamerV3UpdateRatioConfig), {"ratio": "half"})
    with pytest.raises(ConfigKeyError, match="cuda_graph"):
        OmegaConf.merge(OmegaConf.structured(DreamerV3OptimizationStepperConfig),
                        {"cuda_graph": True})  # fmt: skip
