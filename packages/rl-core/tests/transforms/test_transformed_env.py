import pytest
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import StepPlan, check_env_specs
from rl_core.envs._plans import active_plan
from rl_core.specs import Bounded, Categorical, Composite, Unbounded
from rl_core.testing import CountingEnv
from rl_core.transforms import (
    Compose,
    InitTracker,
    StepCounter,
    Transform,
    TransformedEnv,
)


class Scale(Transform):
    """Multiplies observations by `factor` and divides actions by it on the way in."""

    def __init__(self, factor, in_keys=("observation",), in_keys_inv=()):
        super().__init__(in_keys=list(in_keys), in_keys_inv=list(in_keys_inv))
        self.factor = factor

    def _apply_transform(self, value):
        return value * self.factor

    def _inv_apply_transform(self, value):
        return value / self.factor

    def transform_observation_spec(self, spec):
        for key in self.in_keys:
            spec[key] = Unbounded(shape=spec[key].shape, dtype=spec[key].dtype)
        return spec


class RecordingParent(Transform):
    def transform_observation_spec(self, spec):
        self.seen_keys = sorted(self.parent.observation_keys)
        return spec


class _FloatActionEnv(CountingEnv):
    """CountingEnv with a continuous action in [0, 1]."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.action_spec = Bounded(0.0, 1.0, shape=(*self.batch_size, 1))
        self.received = []

    def _step(self, td):
        self.received.append(td["action"].clone())
        return super()._step(td)


def test_single_transform_forward_and_reset():
    env = TransformedEnv(CountingEnv(max_count=100), Scale(10.0))
    td = env.reset()
    assert td["observation"].item() == 0.0
    td = env.step(td.set("action", torch.ones(1, dtype=torch.int64)))
    assert td["next", "observation"].item() == 10.0


def test_inverse_path_feeds_the_base_env_and_keeps_the_policy_action():
    base = _FloatActionEnv(max_count=100)
    env = TransformedEnv(base, Scale(4.0, in_keys=(), in_keys_inv=("action",)))
    td = env.reset().set("action", torch.full((1,), 2.0))
    env.step(td)
    assert base.received[-1].item() == 0.5
    assert td["action"].item() == 2.0


def test_specs_follow_the_transform_list():
    env = TransformedEnv(CountingEnv())
    assert "step_count" not in env.observation_keys
    env.append_transform(StepCounter(max_steps=3))
    assert "step_count" in env.observation_keys
    env.insert_transform(0, InitTracker())
    assert isinstance(env.transform[0], InitTracker)
    assert "is_init" in env.observation_keys
    popped = env.transform.pop(0)
    assert isinstance(popped, InitTracker)
    assert popped.container is None
    assert "is_init" not in env.observation_keys
    assert env.base_env.observation_keys == ["observation"]


def test_append_transform_on_a_base_env_returns_a_transformed_env():
    env = CountingEnv().append_transform(StepCounter())
    assert isinstance(env, TransformedEnv)
    again = env.append_transform(InitTracker())
    assert again is env
    assert [type(t).__name__ for t in env.transform] == ["StepCounter", "InitTracker"]


def test_parent_is_the_env_up_to_the_transform():
    recorder = RecordingParent()
    env = TransformedEnv(CountingEnv(), Compose(InitTracker(), recorder, StepCounter()))
    _ = env.observation_spec  # computes specs, which asks recorder.parent
    assert recorder.seen_keys == ["is_init", "observation"]
    assert env.transform[0].parent is env.base_env
    assert isinstance(recorder.parent, TransformedEnv)
    assert recorder.container is env.transform


def test_a_transform_belongs_to_one_env():
    t = StepCounter()
    TransformedEnv(CountingEnv(), t)
    with pytest.raises(
        ValueError,
        match=r"StepCounter: this transform already belongs to a TransformedEnv of an env; "
        r".*clone\(\)",
    ):
        TransformedEnv(CountingEnv(), t)
    TransformedEnv(CountingEnv(), t.clone())


def test_a_transform_outside_any_env_may_join_another_compose_as_in_torchrl():
    t = StepCounter(max_steps=2)
    Compose(t)
    env = TransformedEnv(CountingEnv(), Compose(t))
    assert env.transform[0] is t
    assert env.rollout(5)["next", "step_count"].squeeze(-1).tolist() == [1, 2]
    with pytest.raises(ValueError, match="already belongs to a Compose of an env"):
        Compose(t)


def test_auto_unwrap_merges_the_inner_transforms():
    inner = TransformedEnv(CountingEnv(), InitTracker())
    nested = TransformedEnv(inner, StepCounter())
    assert nested.base_env is inner
    merged = TransformedEnv(inner, Compose(StepCounter(max_steps=3)), auto_unwrap=True)
    assert type(merged.base_env) is CountingEnv
    assert [type(t).__name__ for t in merged.transform] == ["InitTracker", "StepCounter"]
    assert merged.transform[0] is not inner.transform  # a clone: the inner env keeps its own
    traj = merged.rollout(5)
    assert traj["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3]
    assert traj["is_init"].squeeze(-1).tolist() == [True, False, False]


def test_specs_cannot_be_set_on_a_transformed_env():
    env = TransformedEnv(CountingEnv(), StepCounter())
    with pytest.raises(AttributeError, match="set them on the base env"):
        env.observation_spec = Composite()


def test_attribute_lookup_falls_back_to_the_base_env():
    env = TransformedEnv(CountingEnv(max_count=7), StepCounter())
    assert env.max_count == 7
    with pytest.raises(AttributeError):
        _ = env.not_an_attribute


def test_transformed_env_passes_check_env_specs_and_partial_resets():
    env = TransformedEnv(
        CountingEnv(max_count=100, batch_size=[3]),
        Compose(StepCounter(max_steps=50), InitTracker(), Scale(2.0)),
    )
    check_env_specs(env, seed=0)
    td = env.reset()
    for _ in range(3):
        _, td = env.step_and_maybe_reset(env.rand_action(td))
    td["_reset"] = torch.tensor([[True], [False], [False]])
    before = td.clone()
    out = env.reset(td)
    assert out["step_count"].squeeze(-1).tolist() == [0, 3, 3]
    assert out["is_init"].squeeze(-1).tolist() == [True, False, False]
    assert torch.equal(out["observation"][1:], before["observation"][1:])


class Repeat(Transform):
    """Shows the observation repeated `n` times along its last dim (a shape change in place)."""

    def __init__(self, n):
        super().__init__(in_keys=["observation"])
        self.n = n

    def _apply_transform(self, value):
        return value.repeat_interleave(self.n, -1)

    def transform_observation_spec(self, spec):
        old = spec["observation"]
        spec["observation"] = Unbounded(
            shape=(*old.shape[:-1], old.shape[-1] * self.n), dtype=old.dtype
        )
        return spec


def test_partial_reset_with_an_in_place_shape_change():
    # The base env must not be handed the transformed entries (other shapes) to merge.
    env = TransformedEnv(CountingEnv(max_count=100, batch_size=[3]), Repeat(4))
    td = env.reset()
    td["observation"] = torch.arange(1.0, 13.0).reshape(3, 4)
    td["_reset"] = torch.tensor([[True], [False], [True]])
    out = env.reset(td)
    assert out["observation"].shape == (3, 4)
    assert out["observation"][[0, 2]].eq(0).all()
    assert out["observation"][1].tolist() == [5.0, 6.0, 7.0, 8.0]


def test_transforms_run_on_plain_tensordicts():
    t = Compose(Scale(3.0), Scale(2.0, in_keys=("other",)))
    td = t(TensorDict(observation=torch.ones(4, 1), other=torch.ones(4, 1), batch_size=[4]))
    assert (td["observation"] == 3).all()
    assert (td["other"] == 2).all()


def test_compose_inverse_runs_in_reverse_order():
    calls = []

    class Tag(Transform):
        def __init__(self, name):
            super().__init__(in_keys_inv=["action"])
            self.name = name

        def _inv_call(self, td: TensorDictBase) -> TensorDictBase:
            calls.append(self.name)
            return td

    t = Compose(Tag("inner"), Tag("outer"))
    t.inv(TensorDict(action=torch.zeros(1)))
    assert calls == ["outer", "inner"]


def test_done_flags_keep_their_meaning_through_transforms():
    env = TransformedEnv(CountingEnv(max_count=2), StepCounter(max_steps=10))
    traj = env.rollout(5, lambda td: td.set("action", torch.ones(1, dtype=torch.int64)))
    assert traj["next", "terminated"][-1].item()
    assert not traj["next", "truncated"].any()


def test_bad_transform_arguments():
    with pytest.raises(
        ValueError,
        match=r"Transform: expected as many out_keys as in_keys, got 1 out_keys for 2 in_keys",
    ):
        Transform(in_keys=["a", "b"], out_keys=["c"])
    with pytest.raises(TypeError, match=r"in_keys must be a key or a list of keys .* got 3"):
        Transform(in_keys=[3])
    with pytest.raises(TypeError, match=r"TransformedEnv: expected an EnvBase, got int"):
        TransformedEnv(3)
    with pytest.raises(TypeError, match=r"Compose: expected Transform objects, got int"):
        Compose(3)
    with pytest.raises(NotImplementedError, match=r"Transform maps no single tensor"):
        Transform(in_keys=["a"])(TensorDict(a=torch.zeros(1)))


def test_categorical_spec_untouched_by_unrelated_transform():
    env = TransformedEnv(CountingEnv(), InitTracker())
    assert isinstance(env.action_spec, Categorical)


class ServeReset(Transform):
    """Stands in for the base env's reset once a value is stored (an intercepting transform)."""

    def __init__(self):
        super().__init__()
        self.stored = None

    def intercept_reset(self, tensordict):
        out, self.stored = self.stored, None
        return out


