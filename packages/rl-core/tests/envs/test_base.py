import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import EnvBase, StepPlan, set_spec_checks, spec_checks_enabled
from rl_core.specs import Bounded, Categorical, Composite, Unbounded
from rl_core.testing import CountingEnv


def _ones_policy(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


class _FlagEnv(EnvBase):
    """Writes only the done flags named in `flags` from _step."""

    def __init__(self, flags):
        super().__init__()
        self.flags = flags
        self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))

    def _reset(self, td, **kwargs):
        return TensorDict(observation=torch.zeros(1))

    def _step(self, td):
        out = TensorDict(observation=torch.zeros(1), reward=torch.zeros(1))
        for name, value in self.flags.items():
            out.set(name, torch.tensor([value]))
        return out

    def _set_seed(self, seed):
        pass


def test_leaf_specs_are_wrapped_and_done_spec_completed():
    env = CountingEnv()
    assert isinstance(env.full_action_spec, Composite)
    assert env.action_keys == ["action"]
    assert isinstance(env.action_spec, Categorical)
    assert env.action_spec.shape == (1,)
    assert set(env.done_keys) == {"done", "terminated", "truncated"}
    assert env.reward_keys == ["reward"]
    assert env.observation_keys == ["observation"]
    assert env.reset_keys == ["_reset"]


def test_done_spec_leaf_gets_terminated_and_truncated():
    env = CountingEnv()
    env.done_spec = Categorical(2, shape=(1,), dtype=torch.bool)
    assert set(env.done_keys) == {"done", "terminated", "truncated"}


def test_grouped_done_spec_is_completed_per_level():
    env = CountingEnv()
    flag = Categorical(2, shape=(3, 1), dtype=torch.bool)
    env.done_spec = Composite(
        done=Categorical(2, shape=(1,), dtype=torch.bool),
        agents=Composite(terminated=flag, shape=(3,)),
    )
    assert ("agents", "done") in env.done_keys
    assert ("agents", "truncated") in env.done_keys
    assert set(env.reset_keys) == {"_reset", ("agents", "_reset")}


def test_spec_without_batch_dims_is_a_clear_error():
    env = CountingEnv(batch_size=[4])
    with pytest.raises(
        ValueError,
        match=r"CountingEnv.action_spec: expected a spec whose shape starts with the env batch size \(4,\), got shape \(1,\)",
    ):
        env.action_spec = Categorical(2, shape=(1,))
    with pytest.raises(TypeError, match=r"expected a TensorSpec or a Composite, got int"):
        env.observation_spec = 3
    with pytest.raises(TypeError, match=r"state_spec: expected a Composite, got Unbounded"):
        env.state_spec = Unbounded(shape=(4, 1))


def test_setting_a_spec_refreshes_key_lists():
    env = CountingEnv()
    assert env.observation_keys == ["observation"]
    env.observation_spec = Composite(pos=Unbounded(shape=(1,)), vel=Unbounded(shape=(1,)))
    assert sorted(env.observation_keys) == ["pos", "vel"]


def test_reset_outputs_observations_and_false_done_flags():
    env = CountingEnv(batch_size=[3])
    td = env.reset()
    assert td.batch_size == (3,)
    assert td["observation"].shape == (3, 1)
    for name in ("done", "terminated", "truncated"):
        assert td[name].dtype == torch.bool
        assert not td[name].any()


def test_reset_carries_entries_it_does_not_write():
    env = CountingEnv(batch_size=[2])
    td = env.reset(TensorDict(hidden=torch.ones(2, 4), batch_size=[2]))
    assert (td["hidden"] == 1).all()


def test_reset_rejects_a_tensordict_of_another_batch_size():
    env = CountingEnv(batch_size=[2])
    with pytest.raises(
        ValueError,
        match=r"CountingEnv.reset: expected a TensorDict with batch size \(2,\) \(the env batch size\), got \(3,\)",
    ):
        env.reset(TensorDict(batch_size=[3]))


def test_step_writes_next_and_returns_the_input():
    env = CountingEnv()
    td = _ones_policy(env.reset())
    out = env.step(td)
    assert out is td
    assert td["next", "observation"].item() == 1.0
    assert td["next", "reward"].item() == 1.0


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"terminated": True}, (True, True, False)),
        ({"truncated": True}, (True, False, True)),
        ({"done": True}, (True, True, False)),
        ({"done": True, "truncated": True}, (True, False, True)),
        ({"terminated": False, "truncated": False}, (False, False, False)),
    ],
)
def test_step_completes_missing_done_flags(flags, expected):
    env = _FlagEnv(flags)
    td = env.step(env.rand_action(env.reset()))
    got = tuple(td["next", k].item() for k in ("done", "terminated", "truncated"))
    assert got == expected


def test_step_without_any_done_flag_is_a_clear_error():
    env = _FlagEnv({})
    with pytest.raises(
        KeyError,
        match=r"_FlagEnv: expected done flags \('done', 'terminated' and/or 'truncated'\), got none",
    ):
        env.step(env.rand_action(env.reset()))


def test_partial_reset_touches_only_masked_sub_envs():
    env = CountingEnv(max_count=100, batch_size=[3])
    td = env.reset()
    for _ in range(2):
        td = env.step(_ones_policy(td))
        td = td["next"].exclude("reward").set("hidden", torch.arange(3.0).unsqueeze(-1))
    td["_reset"] = torch.tensor([[False], [True], [False]])
    out = env.reset(td)
    assert out["observation"].squeeze(-1).tolist() == [2.0, 0.0, 2.0]
    assert out["hidden"].squeeze(-1).tolist() == [0.0, 1.0, 2.0]
    assert "_reset" not in out.keys()


