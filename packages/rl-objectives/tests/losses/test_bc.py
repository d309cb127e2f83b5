import sys
from pathlib import Path

import torch
from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, assert_same_grads, categorical_actor, grads

from rl_core.modules import MLP, Actor
from rl_objectives import BCLoss


def test_bc_probabilistic_is_negative_log_likelihood():
    actor, net = categorical_actor()
    td = TensorDict(
        observation=torch.randn(6, OBS),
        action=torch.nn.functional.one_hot(torch.arange(6) % N_ACT, N_ACT).bool(),
        batch_size=[6],
    )
    out = BCLoss(actor)(td)
    logp = (torch.log_softmax(net(td["observation"]), -1) * td["action"].float()).sum(-1)
    torch.testing.assert_close(out["loss_bc"], -logp.mean())
    assert_same_grads(
        grads(out["loss_bc"], net.parameters()), grads(-logp.mean(), net.parameters())
    )


def test_bc_deterministic_is_regression():
    torch.manual_seed(0)
    net = MLP(OBS, 2, depth=1, num_cells=8)
    td = TensorDict(observation=torch.randn(6, OBS), action=torch.randn(6, 2), batch_size=[6])
    out = BCLoss(Actor(net), loss_function="l1")(td)
    ref = (net(td["observation"]) - td["action"]).abs().mean()
    torch.testing.assert_close(out["loss_bc"], ref)
    assert_same_grads(grads(out["loss_bc"], net.parameters()), grads(ref, net.parameters()))
