"""PolicyCallPlan against the generic call: the same TensorDict for every kind of policy."""

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.nn import (
    TensorDictModule,
    TensorDictSequential,
    set_skip_existing,
)
from torch import nn

from rl_core import ExplorationType, set_exploration_type
from rl_core._accel.seam import PolicyCallPlan
from rl_core.modules import (
    MLP,
    Actor,
    EGreedyModule,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    TanhNormal,
    ValueOperator,
)
from rl_core.specs import Bounded, Categorical, OneHot


def _obs(batch=4, features=3, **extra):
    torch.manual_seed(1)
    return TensorDict(observation=torch.randn(batch, features), **extra, batch_size=[batch])


def _same(policy, td, *, seed=0, expect_fast=None):
    """Runs the generic call and the plan on copies of ``td``: same entries, same values,
    same identity of the result (the input itself or another TensorDict)."""
    plan = PolicyCallPlan(policy)
    if expect_fast is not None:
        assert plan.fast is expect_fast
    generic_in, plan_in = td.clone(), td.clone()
    torch.manual_seed(seed)
    expected = policy(generic_in)
    torch.manual_seed(seed)
    got = plan(plan_in)
    assert (got is plan_in) == (expected is generic_in)
    assert sorted(map(str, got.keys(True, True))) == sorted(map(str, expected.keys(True, True)))
    for key in expected.keys(True, True):
        a, b = got.get(key), expected.get(key)
        assert a.dtype == b.dtype, key
        torch.testing.assert_close(a, b, msg=str(key), equal_nan=True)
    # The input the generic call left behind is the one the plan leaves behind.
    assert sorted(map(str, plan_in.keys(True, True))) == sorted(
        map(str, generic_in.keys(True, True))
    )
    return got


@pytest.mark.parametrize(
    "spec", [OneHot(3), OneHot(3, dtype=torch.int64), Categorical(3), Categorical(3, shape=(1,))]
)
def test_qvalue_actor_takes_the_fast_path_with_the_same_output(spec):
    actor = QValueActor(MLP(3, 3, num_cells=[8]), spec=spec)
    _same(actor, _obs(), expect_fast=True)


def test_qvalue_actor_with_a_mask_and_nested_keys():
    net = TensorDictModule(MLP(3, 3, num_cells=[8]), [("agent", "obs")], [("agent", "values")])
    actor = QValueActor(
        net, spec=OneHot(3), action_value_key=("agent", "values"), action_mask_key="mask"
    )
    td = TensorDict(
        agent=TensorDict(obs=torch.randn(4, 3), batch_size=[4]),
        mask=torch.tensor([[True, False, True]] * 4),
        batch_size=[4],
    )
    got = _same(actor, td, expect_fast=True)
    assert not got["action"][:, 1].any()


def test_plain_module_forms_of_output():
    two = TensorDictModule(lambda x: (x + 1, x * 2), ["observation"], ["a", ("n", "b")])
    _same(two, _obs(), expect_fast=True)
    as_dict = TensorDictModule(lambda x: {"a": x + 1, "b": x - 1}, ["observation"], ["a", "b"])
    _same(as_dict, _obs(), expect_fast=True)
    ignored = TensorDictModule(lambda x: (x + 1, x * 2), ["observation"], ["_", "b"])
    _same(ignored, _obs(), expect_fast=True)
    as_td = TensorDictModule(
        lambda x: TensorDict(c=x, batch_size=x.shape[:1]), ["observation"], ["c"]
    )
    _same(as_td, _obs(), expect_fast=True)


def test_value_operator_and_actor_with_projection():
    _same(ValueOperator(MLP(3, 1, num_cells=[4])), _obs(), expect_fast=True)
    actor = Actor(lambda x: 10 * x, spec=Bounded(-1.0, 1.0, shape=(3,)), safe=True)
    got = _same(actor, _obs(), expect_fast=True)
    assert got["action"].abs().max() <= 1.0


