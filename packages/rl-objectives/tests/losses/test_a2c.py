import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import assert_same_grads, categorical_actor, grads, onpolicy_batch, value_critic

from rl_objectives import A2CLoss


def test_a2c_matches_reference():
    actor, actor_net = categorical_actor()
    critic, critic_net = value_critic()
    loss = A2CLoss(actor, critic, entropy_coeff=0.05, critic_coeff=0.5, loss_critic_type="l2")
    td = onpolicy_batch()
    loss.value_estimator(td)
    out = loss(td)
    logp_all = torch.log_softmax(actor_net(td["observation"]), -1)
    logp = (logp_all * td["action"].float()).sum(-1)
    objective = -(logp * td["advantage"].squeeze(-1)).mean()
    entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
    critic_loss = 0.5 * (critic_net(td["observation"]) - td["value_target"]).pow(2).mean()
    torch.testing.assert_close(out["loss_objective"], objective)
    torch.testing.assert_close(out["loss_entropy"], -0.05 * entropy)
    torch.testing.assert_close(out["loss_critic"], critic_loss)
    params = list(actor_net.parameters()) + list(critic_net.parameters())
    total = out["loss_objective"] + out["loss_entropy"] + out["loss_critic"]
    assert_same_grads(grads(total, params), grads(objective - 0.05 * entropy + critic_loss, params))


def test_log_probs_of_the_batch_actions_and_stored_actions_with_grad_refused():
    # TorchRL's A2CLoss._log_probs: log pi(a|s) of the stored actions; a stored action that
    # requires grad is refused by the loss (the score function must not train the data)
    import pytest

    from rl_objectives import PPOLoss

    actor, actor_net = categorical_actor()
    critic, _ = value_critic()
    loss = A2CLoss(actor, critic)
    td = onpolicy_batch()
    log_prob, _dist = loss._log_probs(td)
    logits = torch.log_softmax(actor_net(td["observation"]), -1)
    expected = (logits * td["action"].float()).sum(-1)  # the one-hot action's log-prob
    torch.testing.assert_close(log_prob, expected)
    td["action"] = td["action"].float().requires_grad_(True)
    for cls in (A2CLoss, PPOLoss):
        with pytest.raises(RuntimeError, match="tensordict stored action requires grad"):
            cls(actor, critic)(td)
