"""The oracle of every accelerated route: for each env and transform stack of the catalogue,
the step plan's trajectories equal the reference code's (``rl_core.testing.check_step_plan``
for steps and resets, ``check_random_rollout`` for rollouts without a policy)."""

import numpy as np
import pytest
import torch

from rl_core import Compose, InitTracker, StepCounter, Transform, TransformedEnv
from rl_core._accel.seam import register_lane_plan
from rl_core.envs._plans import built_plan
from rl_core.testing import check_random_rollout, check_step_plan
from rl_envs import GymEnv, SerialEnv
from rl_envs.transforms import (
    ClipTransform,
    ObservationNorm,
    RewardClipping,
    RewardScaling,
    RewardSum,
    SignTransform,
)

pytest.importorskip("gymnasium")


def _norm(size=4):
    return ObservationNorm(loc=torch.ones(size), scale=torch.full((size,), 2.0))


def _stack(base, *transforms):
    return lambda: TransformedEnv(base(), Compose(*(t() for t in transforms)))


def _cartpole(num_envs=0):
    return lambda: GymEnv("CartPole-v1", num_envs=num_envs)


def _nested():
    inner = TransformedEnv(GymEnv("CartPole-v1", num_envs=3), _norm())
    return TransformedEnv(inner, Compose(RewardSum(), StepCounter()))


# (name, factory, whether it has a plan): every env and stack whose routes the tests use.
CATALOGUE = [
    ("cartpole", _cartpole(), True),
    ("cartpole-x3", _cartpole(3), True),
    ("pendulum", lambda: GymEnv("Pendulum-v1"), True),
    ("serial-vectorized", lambda: SerialEnv(3, lambda: GymEnv("CartPole-v1")), True),
    ("catalogue", _stack(_cartpole(), _norm, RewardSum, StepCounter), True),
    ("catalogue-x3", _stack(_cartpole(3), _norm, RewardSum, StepCounter, InitTracker), True),
    (
        "rl-envs-maps-x3",
        _stack(
            _cartpole(3),
            _norm,
            RewardSum,
            lambda: RewardScaling(0.5, 2.0),
            lambda: RewardClipping(-2.0, 2.0),
            lambda: ClipTransform(["observation"], low=-1.0, high=1.0),
            lambda: SignTransform(["episode_reward"], ["reward_sign"]),
        ),
        True,
    ),
    ("truncating", _stack(_cartpole(), lambda: StepCounter(max_steps=7), RewardSum), True),
    (
        "pendulum-stack",
        _stack(lambda: GymEnv("Pendulum-v1"), lambda: _norm(3), RewardSum, StepCounter),
        True,
    ),
    ("nested", _nested, True),
]


@pytest.mark.parametrize(
    ("make", "planned"), [c[1:] for c in CATALOGUE], ids=[c[0] for c in CATALOGUE]
)
def test_the_plan_gives_the_reference_trajectories(make, planned):
    env = make()
    assert (built_plan(env) is not None) is planned
    env.close()
    check_step_plan(make, steps=70)
    check_random_rollout(make, steps=90)


class _Double(Transform):
    """Doubles the reward; its lane plan (registered below) triples it: a wrong plan."""

    fusable = True

    def __init__(self):
        super().__init__(in_keys=["reward"])

    def _apply_transform(self, value):
        return value * 2


class _TriplingPlan:
    def __init__(self, lane):
        self.take = lane.rows((1,), np.dtype(np.float32))
        self.numpy = lane.numpy

    def step(self, root, nxt, next_tensordict):
        reward = self.numpy(nxt.get("reward"))
        if reward is None:
            return False
        out, row = self.take()
        np.multiply(reward, 3, row)
        nxt["reward"] = out
        return True

    def reset(self, fresh, tensordict_reset):
        return True  # the reset writes no reward


register_lane_plan(_Double)(lambda transform, lane: _TriplingPlan(lane))


def test_the_check_catches_a_plan_that_differs():
    from rl_core.testing import ConformanceError

    with pytest.raises(ConformanceError, match=r"check_step_plan.*'reward'.*differs"):
        check_step_plan(_stack(_cartpole(), _Double), steps=20)
    # The random-rollout replay runs the lane plans too (on the trajectory's rows).
    with pytest.raises(ConformanceError, match=r"check_random_rollout"):
        check_random_rollout(_stack(_cartpole(), _Double), steps=60)