class CountResets(CountingEnv):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.resets = 0

    def _reset(self, tensordict, **kwargs):
        self.resets += 1
        return super()._reset(tensordict, **kwargs)


def test_intercept_reset_replaces_the_base_reset_and_the_other_transforms_still_run():
    serve = ServeReset()
    env = TransformedEnv(CountResets(max_count=100), Compose(serve, StepCounter()))
    td = env.reset()
    assert env.base_env.resets == 1
    td = env.step(td.set("action", torch.ones(1, dtype=torch.int64)))
    serve.stored = TensorDict(observation=torch.full((1,), 7.0))
    out = env.reset()
    assert env.base_env.resets == 1  # not reset: the transform answered
    assert out["observation"].item() == 7.0
    assert out["step_count"].item() == 0  # StepCounter's _reset ran on the served output
    assert not out["done"].item()  # missing done flags are filled in as False
    env.reset()  # nothing stored: the base env resets
    assert env.base_env.resets == 2


def test_intercept_reset_default_and_compose():
    assert StepCounter().intercept_reset(None) is None
    first, second = ServeReset(), ServeReset()
    first.stored = TensorDict(observation=torch.ones(1))
    second.stored = TensorDict(observation=torch.zeros(1))
    compose = Compose(first, second)
    assert compose.intercept_reset(None)["observation"].item() == 1.0
    assert second.stored is not None  # not asked: the first transform answered


