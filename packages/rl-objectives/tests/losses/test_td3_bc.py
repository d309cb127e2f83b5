import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, OBS, q_critic, q_with
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, Actor
from rl_objectives import TD3BCLoss


def test_td3_bc_actor_loss_matches_reference():
    torch.manual_seed(0)
    actor_net = torch.nn.Sequential(MLP(OBS, ACT, depth=1, num_cells=16), torch.nn.Tanh())
    loss = TD3BCLoss(Actor(actor_net), q_critic(), bounds=(-1.0, 1.0), alpha=2.0)
    g = torch.Generator().manual_seed(3)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) - 0.5)
    out = loss(td)
    pi = actor_net(td["observation"])
    q = q_with(loss, 0, False, td, pi)
    lmbda = 2.0 / q.detach().abs().mean()
    ref = -lmbda * q.mean() + torch.nn.functional.mse_loss(pi, td["action"])
    torch.testing.assert_close(out["loss_actor"], ref)
    torch.testing.assert_close(out["lmbda"], lmbda)
    ap = list(actor_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(ref, ap))
    assert out["loss_qvalue"].requires_grad
