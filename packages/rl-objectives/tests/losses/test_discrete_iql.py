import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, assert_same_grads, categorical_actor, grads, offpolicy_batch

from rl_core.modules import MLP, ProbabilisticActor, ValueOperator
from rl_core.specs import Categorical, OneHot
from rl_objectives import DiscreteIQLLoss


def test_discrete_iql_matches_reference():
    actor, actor_net = categorical_actor()
    torch.manual_seed(5)
    q_net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    v_net = MLP(OBS, 1, depth=1, num_cells=16)
    loss = DiscreteIQLLoss(
        actor,
        TensorDictModule(q_net, ["observation"], ["action_value"]),
        ValueOperator(v_net, ["observation"]),
        expectile=0.8,
        temperature=2.0,
        gamma=0.9,
        loss_function="l2",
    )
    g = torch.Generator().manual_seed(2)
    idx = torch.randint(N_ACT, (8,), generator=g)
    td = offpolicy_batch(action=torch.nn.functional.one_hot(idx, N_ACT).bool())
    out = loss(td)

    def q(i, target, obs):
        params = loss.target_qvalue_network_params if target else loss.qvalue_network_params
        net = loss.qvalue_network.nets[i]
        with params["nets", str(i)].to_module(net):
            all_q = net(TensorDict(observation=obs, batch_size=obs.shape[:1]))["action_value"]
        return all_q.gather(-1, idx.unsqueeze(-1))

    obs = td["observation"]
    with torch.no_grad():
        q_t = torch.min(q(0, True, obs), q(1, True, obs))
    v = v_net(obs)
    u = q_t - v
    value_loss = (torch.where(u < 0, 0.2, 0.8) * u**2).mean()
    logp = torch.log_softmax(actor_net(obs), -1).gather(-1, idx.unsqueeze(-1)).squeeze(-1)
    actor_loss = -(torch.exp(2.0 * u.detach().squeeze(-1)).clamp(max=100) * logp).mean()
    with torch.no_grad():
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * v_net(
            td["next", "observation"]
        )
    q_loss = sum((q(i, False, obs) - y).pow(2).mean() for i in range(2))
    torch.testing.assert_close(out["loss_value"], value_loss)
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    ap = list(actor_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(actor_loss, ap))


def _loss_and_nets(action_space, *, index_actor):
    """The loss (its actor scoring index actions when ``index_actor``), its Q and V nets."""
    actor, actor_net = categorical_actor()
    if index_actor:
        logits = TensorDictModule(actor_net, ["observation"], ["logits"])
        actor = ProbabilisticActor(
            logits, ["logits"], distribution_class=torch.distributions.Categorical
        )
    torch.manual_seed(5)
    q_net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    v_net = MLP(OBS, 1, depth=1, num_cells=16)
    loss = DiscreteIQLLoss(
        actor,
        TensorDictModule(q_net, ["observation"], ["action_value"]),
        ValueOperator(v_net, ["observation"]),
        action_space=action_space,
        expectile=0.8,
        gamma=0.9,
        loss_function="l2",
        delay_qvalue=False,
    )
    return loss, q_net, v_net


_IDX = torch.tensor([0, 3, 1, 1, 2, 0, 3, 2])


@pytest.mark.parametrize(
    ("action_space", "action"),
    [
        ("one-hot", torch.nn.functional.one_hot(_IDX, N_ACT).bool()),
        (OneHot(N_ACT), torch.nn.functional.one_hot(_IDX, N_ACT).bool()),
        ("categorical", _IDX),
        ("categorical", _IDX.unsqueeze(-1)),
        (Categorical(N_ACT), _IDX),
    ],
)
def test_discrete_iql_action_space(action_space, action):
    index_actor = action_space == "categorical" or isinstance(action_space, Categorical)
    loss, _, v_net = _loss_and_nets(action_space, index_actor=index_actor)
    td = offpolicy_batch(action=action)
    out = loss(td)
    obs = td["observation"]
    with torch.no_grad():
        q_data = [_q_of_index(loss, i, obs) for i in range(2)]
        u = torch.min(*q_data) - v_net(obs)
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * v_net(
            td["next", "observation"]
        )
    torch.testing.assert_close(
        out["loss_value"].detach(), (torch.where(u < 0, 0.2, 0.8) * u**2).mean()
    )
    q_loss = sum((q - y).pow(2).mean() for q in q_data)
    torch.testing.assert_close(out["loss_qvalue"].detach(), q_loss)


def _q_of_index(loss, i, obs):
    """Critic ``i``'s value of the action ``_IDX``, by index."""
    net = loss.qvalue_network.nets[i]
    with loss.qvalue_network_params["nets", str(i)].to_module(net):
        all_q = net(TensorDict(observation=obs, batch_size=obs.shape[:1]))["action_value"]
    return all_q.gather(-1, _IDX.unsqueeze(-1))


@pytest.mark.parametrize(
    ("action_space", "error", "match"),
    [
        ("binary", ValueError, r"expected action_space 'one_hot' .* got 'binary'"),
        (3, TypeError, r"expected action_space to be a string or a OneHot or Categorical spec"),
    ],
)
def test_discrete_iql_rejects_action_space(action_space, error, match):
    actor, _ = categorical_actor()
    q = TensorDictModule(MLP(OBS, N_ACT, num_cells=4), ["observation"], ["action_value"])
    v = ValueOperator(MLP(OBS, 1, num_cells=4), ["observation"])
    with pytest.raises(error, match=rf"DiscreteIQLLoss: {match}"):
        DiscreteIQLLoss(actor, q, v, action_space=action_space)


def test_discrete_iql_categorical_refuses_a_one_hot_action():
    loss, _, _ = _loss_and_nets("categorical", index_actor=True)
    td = offpolicy_batch(action=torch.nn.functional.one_hot(_IDX, N_ACT).float())
    with pytest.raises(ValueError, match=r"action_space='categorical' expects an integer"):
        loss(td)