def test_hooks_added_after_the_plan_is_built_are_honoured():
    module = TensorDictModule(nn.Linear(3, 2), ["observation"], ["action"])
    plan = PolicyCallPlan(module)
    module.register_forward_hook(lambda mod, args, out: out.set("hooked", out["action"] * 0))
    pre = module.register_forward_pre_hook(lambda mod, args: None)
    got = plan(_obs())
    assert "hooked" in got.keys()
    pre.remove()
    _same(module, _obs())
    # A hook on the network itself runs on the fast path too (the network is called).
    inner = TensorDictModule(nn.Linear(3, 2), ["observation"], ["action"])
    inner.module.register_forward_hook(lambda mod, args, out: out + 100)
    assert PolicyCallPlan(inner)(_obs())["action"].min() > 50
    _same(inner, _obs(), expect_fast=True)


def test_a_global_module_hook_takes_the_generic_path():
    calls = []
    handle = nn.modules.module.register_module_forward_hook(
        lambda mod, args, out: calls.append(type(mod).__name__)
    )
    try:
        module = TensorDictModule(nn.Linear(3, 2), ["observation"], ["action"])
        PolicyCallPlan(module)(_obs())
    finally:
        handle.remove()
    assert "TensorDictModule" in calls


def test_subclasses_and_instance_forwards_are_called_as_they_are():
    class Doubling(TensorDictModule):
        def forward(self, tensordict):
            out = super().forward(tensordict)
            return out.set("action", out["action"] * 2)

    sub = Doubling(nn.Linear(3, 2), ["observation"], ["action"])
    _same(sub, _obs(), expect_fast=False)
    module = TensorDictModule(nn.Linear(3, 2), ["observation"], ["action"])
    plain = module.forward
    module.forward = lambda td: plain(td).set("extra", torch.ones(4))
    got = PolicyCallPlan(module)(_obs())
    assert "extra" in got.keys()


def test_selected_out_keys_and_other_configurations():
    module = TensorDictModule(lambda x: (x + 1, x + 2), ["observation"], ["a", "b"])
    module.select_out_keys("b")
    _same(module, _obs())
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, ["observation"], ["a"]),
        TensorDictModule(lambda a: a + 1, ["a"], ["b"]),
        selected_out_keys=["b"],
    )
    _same(seq, _obs(), expect_fast=False)
    not_inplace = TensorDictModule(lambda x: x + 1, ["observation"], ["a"], inplace=False)
    _same(not_inplace, _obs(), expect_fast=False)
    by_name = TensorDictModule(lambda x: x + 1, in_keys={"x": "observation"}, out_keys=["a"])
    _same(by_name, _obs(), expect_fast=False)


@pytest.mark.parametrize("inplace", [None, True])
def test_sequence_with_a_module_returning_another_tensordict(inplace):
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, ["observation"], ["a"], inplace=False),
        TensorDictModule(lambda a: a * 3, ["a"], ["b"]),
        inplace=inplace,
    )
    _same(seq, _obs(), expect_fast=True)


def test_nested_sequences_with_exploration():
    actor = QValueActor(MLP(3, 3, num_cells=[8]), spec=OneHot(3))
    explore = EGreedyModule(OneHot(3), eps_init=0.5, eps_end=0.5)
    policy = TensorDictSequential(
        TensorDictSequential(actor, explore),
        TensorDictModule(lambda a: a.float().sum(-1, keepdim=True), ["action"], ["n"]),
    )
    for kind in (ExplorationType.RANDOM, ExplorationType.DETERMINISTIC):
        with set_exploration_type(kind):
            _same(policy, _obs(batch=64), seed=3, expect_fast=True)


@pytest.mark.parametrize(
    "kind",
    [
        ExplorationType.RANDOM,
        ExplorationType.DETERMINISTIC,
        ExplorationType.MODE,
        ExplorationType.MEAN,
    ],
)
def test_probabilistic_actor_under_each_exploration_type(kind):
    from tensordict.nn import NormalParamExtractor

    net = TensorDictModule(
        nn.Sequential(MLP(3, 4, num_cells=[8]), NormalParamExtractor()),
        ["observation"],
        ["loc", "scale"],
    )
    actor = ProbabilisticActor(
        net, ["loc", "scale"], distribution_class=TanhNormal, return_log_prob=True
    )
    with set_exploration_type(kind):
        _same(actor, _obs(), seed=5)


