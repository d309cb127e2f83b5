import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import assert_same_grads, categorical_actor, grads, onpolicy_batch, value_critic

from rl_objectives import ReinforceLoss, SoftUpdate, ValueEstimators


def test_reinforce_matches_reference_with_td1_returns():
    actor, actor_net = categorical_actor()
    critic, critic_net = value_critic()
    loss = ReinforceLoss(actor, critic, delay_value=True, loss_critic_type="l2", gamma=0.9)
    loss.make_value_estimator(ValueEstimators.TD1)
    with torch.no_grad():
        loss.target_critic_network_params.apply_(lambda x: x.zero_())
    td = onpolicy_batch()
    out = loss(td)
    # hand-written returns: target critic is zero, so TD(1) is the discounted reward sum with
    # truncation bootstrapping from 0 too
    r = td["next", "reward"].squeeze(-1)
    done = td["next", "done"].squeeze(-1)
    ret = torch.zeros_like(r)
    for b in range(r.shape[0]):
        running = 0.0
        for t in reversed(range(r.shape[1])):
            running = r[b, t] + (0.0 if done[b, t] else 0.9 * running)
            ret[b, t] = running
    value = critic_net(td["observation"]).squeeze(-1)
    adv = ret - value.detach()
    logp = (torch.log_softmax(actor_net(td["observation"]), -1) * td["action"].float()).sum(-1)
    actor_loss = -(logp * adv).mean()
    value_loss = (value - ret).pow(2).mean()
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_value"], value_loss)
    params = list(actor_net.parameters()) + list(critic_net.parameters())
    assert_same_grads(
        grads(out["loss_actor"] + out["loss_value"], params), grads(actor_loss + value_loss, params)
    )
    SoftUpdate(loss, tau=1.0).step()
    torch.testing.assert_close(
        loss.target_critic_network_params["module", "0", "weight"], critic_net[0].weight.detach()
    )


def test_reinforce_without_critic_needs_advantage():
    actor, _ = categorical_actor()
    td = onpolicy_batch()
    with pytest.raises(KeyError, match="ReinforceLoss: the data has no 'advantage' entry"):
        ReinforceLoss(actor)(td)
