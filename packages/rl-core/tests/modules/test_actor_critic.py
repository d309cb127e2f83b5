import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import (
    NormalParamExtractor,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictSequential,
)
from torch import distributions as D
from torch import nn

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.modules import (
    MLP,
    Actor,
    ActorCriticOperator,
    ActorCriticWrapper,
    ActorValueOperator,
    ProbabilisticActor,
    ValueOperator,
)


def _trunk():
    return TensorDictModule(MLP(3, 8, depth=1, num_cells=8), ["observation"], ["hidden"])


def _td(n=5):
    return TensorDict(observation=torch.randn(n, 3), batch_size=[n])


def _prob_head():
    net = nn.Sequential(nn.Linear(8, 4), NormalParamExtractor())
    params = TensorDictModule(net, ["hidden"], ["loc", "scale"])
    return ProbabilisticActor(
        params, ["loc", "scale"], distribution_class=D.Normal, return_log_prob=True
    )


def test_actor_value_operator_runs_all_and_parts_share_modules():
    torch.manual_seed(0)
    trunk = _trunk()
    op = ActorValueOperator(
        trunk,
        Actor(nn.Linear(8, 2), in_keys=["hidden"]),
        ValueOperator(nn.Linear(8, 1), in_keys=["hidden"]),
    )
    td = op(_td())
    assert {"hidden", "action", "state_value"} <= set(td.keys())
    policy, value = op.get_policy_operator(), op.get_value_operator()
    assert isinstance(policy, TensorDictSequential)
    torch.testing.assert_close(policy(td.select("observation"))["action"], td["action"])
    torch.testing.assert_close(value(td.select("observation"))["state_value"], td["state_value"])
    assert "action" not in value(td.select("observation"))
    assert policy.module[0] is trunk
    assert value.module[0] is trunk
    assert op.get_common_operator() is trunk
    # one optimisation step through the policy operator changes the value operator too
    before = value(td.select("observation"))["state_value"].clone()
    policy(td.select("observation"))["action"].sum().backward()
    with torch.no_grad():
        for p in trunk.parameters():
            p -= 0.1 * p.grad
    assert not torch.allclose(value(td.select("observation"))["state_value"], before)


def test_actor_value_operator_with_probabilistic_head():
    op = ActorValueOperator(
        _trunk(), _prob_head(), ValueOperator(nn.Linear(8, 1), in_keys=["hidden"])
    )
    policy = op.get_policy_operator()
    assert isinstance(policy, ProbabilisticTensorDictSequential)
    td = _td()
    dist = policy.get_dist(td.clone())
    assert isinstance(dist, D.Normal)
    with set_exploration_type(ExplorationType.RANDOM):
        out = op(td.clone())
    assert {"action", "action_log_prob", "state_value"} <= set(out.keys())
    with set_exploration_type(ExplorationType.MEAN):
        torch.testing.assert_close(policy(td.clone())["action"], dist.mean)
    assert op.get_policy_head() is op.module[1]
    assert op.get_value_head() is op.module[2]


def test_actor_critic_operator_value_reads_action_from_input():
    torch.manual_seed(0)
    op = ActorCriticOperator(
        _trunk(),
        Actor(nn.Linear(8, 2), in_keys=["hidden"]),
        ValueOperator(MLP(10, 1, depth=0), in_keys=["hidden", "action"]),
    )
    td = op(_td())
    assert td["state_action_value"].shape == (5, 1)
    assert op.get_critic_operator() is op
    replay = td.select("observation").set("action", torch.randn(5, 2))
    q = op.get_value_operator()(replay.clone())
    hidden = op.get_common_operator()(replay.clone())["hidden"]
    torch.testing.assert_close(
        q["state_action_value"], op.get_value_head().module(hidden, replay["action"])
    )
    assert not torch.allclose(q["state_action_value"], td["state_action_value"])


def test_actor_critic_wrapper():
    actor = Actor(nn.Linear(3, 2))
    critic = ValueOperator(MLP(5, 1, depth=0), in_keys=["observation", "action"])
    ac = ActorCriticWrapper(actor, critic)
    td = ac(_td())
    assert td["state_action_value"].shape == (5, 1)
    assert ac.get_policy_operator() is actor
    assert ac.get_value_operator() is critic
    assert ac.get_policy_head() is actor


def test_plain_modules_are_rejected():
    with pytest.raises(TypeError, match="ActorValueOperator: expected value_operator to be a"):
        ActorValueOperator(_trunk(), Actor(nn.Linear(8, 2), in_keys=["hidden"]), nn.Linear(8, 1))
    with pytest.raises(TypeError, match="ActorCriticWrapper: expected policy_operator"):
        ActorCriticWrapper(nn.Linear(3, 2), ValueOperator(nn.Linear(3, 1)))
