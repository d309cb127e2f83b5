"""The SAC family's shared core: temperature, keys and critic set-up seen through each loss."""

import math
import sys
from pathlib import Path

import pytest
import torch
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import q_critic, tanh_actor
from _nets import N_ACT, OBS, categorical_actor

from rl_core.modules import MLP
from rl_objectives import CQLLoss, CrossQLoss, DiscreteSACLoss, REDQLoss, SACLoss


def continuous(cls, **kw):
    actor, _ = tanh_actor()
    return cls(actor, q_critic(), **kw)


def discrete(**kw):
    actor, _ = categorical_actor()
    q = TensorDictModule(MLP(OBS, N_ACT, depth=1, num_cells=8), ["observation"], ["action_value"])
    return DiscreteSACLoss(actor, q, num_actions=N_ACT, **kw)


BUILDERS = {
    "SAC": lambda **kw: continuous(SACLoss, **kw),
    "CrossQ": lambda **kw: continuous(CrossQLoss, **kw),
    "REDQ": lambda **kw: continuous(REDQLoss, **kw),
    "CQL": lambda **kw: continuous(CQLLoss, **kw),
    "DiscreteSAC": discrete,
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_alpha_is_the_detached_exp_of_log_alpha(name):
    loss = BUILDERS[name](alpha_init=0.3)
    assert isinstance(loss.log_alpha, torch.nn.Parameter)
    assert loss.alpha.item() == pytest.approx(0.3, rel=1e-6)
    assert not loss.alpha.requires_grad
    assert loss.fixed_alpha is False
    fixed = BUILDERS[name](alpha_init=0.3, fixed_alpha=True)
    assert "log_alpha" in dict(fixed.named_buffers())
    assert fixed.fixed_alpha is True


@pytest.mark.parametrize("name", list(BUILDERS))
def test_bad_alpha_init_names_the_loss(name):
    cls_name = {"SAC": "SACLoss", "CrossQ": "CrossQLoss", "REDQ": "REDQLoss", "CQL": "CQLLoss"}
    owner = cls_name.get(name, "DiscreteSACLoss")
    with pytest.raises(ValueError, match=rf"{owner}: expected alpha_init > 0, got -1"):
        BUILDERS[name](alpha_init=-1.0)


def test_sac_alpha_is_clamped_to_its_bounds():
    loss = continuous(SACLoss, alpha_init=5.0, max_alpha=2.0, min_alpha=0.1)
    assert loss.alpha.item() == pytest.approx(2.0, rel=1e-6)
    with torch.no_grad():
        loss.log_alpha.fill_(math.log(0.01))
    assert loss.alpha.item() == pytest.approx(0.1, rel=1e-6)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_renaming_the_critic_output_reaches_the_ensemble(name):
    loss = BUILDERS[name]()
    field = "action_value" if name == "DiscreteSAC" else "state_action_value"
    loss.set_keys(**{field: "my_q"})
    assert loss.qvalue_network.out_key == "my_q"
