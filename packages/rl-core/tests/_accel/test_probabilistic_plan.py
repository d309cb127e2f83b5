"""PolicyCallPlan's ProbabilisticActor node against the generic call: same draws, same TensorDict.

The oracle is ``policy(td)`` itself under the same seed (every entry, the global RNG state the
call leaves behind), and the draws of a distribution built by hand from the network's output.
"""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, NormalParamExtractor, TensorDictModule, interaction_type
from torch import nn

from rl_core import ExplorationType, set_exploration_type
from rl_core._accel.seam import PolicyCallPlan
from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor, TanhNormal
from rl_core.specs import Bounded, Categorical, OneHot


def _obs(batch=6, features=3):
    torch.manual_seed(1)
    return TensorDict(observation=torch.randn(batch, features), batch_size=[batch])


def _same(policy, td, *, seed=0):
    """Generic call and plan on copies of ``td``: same entries and values, same RNG state
    afterwards."""
    plan = PolicyCallPlan(policy)
    generic_in, plan_in = td.clone(), td.clone()
    torch.manual_seed(seed)
    expected = policy(generic_in)
    after_generic = torch.rand(3)
    torch.manual_seed(seed)
    got = plan(plan_in)
    after_plan = torch.rand(3)
    assert got is plan_in
    assert expected is generic_in
    assert sorted(map(str, got.keys(True, True))) == sorted(map(str, expected.keys(True, True)))
    for key in expected.keys(True, True):
        a, b = got.get(key), expected.get(key)
        assert a.dtype == b.dtype, key
        torch.testing.assert_close(a, b, msg=str(key), rtol=0, atol=0)
    torch.testing.assert_close(after_plan, after_generic, rtol=0, atol=0)
    return plan, got


def _categorical_actor(dist_class=OneHotCategorical, spec=None, **kwargs):
    torch.manual_seed(0)
    net = TensorDictModule(MLP(3, 4, num_cells=[8]), ["observation"], ["logits"])
    return ProbabilisticActor(net, ["logits"], spec=spec, distribution_class=dist_class, **kwargs)


def _tanh_normal_actor(**kwargs):
    torch.manual_seed(0)
    net = TensorDictModule(
        nn.Sequential(MLP(3, 4, num_cells=[8]), NormalParamExtractor()),
        ["observation"],
        ["loc", "scale"],
    )
    return ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal, **kwargs)


CASES = {
    "OneHotCategorical": lambda **kw: _categorical_actor(OneHotCategorical, spec=OneHot(4), **kw),
    "torch Categorical (no rsample)": lambda **kw: _categorical_actor(
        torch.distributions.Categorical, spec=Categorical(4), **kw
    ),
    "TanhNormal(low, high)": lambda **kw: _tanh_normal_actor(
        distribution_kwargs={"low": -2.0, "high": 2.0}, spec=Bounded(-2.0, 2.0, (2,)), **kw
    ),
    "torch Normal": lambda **kw: ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(MLP(3, 4, num_cells=[8]), NormalParamExtractor()),
            ["observation"],
            ["loc", "scale"],
        ),
        ["loc", "scale"],
        distribution_class=torch.distributions.Normal,
        **kw,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("return_log_prob", [False, True])
def test_random_draws_equal_the_generic_call(case, return_log_prob):
    actor = CASES[case](return_log_prob=return_log_prob)
    with set_exploration_type(ExplorationType.RANDOM):
        plan, got = _same(actor, _obs(), seed=11)
    assert plan.fast
    assert ("action_log_prob" in got.keys()) is return_log_prob


def test_safe_actor_projects_as_the_generic_call():
    # A Normal sample well outside the spec's bounds: both paths clamp into [-0.1, 0.1] and
    # keep the log-probability of the unprojected draw.
    torch.manual_seed(0)
    net = TensorDictModule(
        nn.Sequential(MLP(3, 4, num_cells=[8]), NormalParamExtractor()), ["observation"],
        ["loc", "scale"],
    )  # fmt: skip
    actor = ProbabilisticActor(
        net, ["loc", "scale"], spec=Bounded(-0.1, 0.1, (2,)), safe=True,
        distribution_class=torch.distributions.Normal, return_log_prob=True,
    )  # fmt: skip
    with set_exploration_type(ExplorationType.RANDOM):
        _, got = _same(actor, _obs(batch=64), seed=2)
    assert got["action"].abs().max() <= 0.1
    assert (got["action"].abs() == 0.1).any()


def test_draws_match_a_distribution_built_by_hand():
    actor = _categorical_actor(return_log_prob=True)
    td = _obs()
    with torch.no_grad():
        logits = actor.module[0].module(td["observation"])
    torch.manual_seed(4)
    expected = OneHotCategorical(logits=logits).sample()
    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        torch.manual_seed(4)
        got = PolicyCallPlan(actor)(td)
    torch.testing.assert_close(got["action"], expected)
    log_softmax = logits.double().log_softmax(-1)
    torch.testing.assert_close(
        got["action_log_prob"].double(), (log_softmax * expected.double()).sum(-1)
    )