def test_a_one_element_reset_mask_resets_or_keeps_the_env():
    # A single env's "_reset" mask has one element: True resets it, False keeps its entries.
    env = CountingEnv(max_count=100)
    td = env.reset()
    for _ in range(2):
        td = env.step(_ones_policy(td))["next"].exclude("reward")
    kept = env.reset(td.clone().set("_reset", torch.tensor([False])))
    assert kept["observation"].tolist() == [2.0]
    fresh = env.reset(td.clone().set("_reset", torch.tensor([True])))
    assert fresh["observation"].tolist() == [0.0]
    assert "_reset" not in kept.keys()
    assert "_reset" not in fresh.keys()


def test_step_and_maybe_reset_resets_only_finished_sub_envs():
    env = CountingEnv(max_count=2, batch_size=[2])
    td = env.reset()
    td["observation"] = torch.tensor([[1.0], [0.0]])
    td, root = env.step_and_maybe_reset(_ones_policy(td))
    assert td["next", "done"].squeeze(-1).tolist() == [True, False]
    assert td["next", "observation"].squeeze(-1).tolist() == [2.0, 1.0]
    assert root["observation"].squeeze(-1).tolist() == [0.0, 1.0]
    assert not root["done"].any()
    assert "action" not in root.keys()
    assert "reward" not in root.keys()


def test_rand_action_and_rand_step():
    env = CountingEnv(batch_size=[5])
    td = env.rand_action()
    assert td["action"].shape == (5, 1)
    assert env.action_spec.is_in(td["action"])
    td = env.rand_step(env.reset())
    assert ("next", "observation") in td.keys(True)


def test_fake_tensordict_mirrors_a_transition():
    env = CountingEnv(batch_size=[2])
    fake = env.fake_tensordict()
    assert set(fake.keys(True, True)) == {
        "observation",
        "action",
        "done",
        "terminated",
        "truncated",
        ("next", "observation"),
        ("next", "reward"),
        ("next", "done"),
        ("next", "terminated"),
        ("next", "truncated"),
    }
    assert fake.batch_size == (2,)


def test_set_seed_returns_the_next_seed_and_seeds_the_env():
    env = CountingEnv(start_high=1000, batch_size=[4])
    assert env.set_seed(3) == 4
    first = env.reset()["observation"]
    assert env.set_seed(3, static_seed=True) == 3
    assert torch.equal(env.reset()["observation"], first)
    with pytest.raises(TypeError, match=r"set_seed: expected an int, got 'a'"):
        env.set_seed("a")


def test_specs_composite_and_close():
    env = CountingEnv()
    specs = env.specs
    assert ("output_spec", "full_observation_spec", "observation") in specs.keys(True, True)
    assert ("input_spec", "full_action_spec", "action") in specs.keys(True, True)
    env.close()
    env.close()
    assert env.is_closed


class _WrongDtypeEnv(CountingEnv):
    def _step(self, td):
        return super()._step(td).set("observation", torch.zeros(1, dtype=torch.float64))


def test_spec_checks_are_off_by_default_and_catch_mismatches_when_on():
    env = _WrongDtypeEnv()
    assert not spec_checks_enabled()
    env.rand_step(env.reset())  # unchecked: no error
    with (
        set_spec_checks(True),
        pytest.raises(
            ValueError,
            match=r"_WrongDtypeEnv.step: entry \('observation',\) has dtype torch.float64, expected torch.float32",
        ),
    ):
        env.rand_step(env.reset())
    assert not spec_checks_enabled()


def test_step_and_reset_hook_replaces_step_then_reset():
    from rl_core.testing import CountingEnv

    class FusedPlan(StepPlan):
        calls = 0

        def step_and_reset(self, tensordict):
            type(self).calls += 1
            env = self.env
            next_td = env._step(tensordict)
            done = next_td["done"]
            if not bool(done.any()):
                return next_td, None
            mask = TensorDict({"_reset": done.clone()}, batch_size=env.batch_size)
            return next_td, env._reset(mask)

        def merge_reset_rows(self, next_root, pending):
            done = next_root["done"].clone()
            fresh = pending["observation"]
            next_root["observation"] = torch.where(done, fresh, next_root["observation"])
            for key in ("done", "terminated", "truncated"):
                next_root[key] = next_root[key] & ~done
            return next_root

    class Fused(CountingEnv):
        def _make_step_plan(self):
            return FusedPlan(self)

    fused, plain = Fused(max_count=3, batch_size=[2]), CountingEnv(max_count=3, batch_size=[2])
    a, b = fused.reset(), plain.reset()
    for _ in range(5):
        action = fused.action_spec.rand()
        ta, a = fused.step_and_maybe_reset(a.set("action", action))
        tb, b = plain.step_and_maybe_reset(b.set("action", action.clone()))
        assert (ta["next"] == tb["next"]).all()
        assert (a == b.exclude("_reset")).all()
    assert FusedPlan.calls == 5


def test_step_and_reset_hook_needs_merge_rows():
    from rl_core.testing import CountingEnv

    class HalfPlan(StepPlan):
        def step_and_reset(self, tensordict):
            return self.env._step(tensordict), {"rows": 1}

    class Half(CountingEnv):
        def _make_step_plan(self):
            return HalfPlan(self)

    env = Half()
    with pytest.raises(NotImplementedError, match=r"HalfPlan: step_and_reset returned reset rows"):
        env.step_and_maybe_reset(env.rand_action(env.reset()))
