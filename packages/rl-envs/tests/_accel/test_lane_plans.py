"""The numpy-row lane plan of RewardSum (``rl_envs._accel.lane_plans``) against the torch path
of the same transform, beside rl-core's StepCounter and InitTracker plans, on GymEnv's rows."""

import pytest
import torch

from rl_core._accel.seam import lane_plan_factory
from rl_core.envs._plans import built_plan
from rl_core.transforms import Compose, InitTracker, StepCounter, TransformedEnv
from rl_envs import GymEnv
from rl_envs.transforms import RewardSum


class _TorchRewardSum(RewardSum):
    def _step(self, tensordict, next_tensordict):  # the torch path: no lane plan
        return super()._step(tensordict, next_tensordict)


class _TorchInitTracker(InitTracker):
    def _step(self, tensordict, next_tensordict):
        return super()._step(tensordict, next_tensordict)


def _lane(env):
    plan = built_plan(env)
    return None if plan is None else plan.lane


def _rollout(env, steps):
    env.set_seed(0)
    torch.manual_seed(0)  # the same random actions for both envs
    return env.rollout(steps, break_when_any_done=False)


def _assert_same(a, b):
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        assert a[key].dtype == b[key].dtype, key
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("num_envs", [None, 3])
def test_the_lane_gives_the_torch_paths_result(num_envs):
    kwargs = {} if num_envs is None else {"num_envs": num_envs}
    lane_env = TransformedEnv(
        GymEnv("CartPole-v1", **kwargs), Compose(RewardSum(), StepCounter(), InitTracker())
    )
    torch_env = TransformedEnv(
        GymEnv("CartPole-v1", **kwargs),
        Compose(_TorchRewardSum(), StepCounter(), _TorchInitTracker()),
    )
    lane = _lane(lane_env)
    assert lane is not None
    assert _lane(torch_env) is None
    ran = []
    for _, plan in lane.parts:
        step = plan.step
        plan.step = lambda root, nxt, td, step=step: ran.append(step(root, nxt, td)) or ran[-1]
    # 60 random steps: episodes end (partial resets with several envs) on the way
    _assert_same(_rollout(lane_env, 60), _rollout(torch_env, 60))
    assert any(ran)


def test_a_replaced_running_sum_is_read_as_the_torch_path_reads_it():
    results = []
    for transform in (RewardSum(), _TorchRewardSum()):
        env = TransformedEnv(GymEnv("CartPole-v1"), transform)
        env.set_seed(0)
        td = env.reset()
        steps = []
        for i in range(6):
            if i == 2:
                td["episode_reward"] = torch.tensor([5.0])  # a new tensor
            if i == 4:
                td["episode_reward"].add_(10)  # the same tensor, modified in place
            td.set("action", torch.tensor([1, 0]))
            td, td = env.step_and_maybe_reset(td)
            steps.append(td.clone())
        results.append(torch.stack(steps))
    _assert_same(*results)
    assert results[0]["episode_reward"].squeeze(-1).tolist() == [1, 2, 6, 7, 18, 19]


def test_subclasses_that_override_a_step_method_and_two_rewards_take_the_torch_path():
    assert lane_plan_factory(RewardSum()) is not None
    assert lane_plan_factory(_TorchRewardSum()) is None
    two = RewardSum(in_keys=["reward", "bonus"], out_keys=["a", "b"])
    assert lane_plan_factory(two)(two, None) is None  # one reward only
