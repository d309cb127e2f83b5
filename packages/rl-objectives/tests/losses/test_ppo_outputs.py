"""The PPO family's ``kl_approx`` output (TorchRL 0.14 logs it on every PPO loss)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import categorical_actor, onpolicy_batch, value_critic

from rl_objectives import ClipPPOLoss, KLPENPPOLoss, PPOLoss


@pytest.mark.parametrize("loss_class", [PPOLoss, ClipPPOLoss, KLPENPPOLoss])
def test_kl_approx_is_the_mean_log_ratio_of_old_to_new(loss_class):
    actor, actor_net = categorical_actor()
    critic, _ = value_critic()
    td = onpolicy_batch()
    out = loss_class(actor, critic)(td)
    with torch.no_grad():
        logp = torch.log_softmax(actor_net(td["observation"]), -1)
        logp = (logp * td["action"].float()).sum(-1)
        expected = (td["action_log_prob"] - logp).mean()
    torch.testing.assert_close(out["kl_approx"], expected)
    assert not out["kl_approx"].requires_grad
