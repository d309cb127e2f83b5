import copy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, QValueActor
from rl_objectives import DiscreteCQLLoss


def test_discrete_cql_matches_reference():
    torch.manual_seed(0)
    net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    loss = DiscreteCQLLoss(QValueActor(net, action_space="categorical"), gamma=0.9)
    target_net = copy.deepcopy(net)
    with torch.no_grad():
        loss.target_value_network_params.apply_(lambda x: x.mul_(0.5))
        for p in target_net.parameters():
            p.mul_(0.5)
    g = torch.Generator().manual_seed(1)
    td = offpolicy_batch(action=torch.randint(N_ACT, (8,), generator=g))
    out = loss(td)
    q_all = net(td["observation"])
    q = q_all.gather(-1, td["action"].unsqueeze(-1))
    with torch.no_grad():
        nq = target_net(td["next", "observation"]).max(-1, keepdim=True).values
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nq
    td_loss = (q - y).pow(2).mean()
    cql = (torch.logsumexp(q_all, -1, keepdim=True) - q).mean()
    torch.testing.assert_close(out["loss_qvalue"], td_loss)
    torch.testing.assert_close(out["loss_cql"], cql)
    params = list(net.parameters())
    assert_same_grads(
        grads(out["loss_qvalue"] + out["loss_cql"], params), grads(td_loss + cql, params)
    )
