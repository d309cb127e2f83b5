import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, OBS, q_critic, q_with, tanh_actor, tanh_sample
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, ValueOperator
from rl_objectives import SACLoss


def batch():
    g = torch.Generator().manual_seed(7)
    return offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)


def test_sac_v2_matches_reference():
    actor, param_net = tanh_actor()
    loss = SACLoss(actor, q_critic(), alpha_init=0.5, gamma=0.9, loss_function="l2")
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(0.9))
    td = batch()
    torch.manual_seed(123)
    out = loss(td)
    torch.manual_seed(123)
    obs, nobs = td["observation"], td["next", "observation"]
    a, logp = tanh_sample(param_net, obs)
    q_new = torch.min(*[q_with(loss, i, False, td, a) for i in range(2)]).squeeze(-1)
    # the actor loss must not train the critics: evaluate Q with detached params
    actor_loss = (0.5 * logp - q_new).mean()
    with torch.no_grad():
        a2, logp2 = tanh_sample(param_net, nobs)
        ntd = td["next"]
        nq = torch.min(*[q_with(loss, i, True, ntd, a2) for i in range(2)]) - 0.5 * logp2.unsqueeze(
            -1
        )
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nq
    preds = [q_with(loss, i, False, td, td["action"]) for i in range(2)]
    q_loss = sum((p - y).pow(2).mean() for p in preds)
    alpha_loss = (-loss.log_alpha * (logp.detach() - ACT)).mean()
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_alpha"], alpha_loss)
    assert loss.target_entropy == -ACT
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    assert all(g is None for g in grads(out["loss_actor"], qparams))
    actor_params = list(param_net.parameters())
    assert_same_grads(grads(out["loss_actor"], actor_params), grads(actor_loss, actor_params))
    assert_same_grads(
        grads(out["loss_alpha"], [loss.log_alpha]), grads(alpha_loss, [loss.log_alpha])
    )


def test_sac_v1_value_loss_and_target():
    actor, param_net = tanh_actor()
    torch.manual_seed(2)
    v_net = MLP(OBS, 1, depth=1, num_cells=16)
    loss = SACLoss(
        actor,
        q_critic(),
        ValueOperator(v_net, ["observation"]),
        gamma=0.9,
        loss_function="l2",
        fixed_alpha=True,
        alpha_init=0.2,
    )
    td = batch()
    torch.manual_seed(5)
    out = loss(td)
    torch.manual_seed(5)
    a, logp = tanh_sample(param_net, td["observation"])
    q_new = torch.min(*[q_with(loss, i, False, td, a) for i in range(2)]).squeeze(-1)
    v_loss = (v_net(td["observation"]) - (q_new - 0.2 * logp).detach().unsqueeze(-1)).pow(2).mean()
    with torch.no_grad():
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * v_net(
            td["next", "observation"]
        )
    q_loss = sum((q_with(loss, i, False, td, td["action"]) - y).pow(2).mean() for i in range(2))
    torch.testing.assert_close(out["loss_value"], v_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    assert "log_alpha" not in dict(loss.named_parameters())


def test_sac_errors():
    actor, _ = tanh_actor()
    with pytest.raises(ValueError, match=r"SACLoss: expected alpha_init > 0, got 0\.0"):
        SACLoss(actor, q_critic(), alpha_init=0.0)
    with pytest.raises(TypeError, match="SACLoss: actor_network must be a probabilistic actor"):
        SACLoss(q_critic(), q_critic())


def test_sac_skip_done_states_draws_next_actions_where_they_bootstrap_only():
    # TorchRL's skip_done_states: the actor runs on the non-terminated next states only; the
    # terminated ones add nothing to the target (it is r there), so the loss is unchanged
    actor, param_net = tanh_actor()
    loss = SACLoss(
        actor, q_critic(), alpha_init=0.5, gamma=0.9, loss_function="l2", skip_done_states=True
    )
    td = batch()
    live = ~td["next", "terminated"].squeeze(-1)
    assert 0 < int(live.sum()) < 8
    seen = []
    first = next(m for m in loss.actor_network.modules() if isinstance(m, torch.nn.Linear))
    hook = first.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[0]))
    torch.manual_seed(123)
    out = loss(td)
    hook.remove()
    assert seen == [8, int(live.sum())]  # the batch's states, then the live next states
    torch.manual_seed(123)
    obs, nobs = td["observation"], td["next", "observation"]
    tanh_sample(param_net, obs)  # (the actor's own draw comes first)
    with torch.no_grad():
        a2, logp2 = tanh_sample(param_net, nobs[live])
        ntd = td["next"][live]
        nq = torch.min(*[q_with(loss, i, True, ntd, a2) for i in range(2)]) - 0.5 * logp2.unsqueeze(
            -1
        )
        next_value = torch.zeros(8, 1)
        next_value[live] = nq
        y = td["next", "reward"] + 0.9 * live.unsqueeze(-1).float() * next_value
    q_loss = sum((q_with(loss, i, False, td, td["action"]) - y).pow(2).mean() for i in range(2))
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