def test_missing_inputs_and_failing_networks_raise_as_the_generic_call():
    module = TensorDictModule(nn.Linear(3, 2), ["missing"], ["action"])
    with pytest.raises(KeyError, match=r"inputs are None: \{'missing'\}"):
        module(_obs())
    with pytest.raises(KeyError, match=r"inputs are None: \{'missing'\}"):
        PolicyCallPlan(module)(_obs())
    strict = TensorDictModule(nn.Linear(3, 2), ["missing"], ["action"], strict=True)
    with pytest.raises(KeyError, match="missing"):
        PolicyCallPlan(strict)(_obs())
    wrong = TensorDictModule(nn.Linear(5, 2), ["observation"], ["action"])
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied") as info:
        PolicyCallPlan(wrong)(_obs())
    assert "TensorDictModule failed" in str(info.value.__cause__)
    seq = TensorDictSequential(TensorDictModule(lambda x: x, ["observation"], ["a"]), wrong)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied") as info:
        PolicyCallPlan(seq)(_obs())
    assert "Failed while executing module '1'." in info.value.__notes__
    too_many = TensorDictModule(lambda x: (x, x), ["observation"], ["a"])
    with pytest.raises(RuntimeError, match="more tensors"):
        PolicyCallPlan(too_many)(_obs())


def test_skip_existing_and_lazy_stacks_take_the_generic_path():
    module = TensorDictModule(lambda x: x + 1, ["observation"], ["observation2"])
    td = _obs(observation2=torch.zeros(4, 3))
    with set_skip_existing(True):
        got = _same(module, td)
    assert (got["observation2"] == 0).all()
    stacked = LazyStackedTensorDict.lazy_stack([_obs(), _obs()], 0)
    expected = module(stacked.clone())
    got = PolicyCallPlan(module)(stacked.clone())
    torch.testing.assert_close(got["observation2"], expected["observation2"])


def test_qvalue_module_alone_and_with_a_hook():
    module = QValueModule(OneHot(3))
    td = TensorDict(action_value=torch.randn(4, 3), batch_size=[4])
    _same(module, td, expect_fast=True)
    module.register_forward_hook(lambda mod, args, out: out.set("seen", torch.ones(4)))
    assert "seen" in PolicyCallPlan(module)(td.clone()).keys()


def test_plain_callables_and_bad_input():
    plan = PolicyCallPlan(lambda td: td.set("action", td["observation"] * 0))
    assert not plan.fast
    assert (plan(_obs())["action"] == 0).all()
    assert repr(plan) == "PolicyCallPlan(function, fast=False)"
    with pytest.raises(TypeError, match=r"PolicyCallPlan: expected a callable policy.*int"):
        PolicyCallPlan(3)


def test_env_rollout_through_the_plan_matches_the_generic_call():
    from rl_core.testing import CountingEnv

    torch.manual_seed(7)
    env = CountingEnv(max_count=5, start_high=3, batch_size=[3])
    actor = QValueActor(MLP(1, 2, num_cells=[8]), spec=env.action_spec)
    policy = TensorDictSequential(actor, EGreedyModule(env.action_spec, eps_init=0.4))
    runs = []
    for call in (policy, lambda td: policy(td)):  # the plan's fast path, then the generic call
        env.set_seed(1)
        torch.manual_seed(0)
        with set_exploration_type(ExplorationType.RANDOM):
            runs.append(env.rollout(30, call, break_when_any_done=False))
    got, expected = runs
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        torch.testing.assert_close(got.get(key), expected.get(key), msg=str(key))


def test_readme_section_example_runs(tmp_path):
    from pathlib import Path

    from testkit.readme import run_readme_example

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("## Calling a policy fast", 1)[1].split("\n## ", 1)[0]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    readme = tmp_path / "README.md"
    readme.write_text(f"## Example\n\n```python\n{block}```\n")
    assert run_readme_example(readme) == ["True", "True"]
