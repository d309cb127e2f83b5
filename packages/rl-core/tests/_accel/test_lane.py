"""The numpy-row lane of TransformedEnv against the transforms' torch paths (oracle tests)."""

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core._accel.lane import lane_plan_factory
from rl_core.envs import EnvBase, StepPlan
from rl_core.envs._plans import built_plan
from rl_core.specs import Categorical, Composite, Unbounded
from rl_core.testing import CountingEnv
from rl_core.transforms import Compose, InitTracker, StepCounter, TransformedEnv


def lane_applies(transform):
    return lane_plan_factory(transform) is not None


def _lane(env):
    """The numpy-row lane of ``env``'s step plan, or ``None``."""
    plan = built_plan(env)
    return None if plan is None else plan.lane


class _RowPlan(StepPlan):
    """The step plan of ``_RowEnv``: its numpy rows only."""

    def numpy_rows(self):
        return self.env._last


class _RowEnv(EnvBase):
    """CountingEnv's dynamics with its reward and observation written into numpy rows that
    are never written again, declared through its step plan's ``numpy_rows``. Rewards vary (0.1 * count),
    so that float sums round."""

    def __init__(self, max_count=4, batch_size=()):
        super().__init__(batch_size=batch_size)
        shape = (*self.batch_size, 1)
        self.max_count = max_count
        self.observation_spec = Composite(observation=Unbounded(shape=shape), shape=batch_size)
        self.action_spec = Categorical(2, shape=shape)
        self.reward_spec = Unbounded(shape=shape)
        self.__dict__["_last"] = []

    def _rows(self, *arrays):
        views = [torch.from_numpy(a.copy()) for a in arrays]
        self.__dict__["_last"] = [(v, v.numpy()) for v in views]
        return views

    def _reset(self, tensordict, **kwargs):
        (obs,) = self._rows(np.zeros((*self.batch_size, 1), np.float32))
        return TensorDict(observation=obs, batch_size=self.batch_size)

    def _step(self, tensordict):
        count = tensordict["observation"].numpy() + tensordict["action"].numpy()
        obs, reward = self._rows(count.astype(np.float32), (0.1 * count).astype(np.float32))
        done = torch.from_numpy(count >= self.max_count)
        return TensorDict(
            observation=obs,
            reward=reward,
            done=done,
            terminated=done.clone(),
            truncated=torch.zeros_like(done),
            batch_size=self.batch_size,
        )

    def _make_step_plan(self):
        return _RowPlan(self)

    def _set_seed(self, seed):
        pass


class _TorchStepCounter(StepCounter):
    def _reset(self, tensordict, tensordict_reset):
        return super()._reset(tensordict, tensordict_reset)


class _TorchInitTracker(InitTracker):
    def _step(self, tensordict, next_tensordict):
        return super()._step(tensordict, next_tensordict)


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def _random(td):
    return td.set("action", torch.randint(0, 2, (*td.batch_size, 1)))


def _rollout(env, steps=23, policy=_ones):
    torch.manual_seed(0)  # the same actions for both envs
    return env.rollout(steps, policy, break_when_any_done=False)


