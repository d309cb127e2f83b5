import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import distributions as D
from torch import nn

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.modules import MLP, Actor, ProbabilisticActor, ValueOperator
from rl_core.specs import Bounded, Composite


def _obs(batch=(6,), n_obs=3):
    return TensorDict(observation=torch.randn(*batch, n_obs), batch_size=batch)


def _normal_actor(**kwargs):
    net = nn.Sequential(MLP(3, 4, depth=1, num_cells=8), NormalParamExtractor())
    params = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(
        params, in_keys=["loc", "scale"], distribution_class=D.Normal, **kwargs
    )


def test_actor_writes_action_from_observation():
    torch.manual_seed(0)
    net = MLP(3, 2, depth=1, num_cells=8)
    actor = Actor(net)
    td = _obs()
    out = actor(td)
    assert out is td
    torch.testing.assert_close(td["action"], net(td["observation"]))
    assert actor.in_keys == ["observation"]
    assert actor.out_keys == ["action"]


def test_none_keys_mean_the_default_keys_as_in_torchrl():
    net = MLP(3, 2, depth=0)
    actor = Actor(net, in_keys=None, out_keys=None)
    assert actor.in_keys == ["observation"]
    assert actor.out_keys == ["action"]
    value = ValueOperator(MLP(3, 1, depth=0), in_keys=None)
    assert value.in_keys == ["observation"]
    assert value.out_keys == ["state_value"]
    assert _normal_actor(out_keys=None).out_keys[-1] == "action"
    with pytest.raises(ValueError, match=r"Actor: in_keys must name at least one key"):
        Actor(net, in_keys=[])


def test_actor_custom_and_nested_keys():
    actor = Actor(MLP(3, 2, depth=0), in_keys=("agents", "observation"), out_keys="act")
    td = TensorDict(
        agents=TensorDict(observation=torch.zeros(4, 3), batch_size=[4]), batch_size=[4]
    )
    assert actor(td)["act"].shape == (4, 2)
    with pytest.raises(ValueError, match="Actor: in_keys must name at least one key"):
        Actor(MLP(3, 2, depth=0), in_keys=[])


def test_actor_accepts_tensors_as_keyword_arguments():
    actor = Actor(MLP(3, 2, depth=0))
    assert actor(observation=torch.zeros(5, 3)).shape == (5, 2)


def test_probabilistic_actor_follows_the_exploration_type():
    torch.manual_seed(0)
    actor = _normal_actor(return_log_prob=True)
    td = _obs(batch=(1000,))
    td["observation"] = torch.zeros_like(td["observation"])
    loc = actor.get_dist_params(td.clone())["loc"]
    # default: DETERMINISTIC -> the mean of the normal
    torch.testing.assert_close(actor(td.clone())["action"], loc)
    for kind in (ExplorationType.DETERMINISTIC, ExplorationType.MODE, ExplorationType.MEAN):
        with set_exploration_type(kind):
            torch.testing.assert_close(actor(td.clone())["action"], loc)
    with set_exploration_type(ExplorationType.RANDOM):
        out = actor(td.clone())
    assert (out["action"] - loc).std() > 0.1
    dist = D.Normal(out["loc"], out["scale"])
    torch.testing.assert_close(out["action_log_prob"], dist.log_prob(out["action"]))


def test_probabilistic_actor_default_random_and_get_dist():
    actor = _normal_actor(default_interaction_type=ExplorationType.RANDOM)
    td = _obs()
    dist = actor.get_dist(td.clone())
    assert isinstance(dist, D.Normal)
    assert dist.batch_shape == (6, 2)
    a1, a2 = actor(td.clone())["action"], actor(td.clone())["action"]
    assert not torch.equal(a1, a2)
    assert "action" in actor.out_keys


def test_probabilistic_actor_with_dict_in_keys_and_kwargs():
    params = TensorDictModule(nn.Linear(3, 2), in_keys=["observation"], out_keys=[("params", "mu")])
    actor = ProbabilisticActor(
        params,
        in_keys={"loc": ("params", "mu")},
        distribution_class=D.Normal,
        distribution_kwargs={"scale": 1.0},
    )
    td = actor(_obs())
    torch.testing.assert_close(td["action"], td["params", "mu"])


def test_probabilistic_actor_rejects_a_plain_module():
    with pytest.raises(TypeError, match=r"expected module to be a TensorDict module.*got Linear"):
        ProbabilisticActor(nn.Linear(3, 2), in_keys=["loc"])


def test_value_operator_default_out_keys():
    v = ValueOperator(MLP(3, 1, depth=0))
    assert v.out_keys == ["state_value"]
    assert v(_obs())["state_value"].shape == (6, 1)
    q = ValueOperator(MLP(5, 1, depth=0), in_keys=["observation", "action"])
    assert q.out_keys == ["state_action_value"]
    td = _obs()
    td["action"] = torch.randn(6, 2)
    torch.testing.assert_close(
        q(td)["state_action_value"], q.module(td["observation"], td["action"])
    )
    custom = ValueOperator(MLP(3, 4, depth=0), out_keys=["action_value"])
    assert custom(_obs())["action_value"].shape == (6, 4)


def test_actor_safe_projects_into_a_bounded_spec():
    spec = Bounded(-1.0, 1.0, shape=(2,))
    actor = Actor(nn.Linear(3, 2), spec=spec, safe=True)
    with torch.no_grad():
        actor.module.weight.fill_(10.0)
    td = actor(_obs())
    assert td["action"].abs().max().item() == pytest.approx(1.0)
    assert actor.spec["action"] == spec
    unsafe = Actor(actor.module, spec=spec)
    assert unsafe(_obs())["action"].abs().max() > 1.0
    assert isinstance(unsafe.spec, Composite)


def test_actor_safe_with_a_composite_and_batched_spec():
    spec = Composite({("agents", "action"): Bounded(0.0, 1.0, shape=(4, 2))}, shape=(4,))
    actor = Actor(
        lambda obs: obs - 0.5,
        in_keys=[("agents", "observation")],
        out_keys=[("agents", "action")],
        spec=spec,
        safe=True,
    )
    agents = TensorDict(observation=torch.randn(7, 4, 2) * 5, batch_size=[7, 4])
    td = actor(TensorDict(agents=agents, batch_size=[7, 4]))
    action = td["agents", "action"]
    assert action.min() >= 0.0
    assert action.max() <= 1.0
    torch.testing.assert_close(action, (agents["observation"] - 0.5).clamp(0, 1))


def test_probabilistic_actor_safe_clamps_samples():
    torch.manual_seed(0)
    spec = Bounded(-0.5, 0.5, shape=(2,))
    actor = _normal_actor(spec=spec, safe=True, return_log_prob=True)
    with set_exploration_type(ExplorationType.RANDOM):
        td = actor(_obs(batch=(500,)))
    assert td["action"].abs().max().item() == pytest.approx(0.5)
    assert actor.spec["action"] == spec
    assert td["action_log_prob"].shape == (500, 2)


def test_safe_without_spec_is_an_error():
    with pytest.raises(ValueError, match="Actor: safe=True projects the outputs into the spec"):
        Actor(MLP(3, 2, depth=0), safe=True)
    with pytest.raises(ValueError, match="ProbabilisticActor: safe=True"):
        _normal_actor(safe=True)
    with pytest.raises(TypeError, match="expected spec to be a TensorSpec"):
        Actor(MLP(3, 2, depth=0), spec="bounded")