class _Recorder(nn.Module):
    """A network that records the interaction type it runs under."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 4)
        self.seen: list = []

    def forward(self, x):
        self.seen.append(interaction_type())
        return self.linear(x)


@pytest.mark.parametrize(
    "kind", [None, ExplorationType.DETERMINISTIC, ExplorationType.MODE, ExplorationType.MEAN]
)
def test_other_interaction_types_take_the_generic_call(kind):
    # Outside a RANDOM block the generic call sets the default type around the parameter
    # module (the network sees it); the plan must do the same, so it calls the actor.
    recorder = _Recorder()
    actor = ProbabilisticActor(
        TensorDictModule(recorder, ["observation"], ["logits"]), ["logits"],
        distribution_class=OneHotCategorical,
    )  # fmt: skip
    if kind is None:
        _same(actor, _obs())
    else:
        with set_exploration_type(kind):
            _same(actor, _obs())
    generic_seen, plan_seen = recorder.seen
    assert plan_seen == generic_seen
    expected = InteractionType.DETERMINISTIC if kind is None else kind
    assert plan_seen == expected


def test_configurations_off_the_short_path_call_the_actor():
    class MyActor(ProbabilisticActor):
        pass

    class MyOneHot(OneHotCategorical):
        """Defined outside torch and rl_core: its draws could be anything."""

    net = TensorDictModule(MLP(3, 4, num_cells=[8]), ["observation"], ["logits"])
    cases = {
        "subclass": lambda: MyActor(net, ["logits"], distribution_class=OneHotCategorical),
        "foreign distribution class": lambda: ProbabilisticActor(
            net, ["logits"], distribution_class=MyOneHot
        ),
        "num_samples": lambda: ProbabilisticActor(
            net, ["logits"], distribution_class=OneHotCategorical, num_samples=2
        ),
        "generator": lambda: ProbabilisticActor(
            net,
            ["logits"],
            distribution_class=OneHotCategorical,
            generator=torch.Generator().manual_seed(0),
        ),
    }
    with set_exploration_type(ExplorationType.RANDOM):
        for name, make in cases.items():
            plan = PolicyCallPlan(make())
            assert not plan.fast, name
            torch.manual_seed(0)
            expected = make()(_obs())
            torch.manual_seed(0)
            got = plan(_obs())
            for key in expected.keys(True, True):
                torch.testing.assert_close(got.get(key), expected.get(key), msg=f"{name} {key}")


def test_hooks_after_the_plan_is_built_are_honoured():
    actor = _categorical_actor(return_log_prob=True)
    plan = PolicyCallPlan(actor)
    actor.register_forward_hook(lambda mod, args, out: out.set("seen", torch.ones(6)))
    with set_exploration_type(ExplorationType.RANDOM):
        assert "seen" in plan(_obs()).keys()
    head = actor.module[-1]
    plain = _categorical_actor()
    plan = PolicyCallPlan(plain)
    plain.module[-1].register_forward_hook(lambda mod, args, out: out.set("head", torch.ones(6)))
    with set_exploration_type(ExplorationType.RANDOM):
        assert "head" in plan(_obs()).keys()
    del head


def test_errors_of_the_network_and_of_the_distribution_surface():
    wrong = ProbabilisticActor(
        TensorDictModule(nn.Linear(5, 4), ["observation"], ["logits"]), ["logits"],
        distribution_class=OneHotCategorical,
    )  # fmt: skip
    with set_exploration_type(ExplorationType.RANDOM):
        with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
            wrong(_obs())
        with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
            PolicyCallPlan(wrong)(_obs())
        nan = ProbabilisticActor(
            TensorDictModule(lambda x: x[..., :2] * float("nan"), ["observation"], ["logits"]),
            ["logits"], distribution_class=OneHotCategorical,
        )  # fmt: skip
        # Distribution argument checks are process-wide (torch.compile turns them off, and
        # other tests compile): the check on NaN logits needs them on.
        validating = torch.distributions.Distribution._validate_args
        torch.distributions.Distribution.set_default_validate_args(True)
        try:
            with pytest.raises(ValueError, match="logits"):
                nan(_obs())
            with pytest.raises(ValueError, match="logits"):
                PolicyCallPlan(nan)(_obs())
        finally:
            torch.distributions.Distribution.set_default_validate_args(validating)


def test_env_rollout_through_the_plan_matches_the_generic_call():
    from rl_core.testing import CountingEnv

    env = CountingEnv(max_count=5, start_high=3, batch_size=[3])
    torch.manual_seed(7)
    # Index actions of shape [3, 1]: logits [3, 1, 2], a torch Categorical (no rsample).
    net = nn.Sequential(MLP(1, 2, num_cells=[8]), nn.Unflatten(-1, (1, 2)))
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["logits"]),
        ["logits"],
        spec=env.action_spec,
        distribution_class=torch.distributions.Categorical,
        return_log_prob=True,
    )
    assert PolicyCallPlan(actor).fast
    runs = []
    for call in (actor, lambda td: actor(td)):  # the plan's node, then the generic call
        env.set_seed(1)
        torch.manual_seed(0)
        with set_exploration_type(ExplorationType.RANDOM):
            runs.append(env.rollout(30, call, break_when_any_done=False))
    got, expected = runs
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        torch.testing.assert_close(got.get(key), expected.get(key), msg=str(key), rtol=0, atol=0)
