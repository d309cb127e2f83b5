import torch
from tensordict import TensorDict

from rl_core.modules import MLP, Actor
from rl_objectives import DTLoss


def test_dt_loss_regresses_the_data_actions():
    torch.manual_seed(0)
    net = MLP(3, 2, depth=1, num_cells=8)
    td = TensorDict(
        observation=torch.randn(4, 5, 3), action=torch.randn(4, 5, 2), batch_size=[4, 5]
    )
    target = td["action"].clone()
    out = DTLoss(Actor(net))(td)
    torch.testing.assert_close(out["loss"], (net(td["observation"]) - target).pow(2).mean())
    torch.testing.assert_close(td["action"], target)  # the input's targets are not overwritten
