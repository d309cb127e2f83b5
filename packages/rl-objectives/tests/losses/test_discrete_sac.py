import math
import sys
from pathlib import Path

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, assert_same_grads, categorical_actor, grads, offpolicy_batch

from rl_core.modules import MLP
from rl_objectives import DiscreteSACLoss


def test_discrete_sac_matches_reference():
    actor, actor_net = categorical_actor()
    torch.manual_seed(3)
    q_net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    loss = DiscreteSACLoss(
        actor,
        TensorDictModule(q_net, ["observation"], ["action_value"]),
        alpha_init=0.3,
        gamma=0.9,
        loss_function="l2",
    )
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(0.7))
    g = torch.Generator().manual_seed(2)
    td = offpolicy_batch(action=torch.randint(N_ACT, (8,), generator=g))
    out = loss(td)

    def q(i, target, obs):
        params = loss.target_qvalue_network_params if target else loss.qvalue_network_params
        net = loss.qvalue_network.nets[i]
        with params["nets", str(i)].to_module(net):
            return net(TensorDict(observation=obs, batch_size=obs.shape[:1]))["action_value"]

    obs, nobs = td["observation"], td["next", "observation"]
    log_p = torch.log_softmax(actor_net(obs), -1)
    p = log_p.exp()
    q_min = torch.min(q(0, False, obs), q(1, False, obs)).detach()
    actor_loss = (p * (0.3 * log_p - q_min)).sum(-1).mean()
    with torch.no_grad():
        nlp = torch.log_softmax(actor_net(nobs), -1)
        nq = torch.min(q(0, True, nobs), q(1, True, nobs))
        nv = (nlp.exp() * (nq - 0.3 * nlp)).sum(-1, keepdim=True)
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nv
    a = td["action"].unsqueeze(-1)
    q_loss = sum((q(i, False, obs).gather(-1, a) - y).pow(2).mean() for i in range(2))
    entropy = -(p * log_p).sum(-1)
    alpha_loss = (loss.log_alpha * (entropy.detach() - 0.98 * math.log(N_ACT))).mean()
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_alpha"], alpha_loss)
    ap = list(actor_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(actor_loss, ap))
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    assert all(g is None for g in grads(out["loss_actor"], qparams))


def test_discrete_sac_action_space_reads_the_action_as_told():
    # TorchRL's action_space=: an index action ([B] or [B, 1]) for "categorical", a one-hot
    # [B, n] for "one_hot"; both give the loss of the same actions
    import pytest

    from rl_core import Categorical, OneHot

    actor, _ = categorical_actor()
    torch.manual_seed(3)
    critic = TensorDictModule(
        MLP(OBS, N_ACT, depth=1, num_cells=16), ["observation"], ["action_value"]
    )
    g = torch.Generator().manual_seed(2)
    index = torch.randint(N_ACT, (8,), generator=g)
    losses = {}
    for space, action in [
        ("categorical", index),
        (Categorical(N_ACT), index.unsqueeze(-1)),
        ("one-hot", torch.nn.functional.one_hot(index, N_ACT)),
        (OneHot(N_ACT), torch.nn.functional.one_hot(index, N_ACT)),
        (None, index),
    ]:
        torch.manual_seed(0)  # (the second critic is a fresh copy, drawn here)
        loss = DiscreteSACLoss(actor, critic, action_space=space, delay_qvalue=False)
        losses[str(space)] = loss(offpolicy_batch(action=action))["loss_qvalue"]
    first = next(iter(losses.values()))
    for value in losses.values():
        torch.testing.assert_close(value, first)
    one_hot = DiscreteSACLoss(actor, critic, action_space="one_hot")
    with pytest.raises(ValueError, match="action_space='one_hot' expects a one-hot action of 4"):
        one_hot(offpolicy_batch(action=index))
    categorical = DiscreteSACLoss(actor, critic, action_space="categorical")
    with pytest.raises(ValueError, match="action_space='categorical' expects an integer action"):
        categorical(offpolicy_batch(action=torch.nn.functional.one_hot(index, N_ACT)))
    with pytest.raises(ValueError, match="expected action_space 'one_hot'"):
        DiscreteSACLoss(actor, critic, action_space="discrete")
    with pytest.raises(TypeError, match="a OneHot or Categorical spec, got int"):
        DiscreteSACLoss(actor, critic, action_space=3)