def _assert_same(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        assert a[key].dtype == b[key].dtype, key
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("batch_size", [(), (3,)])
def test_the_lane_gives_the_torch_paths_result(batch_size):
    # rl-core's lane plans; rl-envs tests RewardSum's
    lane_env = TransformedEnv(_RowEnv(batch_size=batch_size), Compose(StepCounter(), InitTracker()))
    torch_env = TransformedEnv(
        _RowEnv(batch_size=batch_size), Compose(_TorchStepCounter(), _TorchInitTracker())
    )
    assert _lane(lane_env) is not None
    assert _lane(torch_env) is None
    ran = []
    lane = _lane(lane_env)
    for _, plan in lane.parts:
        assert plan is not None
    for _, plan in lane.parts:
        step = plan.step
        plan.step = lambda root, nxt, td, step=step: ran.append(step(root, nxt, td)) or ran[-1]
    # Random actions: sub-envs finish at different steps (partial resets).
    _assert_same(_rollout(lane_env, 40, _random), _rollout(torch_env, 40, _random))
    # One env: every step ran on rows. Several: a partial reset merges rows with
    # torch.where (EnvBase.reset), and the next step takes the torch path.
    assert ran
    assert all(ran) if not batch_size else any(ran)
    counts = _rollout(lane_env)["next", "step_count"]
    assert counts.dtype == torch.int64


def test_a_replaced_or_modified_running_value_is_read_as_the_torch_path_reads_it():
    results = []
    for make in (
        lambda: Compose(StepCounter()),
        lambda: Compose(_TorchStepCounter()),
    ):
        env = TransformedEnv(_RowEnv(max_count=50), make())
        td = env.reset()
        steps = []
        for i in range(6):
            if i == 2:
                td["step_count"] = torch.tensor([5])  # a new tensor
            if i == 4:
                td["step_count"].add_(10)  # the same tensor, modified in place
            td, td = env.step_and_maybe_reset(_ones(td))
            steps.append(td.clone())
        results.append(torch.stack(steps))
    _assert_same(*results)
    assert results[0]["step_count"].squeeze(-1).tolist() == [1, 2, 6, 7, 18, 19]


def test_subclasses_that_override_a_step_method_take_the_torch_path():
    assert lane_applies(StepCounter())
    assert not lane_applies(_TorchStepCounter())
    assert lane_applies(InitTracker())
    assert not lane_applies(_TorchInitTracker())
    tracker = InitTracker(("nested", "is_init"))
    assert lane_plan_factory(tracker)(tracker, None) is None
    nested = StepCounter(step_count_key=("nested", "step_count"))
    assert lane_plan_factory(nested)(nested, None) is None  # root-level keys only
    truncating = StepCounter(max_steps=3)
    assert lane_plan_factory(truncating)(truncating, None) is None  # truncation: torch


def test_the_lane_runs_only_where_every_transform_has_a_plan():
    # One transform left on torch would pay the cold start the others no longer pay.
    env = TransformedEnv(
        _RowEnv(), Compose(StepCounter(), _TorchStepCounter(step_count_key="other_count"))
    )
    assert _lane(env) is None
    assert _lane(TransformedEnv(_RowEnv(), Compose(StepCounter(max_steps=3)))) is None
    assert _lane(TransformedEnv(_RowEnv(), Compose(StepCounter())))


def test_envs_without_numpy_rows_have_no_lane():
    env = TransformedEnv(CountingEnv(), Compose(StepCounter()))
    assert _lane(env) is None
    assert _rollout(env, 4)["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3, 4]


def test_lane_outputs_are_fresh_tensors_never_written_again():
    env = TransformedEnv(_RowEnv(max_count=200), Compose(StepCounter()))
    td = env.reset()
    seen = []
    for _ in range(70):  # more than one block of rows
        td, td = env.step_and_maybe_reset(_ones(td))
        seen.append((td["step_count"], td["step_count"].clone()))
    for tensor, value in seen:
        assert torch.equal(tensor, value)
    assert len({t.data_ptr() for t, _ in seen}) == len(seen)


def test_init_tracker_rows_are_the_flags_torch_full_gives():
    env = TransformedEnv(_RowEnv(max_count=3, batch_size=(2,)), InitTracker())
    assert _lane(env) is not None
    td = env.reset()
    flags = [td["is_init"]]
    for _ in range(4):
        td, td = env.step_and_maybe_reset(_ones(td))
        flags.append(td["is_init"])
    for flag in flags:
        assert flag.dtype == torch.bool
        assert flag.shape == (2, 1)
        assert flag.is_contiguous()
    # True after the reset, False after each step, True again on the rows reset at count 3.
    assert [f.squeeze(-1).tolist() for f in flags] == [
        [True, True],
        [False, False],
        [False, False],
        [True, True],
        [False, False],
    ]


def test_init_tracker_plan_leaves_another_default_device_to_the_torch_path():
    # torch.full(device=None) follows the default device; the rows are CPU memory.
    env = TransformedEnv(_RowEnv(batch_size=(2,)), InitTracker())
    ((_, plan),) = _lane(env).parts
    td = TensorDict(batch_size=[2])
    written = {}
    assert plan.step({}, written, td)
    assert written["is_init"].shape == (2, 1)
    assert not written["is_init"].any()
    with torch.device("meta"):
        untouched = {}
        assert not plan.step({}, untouched, td)
        assert not plan.reset(untouched, td)
    assert untouched == {}