class _StatefulCounter(CountingEnv):
    """CountingEnv whose count lives in the env (its step reads only the action, and says so)
    and which has its own random-action loop (here the generic loop itself), so that a
    TransformedEnv over it replays its transforms on that loop's trajectory."""

    def _reset(self, tensordict, **kwargs):
        out = super()._reset(tensordict, **kwargs)
        count = out.get("observation")
        if tensordict is not None and "_reset" in tensordict.keys():
            mask = tensordict.get("_reset")
            count = torch.where(mask, count, self.count)
        self.count = count
        return out.set("observation", count.clone())

    def _step(self, tensordict):
        tensordict = tensordict.clone(False).set("observation", self.count)
        out = super()._step(tensordict)
        self.count = out.get("observation")
        return out

    def _make_step_plan(self):
        return _LoopPlan(self)


class _LoopPlan(StepPlan):
    """The plan of ``_StatefulCounter``: its step reads only the action, and its random
    rollouts run the generic loop with an explicit random policy."""

    reads_actions_only = True

    def random_rollout(self, start, max_steps, *, break_when_any_done, break_when_all_done):
        env = self.env
        return env.rollout(
            max_steps,
            env.rand_action,
            auto_reset=False,
            tensordict=start,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
        )


class _Halve(Transform):
    """A fusable map of the observation in place (the base env never reads it back)."""

    fusable = True

    def __init__(self):
        super().__init__(in_keys=["observation"])

    def _apply_transform(self, value):
        return value / 2


def _replayed_env():
    base = _StatefulCounter(max_count=4, batch_size=(3,))
    env = TransformedEnv(base, Compose(_Halve(), StepCounter(), InitTracker()))
    env.set_seed(0)
    return env


def test_rollout_without_policy_replays_transforms_on_the_base_env_loop():
    from rl_core.testing import check_random_rollout

    env = _replayed_env()
    plan = active_plan(env)
    assert (
        plan.random_rollout(env.reset(), 10, break_when_any_done=False, break_when_all_done=False)
        is not None
    )
    check_random_rollout(_replayed_env, steps=40)
    traj = _replayed_env().rollout(40, break_when_any_done=False)
    assert traj["next", "done"].any()  # partial resets on the way
    assert traj["observation"].max() <= 2.0  # halved counts (at most 4 / 2)
    # without a plan of the base env the generic loop runs
    base = CountingEnv(max_count=4, batch_size=(3,))
    plain = TransformedEnv(base, Compose(_Halve(), StepCounter()))
    assert active_plan(plain) is None


