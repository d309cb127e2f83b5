import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core import (
    Categorical,
    Compose,
    Composite,
    EnvBase,
    TransformedEnv,
    Unbounded,
    check_env_specs,
)
from rl_core._accel.seam import fusable_as_declared
from rl_core.envs import StepPlan
from rl_core.envs._plans import built_plan
from rl_envs.transforms import RewardClipping, RewardScaling, RewardSum


def _lane(env):
    """The numpy-row lane of ``env``'s step plan, or ``None``."""
    plan = built_plan(env)
    return None if plan is None else plan.lane


def test_reward_scaling_on_pendulum(pendulum):
    env = TransformedEnv(pendulum, Compose(RewardScaling(loc=1.0, scale=0.1), RewardSum()))
    check_env_specs(env)
    raw = TransformedEnv(pendulum.__class__("Pendulum-v1"), RewardSum())
    raw.set_seed(0)
    env.set_seed(0)
    policy = lambda td: td.set("action", torch.ones(1))  # noqa: E731
    scaled = env.rollout(5, policy)["next", "reward"]
    base = raw.rollout(5, policy)["next", "reward"]
    assert torch.allclose(scaled, base * 0.1 + 1.0)
    assert env.reward_spec.dtype == torch.float32


def test_reward_scaling_standard_normal_on_a_buffer_batch(buffer_batch):
    batch = buffer_batch
    expected = (batch["next", "reward"] - 2.0) / 4.0
    out = RewardScaling(2.0, 4.0, in_keys=[("next", "reward")], standard_normal=True)(batch)
    assert torch.allclose(out["next", "reward"], expected)


def test_reward_clipping_on_cartpole_and_spec(cartpole):
    env = TransformedEnv(cartpole, RewardClipping(-0.5, 0.5))
    check_env_specs(env)
    assert env.reward_spec.high.item() == 0.5
    assert env.rollout(4)["next", "reward"].eq(0.5).all()


def test_reward_clipping_on_a_buffer_batch(buffer_batch):
    out = RewardClipping(clamp_max=1.0, in_keys=[("next", "reward")])(buffer_batch)
    assert out["next", "reward"].max() <= 1.0


def test_errors(cartpole):
    with pytest.raises(ValueError, match="RewardClipping: give clamp_min, clamp_max or both"):
        RewardClipping()
    with pytest.raises(ValueError, match="RewardClipping: expected clamp_min <= clamp_max"):
        RewardClipping(1.0, 0.0)
    with pytest.raises(ValueError, match="RewardScaling: scale must be nonzero"):
        RewardScaling(0.0, 0.0, standard_normal=True)
    env = TransformedEnv(cartpole, RewardScaling(0.0, 1.0, in_keys=["bonus"]))
    with pytest.raises(
        KeyError, match="RewardScaling: the key 'bonus' is not an observation or reward"
    ):
        env.reset()


class _TorchScaling(RewardScaling):
    def _apply_transform(self, value):  # the torch path: no lane plan
        return super()._apply_transform(value)


def _scaled_cartpole(scaling, standard_normal, num_envs=0):
    from rl_core import StepCounter
    from rl_core.transforms import InitTracker
    from rl_envs import GymEnv

    base = GymEnv("CartPole-v1", num_envs=num_envs) if num_envs else GymEnv("CartPole-v1")
    loc, scale = torch.tensor([0.3]), torch.tensor([0.7])
    transform = scaling(loc, scale, standard_normal=standard_normal)
    env = TransformedEnv(base, Compose(transform, RewardSum(), StepCounter(), InitTracker()))
    env.set_seed(3)
    return env


@pytest.mark.parametrize("num_envs", [0, 3])
@pytest.mark.parametrize("standard_normal", [True, False])
def test_reward_scaling_lane_gives_the_torch_paths_bits(standard_normal, num_envs):
    # RewardScaling on numpy rows (the TransformedEnv's lane, rl_envs.transforms._affine)
    # against the same map on the torch path, over resets and partial resets, with the
    # scale changed in place and loc replaced on the way.
    lane_env = _scaled_cartpole(RewardScaling, standard_normal, num_envs)
    torch_env = _scaled_cartpole(_TorchScaling, standard_normal, num_envs)
    assert _lane(lane_env) is not None
    assert _lane(torch_env) is None
    torch.manual_seed(2)
    actions = [lane_env.action_spec.rand() for _ in range(120)]
    results = []
    for env in (lane_env, torch_env):
        scaling, td, out = env.transform[0], env.reset(), []
        for i, action in enumerate(actions):
            if i == 40:
                scaling.scale.mul_(3.0)
            if i == 80:
                scaling.loc = scaling.loc - 0.125
            td.set("action", action)
            transition, td = env.step_and_maybe_reset(td)
            out.append(transition.clone())
        results.append(torch.stack(out))
    fast, slow = results
    assert bool(fast["next", "done"].any())  # resets happened
    assert set(fast.keys(True, True)) == set(slow.keys(True, True))
    for key in fast.keys(True, True):
        assert torch.equal(fast[key], slow[key]), key


def test_a_float64_reward_takes_the_torch_path_of_reward_scaling():
    # loc and scale are float32: a float64 reward is scaled by torch (type promotion), the
    # lane only maps rows of loc's dtype.
    from rl_core.transforms import InitTracker

    env = TransformedEnv(_Float64Reward(), Compose(RewardScaling(0.5, 2.0), InitTracker()))
    assert _lane(env) is not None
    traj = env.rollout(3, lambda td: td.set("action", torch.ones(1, dtype=torch.int64)))
    assert traj["next", "reward"].dtype == torch.float64
    assert torch.equal(
        traj["next", "reward"], torch.full((3, 1), 2.0 * 2.0 + 0.5, dtype=torch.float64)
    )


class _RowsPlan(StepPlan):
    def numpy_rows(self):
        return self.env._last


class _Float64Reward(EnvBase):
    """Rewards of 2.0 in float64 numpy rows (declared through its step plan's
    ``numpy_rows``)."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
        self.action_spec = Categorical(2, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,), dtype=torch.float64)
        self.__dict__["_last"] = []

    def _reset(self, tensordict, **kwargs):
        return TensorDict(observation=torch.zeros(1))

    def _step(self, tensordict):
        reward = torch.from_numpy(np.full(1, 2.0))
        self.__dict__["_last"] = [(reward, reward.numpy())]
        false = torch.zeros(1, dtype=torch.bool)
        return TensorDict(
            observation=torch.zeros(1),
            reward=reward,
            done=false,
            terminated=false.clone(),
            truncated=false.clone(),
        )

    def _make_step_plan(self):
        return _RowsPlan(self)

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize(
    ("transform", "fusable"),
    [
        (RewardScaling(0.0, 1.0), True),
        (RewardClipping(-1.0, 1.0), True),
        (RewardScaling(0.0, 1.0, out_keys=["terminated"]), False),
        (RewardClipping(-1.0, 1.0, out_keys=["done"]), False),
    ],
    ids=["scaling", "clipping", "scaling-into-a-flag", "clipping-into-a-flag"],
)
def test_reward_maps_are_fusable_unless_they_write_a_done_flag(transform, fusable):
    assert fusable_as_declared(transform) is fusable
