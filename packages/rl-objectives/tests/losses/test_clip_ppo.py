import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import assert_same_grads, categorical_actor, grads, onpolicy_batch, value_critic

from rl_objectives import ClipPPOLoss


def test_clip_ppo_matches_reference():
    actor, actor_net = categorical_actor()
    critic, critic_net = value_critic()
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.15, entropy_coeff=0.01, clip_value=True)
    td = onpolicy_batch()
    loss.value_estimator(td)
    out = loss(td)
    adv = td["advantage"].squeeze(-1)
    logp_all = torch.log_softmax(actor_net(td["observation"]), -1)
    logp = (logp_all * td["action"].float()).sum(-1)
    ratio = torch.exp(logp - td["action_log_prob"])
    objective = -torch.min(ratio * adv, ratio.clamp(0.85, 1.15) * adv).mean()
    value = critic_net(td["observation"])
    old = td["state_value"]
    err = torch.nn.functional.smooth_l1_loss(value, td["value_target"], reduction="none")
    clipped = old + (value - old).clamp(-0.15, 0.15)
    err2 = torch.nn.functional.smooth_l1_loss(clipped, td["value_target"], reduction="none")
    critic_loss = torch.maximum(err, err2).mean()
    torch.testing.assert_close(out["loss_objective"], objective)
    torch.testing.assert_close(out["loss_critic"], critic_loss)
    frac = ((ratio < 0.85) | (ratio > 1.15)).float().mean()
    torch.testing.assert_close(out["clip_fraction"], frac)
    w = ratio.detach()
    torch.testing.assert_close(out["ESS"], w.sum() ** 2 / (w**2).sum() / w.numel())
    params = list(actor_net.parameters()) + list(critic_net.parameters())
    assert_same_grads(
        grads(out["loss_objective"] + out["loss_critic"], params),
        grads(objective + critic_loss, params),
    )


def test_clip_ppo_rejects_epsilon():
    actor, _ = categorical_actor()
    with pytest.raises(
        ValueError, match=r"ClipPPOLoss: expected clip_epsilon in \(0, 1\), got 1.5"
    ):
        ClipPPOLoss(actor, clip_epsilon=1.5)
