import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, q_critic, q_with, tanh_actor, tanh_sample
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_objectives import REDQLoss


def test_redq_matches_reference():
    actor, param_net = tanh_actor()
    loss = REDQLoss(
        actor,
        q_critic(),
        num_qvalue_nets=4,
        sub_sample_len=2,
        alpha_init=0.5,
        gamma=0.9,
        loss_function="l2",
    )
    g = torch.Generator().manual_seed(7)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)
    torch.manual_seed(11)
    out = loss(td)
    torch.manual_seed(11)
    obs, nobs = td["observation"], td["next", "observation"]
    a, logp = tanh_sample(param_net, obs)
    q_mean = torch.stack([q_with(loss, i, False, td, a) for i in range(4)]).mean(0).squeeze(-1)
    actor_loss = (0.5 * logp - q_mean).mean()
    with torch.no_grad():
        a2, logp2 = tanh_sample(param_net, nobs)
        subset = torch.randperm(4)[:2].tolist()
        nq = torch.stack([q_with(loss, i, True, td["next"], a2) for i in subset]).min(0).values
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * (
            nq - 0.5 * logp2.unsqueeze(-1)
        )
    q_loss = sum((q_with(loss, i, False, td, td["action"]) - y).pow(2).mean() for i in range(4))
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    assert all(g is None for g in grads(out["loss_actor"], qparams))
    ap = list(param_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(actor_loss, ap))


def test_redq_rejects_subset_size():
    actor, _ = tanh_actor()
    with pytest.raises(
        ValueError, match=r"REDQLoss: expected 1 <= sub_sample_len <= num_qvalue_nets \(3\), got 5"
    ):
        REDQLoss(actor, q_critic(), num_qvalue_nets=3, sub_sample_len=5)
