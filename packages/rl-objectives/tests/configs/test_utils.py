"""Optimizer configs: torch.optim's constructors' arguments, typed, partial."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-objectives[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from rl_objectives.configs import OPTIMIZER_CONFIGS, AdamWConfig, RMSpropConfig


@pytest.mark.parametrize("name", sorted(OPTIMIZER_CONFIGS))
def test_every_optimizer_config_builds_its_optimizer(name):
    param = torch.nn.Parameter(torch.ones(2))
    optimizer = instantiate(OmegaConf.structured(OPTIMIZER_CONFIGS[name]))([param])
    assert type(optimizer) is getattr(torch.optim, name)


def test_adamw_from_its_config_takes_one_step_as_computed_by_hand():
    # p = 1, grad 2, lr 0.1, weight decay 0.5: decay p to 1 - 0.1 * 0.5 = 0.95; the bias-
    # corrected moments are m = 2, v = 4, so p = 0.95 - 0.1 * 2 / (sqrt(4) + 1e-8) = 0.85.
    cfg = OmegaConf.merge(OmegaConf.structured(AdamWConfig), {"lr": 0.1, "weight_decay": 0.5})
    param = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    optimizer = instantiate(cfg)([param])
    (2 * param).sum().backward()
    optimizer.step()
    assert param.item() == pytest.approx(0.85, abs=1e-9)
    assert tuple(optimizer.param_groups[0]["betas"]) == (0.9, 0.999)


def test_a_wrong_type_is_refused_naming_the_key():
    with pytest.raises(ValidationError, match=r"(?s)full_key: alpha"):
        OmegaConf.merge(OmegaConf.structured(RMSpropConfig), {"alpha": "smooth"})