class _SkipFirstRow(Transform):
    """Skips sub-env 0's step while its count is below 100 (it stays where it is)."""

    def skipped_steps(self, tensordict):
        mask = torch.zeros(tensordict.batch_size, dtype=torch.bool)
        mask[0] = tensordict["observation"][0, 0] < 100
        return mask


class _CallCounter(CountingEnv):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0

    def _step(self, tensordict):
        self.calls += 1
        return super()._step(tensordict)


def test_skipped_steps_repeat_the_current_outputs_and_skip_the_base_step_when_all_are():
    base = _CallCounter(max_count=100, batch_size=[2])
    env = TransformedEnv(base, Compose(_SkipFirstRow(), StepCounter()))
    assert active_plan(env) is None  # skipping stacks run the reference path only
    traj = env.rollout(3, lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)))
    assert traj["next", "observation"][0].squeeze(-1).tolist() == [0.0, 0.0, 0.0]
    assert traj["next", "observation"][1].squeeze(-1).tolist() == [1.0, 2.0, 3.0]
    assert traj["next", "reward"][0].eq(0).all()
    # The skipped row bypasses every transform of the env: its step count stays 0.
    assert traj["next", "step_count"][0].squeeze(-1).tolist() == [0, 0, 0]
    single = _CallCounter(max_count=100, batch_size=[1])
    env = TransformedEnv(single, _SkipFirstRow())
    env.rollout(3, lambda td: td.set("action", torch.ones(1, 1, dtype=torch.int64)))
    assert single.calls == 0


class _AddBatchDim(Transform):
    def transform_env_batch_size(self, batch_size):
        return torch.Size([*batch_size, 1])

    def transform_output_spec(self, output_spec):
        return output_spec.unsqueeze(-1)

    def transform_input_spec(self, input_spec):
        return input_spec.unsqueeze(-1)

    def _call(self, tensordict):
        return tensordict.unsqueeze(-1)

    def _inv_call(self, tensordict):
        return tensordict.squeeze(-1)


def test_transform_env_batch_size_sets_the_env_batch_size():
    env = TransformedEnv(CountingEnv(batch_size=[2]), _AddBatchDim())
    assert env.batch_size == (2, 1)
    assert Compose(_AddBatchDim(), _AddBatchDim()).transform_env_batch_size(torch.Size([3])) == (
        3,
        1,
        1,
    )
    check_env_specs(env)
    assert env.rollout(2).batch_size == (2, 1, 2)


def test_base_env_of_a_plain_env_is_itself_so_a_first_transforms_parent_reads_as_torchrl():
    base = CountingEnv()
    env = TransformedEnv(base, Compose(StepCounter(), InitTracker()))
    assert base.base_env is base
    assert env.base_env is base
    assert env.transform[0].parent.base_env is base
    assert env.transform[1].parent.base_env is base
    assert TransformedEnv(env, StepCounter()).base_env is env


def test_the_auto_unwrap_default_follows_set_auto_unwrap_transformed_env():
    from rl_core import auto_unwrap_transformed_env, set_auto_unwrap_transformed_env

    inner = TransformedEnv(CountingEnv(), InitTracker())
    assert auto_unwrap_transformed_env() is False
    assert auto_unwrap_transformed_env(allow_none=True) is None
    assert TransformedEnv(inner, StepCounter()).base_env is inner
    with set_auto_unwrap_transformed_env(True):
        assert auto_unwrap_transformed_env() is True
        merged = TransformedEnv(inner, StepCounter())
        assert type(merged.base_env) is CountingEnv
        with set_auto_unwrap_transformed_env(False):
            assert TransformedEnv(inner, StepCounter()).base_env is inner
        assert TransformedEnv(inner, StepCounter(), auto_unwrap=False).base_env is inner

    @set_auto_unwrap_transformed_env(True)
    def build():
        return TransformedEnv(inner, StepCounter())

    assert type(build().base_env) is CountingEnv
    assert auto_unwrap_transformed_env(allow_none=True) is None


def test_compose_maps_each_part_of_a_spec_through_its_transforms_in_order():
    class Double(Transform):
        def transform_observation_spec(self, observation_spec):
            return Unbounded(shape=(observation_spec.shape[0] * 2,))

        def transform_reward_spec(self, reward_spec):
            return Bounded(0.0, 1.0, shape=reward_spec.shape)

    compose = Compose(Double(), Double())
    assert compose.transform_observation_spec(Unbounded(shape=(3,))).shape == (12,)
    assert compose.transform_reward_spec(Unbounded(shape=(1,))) == Bounded(0.0, 1.0, shape=(1,))
    done = Composite(done=Categorical(2, shape=(1,), dtype=torch.bool))
    assert compose.transform_done_spec(done) is done
