"""TorchRL's EnvBase arguments and attributes: ``allow_done_after_reset`` (a reset that leaves a
sub-env done is refused unless the env allows it, on a full and a partial reset, with and
without the step plans) and the unbatched action specs."""

import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import EnvBase, StepPlan
from rl_core.envs._plans import active_plan
from rl_core.specs import Categorical, Composite, Unbounded


class StartsDone(EnvBase):
    """Two sub-envs; ``_reset`` marks the sub-envs listed in ``done_at_reset`` as done."""

    def __init__(self, done_at_reset, **kwargs):
        super().__init__(batch_size=(2,), **kwargs)
        self.done_at_reset = torch.tensor(done_at_reset).reshape(2, 1)
        self.observation_spec = Composite(obs=Unbounded(shape=(2, 1)), shape=(2,))
        self.action_spec = Categorical(2, shape=(2, 1))

    def _reset(self, tensordict):
        return TensorDict(
            obs=torch.zeros(2, 1),
            done=self.done_at_reset.clone(),
            terminated=self.done_at_reset.clone(),
            truncated=torch.zeros(2, 1, dtype=torch.bool),
            batch_size=(2,),
        )

    def _step(self, tensordict):
        return TensorDict(obs=torch.ones(2, 1), reward=torch.zeros(2, 1), batch_size=(2,))

    def _set_seed(self, seed):
        return None


class PlannedStartsDone(StartsDone):
    """The same env run through the generic step plan (its reset shortcut included)."""

    def _make_step_plan(self):
        return StepPlan(self)


@pytest.fixture(params=[StartsDone, PlannedStartsDone])
def make(request):
    def build(*args, **kwargs):
        env = request.param(*args, **kwargs)
        assert (active_plan(env) is not None) == (request.param is PlannedStartsDone)
        return env

    return build


def test_a_reset_that_leaves_a_sub_env_done_is_refused_naming_the_entry(make):
    env = make([False, True])
    with pytest.raises(RuntimeError, match=r"StartsDone.reset: done entry \('done',\) is True"):
        env.reset()


def test_allow_done_after_reset_returns_the_done_flags(make):
    env = make([False, True], allow_done_after_reset=True)
    td = env.reset()
    assert td["done"].squeeze(-1).tolist() == [False, True]
    assert td["terminated"].squeeze(-1).tolist() == [False, True]


def test_a_partial_reset_checks_only_the_sub_envs_it_resets(make):
    env = make([False, True])
    carried = TensorDict(
        obs=torch.full((2, 1), 5.0),
        done=torch.tensor([[True], [False]]),
        terminated=torch.tensor([[True], [False]]),
        truncated=torch.zeros(2, 1, dtype=torch.bool),
        _reset=torch.tensor([[True], [False]]),
        batch_size=(2,),
    )
    td = env.reset(carried)
    assert td["obs"].squeeze(-1).tolist() == [0.0, 5.0]
    assert td["done"].squeeze(-1).tolist() == [False, False]
    carried["_reset"] = torch.tensor([[False], [True]])
    with pytest.raises(RuntimeError, match="allow_done_after_reset=True"):
        env.reset(carried)


def test_a_clean_reset_is_unchanged(make):
    td = make([False, False]).reset()
    assert not td["done"].any()


def test_a_transformed_env_allows_what_its_base_env_allows():
    from rl_core.transforms import StepCounter, TransformedEnv

    td = TransformedEnv(
        StartsDone([True, False], allow_done_after_reset=True), StepCounter()
    ).reset()
    assert td["done"].squeeze(-1).tolist() == [True, False]
    with pytest.raises(RuntimeError, match="allow_done_after_reset"):
        TransformedEnv(StartsDone([True, False]), StepCounter()).reset()


def test_the_unbatched_action_spec_is_one_sub_envs():
    env = StartsDone([False, False])
    assert env.action_spec.shape == (2, 1)
    assert env.action_spec_unbatched == Categorical(2, shape=(1,))
    assert env.full_action_spec_unbatched.shape == ()
    assert env.full_action_spec_unbatched["action"] == Categorical(2, shape=(1,))
    env.action_spec_unbatched = Categorical(3, shape=(1,))  # TorchRL's setter: expands
    assert env.action_spec == Categorical(3, shape=(2, 1))
    env.full_action_spec_unbatched = Composite(move=Categorical(5, shape=(1,)))
    assert env.full_action_spec["move"] == Categorical(5, shape=(2, 1))


def test_done_keys_groups_as_torchrl_groups_them():
    env = StartsDone([False, False])
    assert env.done_keys_groups == [["done", "terminated", "truncated"]]
    env.full_done_spec = Composite(
        done=Categorical(2, shape=(2, 1), dtype=torch.bool),
        agents=Composite(
            done=Categorical(2, shape=(2, 3, 1), dtype=torch.bool),
            truncated=Categorical(2, shape=(2, 3, 1), dtype=torch.bool),
            shape=(2, 3),
        ),
        shape=(2,),
    )
    # every level holds the three flags here (the env completes the missing ones)
    groups = [sorted(g) for g in env.done_keys_groups]
    assert sorted(groups, key=lambda g: isinstance(g[0], tuple)) == [
        ["done", "terminated", "truncated"],
        [("agents", "done"), ("agents", "terminated"), ("agents", "truncated")],
    ]


class SpecsFromNew(EnvBase):
    """TorchRL's mock envs build their specs in ``__new__`` and set them on the class."""

    def __new__(cls, *args, **kwargs):
        cls._output_spec = Composite(
            full_observation_spec=Composite(obs=Unbounded(shape=(3,))),
            full_reward_spec=Composite(reward=Unbounded(shape=(1,))),
            full_done_spec=Composite(done=Categorical(2, shape=(1,), dtype=torch.bool)),
        )
        cls._input_spec = Composite(
            full_action_spec=Composite(action=Categorical(4, shape=(1,))),
            full_state_spec=Composite(),
        )
        return super().__new__(cls, *args, **kwargs)

    def _reset(self, tensordict):
        return TensorDict(obs=torch.zeros(3))

    def _step(self, tensordict):
        return TensorDict(obs=torch.ones(3), reward=torch.ones(1), done=torch.ones(1, dtype=bool))

    def _set_seed(self, seed):
        return None


def test_specs_a_torchrl_style_new_sets_on_the_class_are_the_envs():
    env = SpecsFromNew()
    assert env.observation_spec["obs"] == Unbounded(shape=(3,))
    assert env.action_spec == Categorical(4, shape=(1,))
    assert set(env.full_done_spec.keys()) == {"done", "terminated", "truncated"}
    traj = env.rollout(3)
    assert traj["next", "obs"].shape == (1, 3)
    assert traj["next", "done"].all()
