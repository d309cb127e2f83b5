"""RewardSum (moved from rl-core): per-episode sums, fresh zeros at reset, and its lean
root-level path against the generic nested-key path."""

import itertools

import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import check_env_specs
from rl_core.testing import CountingEnv
from rl_core.transforms import StepCounter, TransformedEnv
from rl_envs.transforms import RewardSum


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_reward_sum_accumulates_per_episode():
    env = TransformedEnv(CountingEnv(max_count=3), RewardSum())
    traj = env.rollout(6, _ones, break_when_any_done=False)
    assert traj["next", "episode_reward"].squeeze(-1).tolist() == [1, 2, 3, 1, 2, 3]
    assert traj["episode_reward"].squeeze(-1).tolist() == [0, 1, 2, 0, 1, 2]
    check_env_specs(env)
    # Outside an env it leaves data as it is.
    td = TensorDict(reward=torch.ones(1))
    assert RewardSum()(td) is td


def test_reward_sum_rejects_an_unknown_reward_key():
    env = TransformedEnv(CountingEnv(), RewardSum(in_keys=["bonus"]))
    with pytest.raises(
        KeyError, match=r"RewardSum: expected the reward 'bonus' in the env's reward spec"
    ):
        _ = env.observation_spec


def test_zero_resets_match_torch_zeros_and_are_fresh_tensors():
    # RewardSum and StepCounter cut reset zeros from blocks on the CPU: each reset must give
    # torch.zeros' shape, dtype and device, as a tensor of its own, across block boundaries
    # (more resets than the 64 rows of a block), whatever was done to earlier ones.
    cpu = torch.device("cpu")
    for device in (None, cpu):
        env = TransformedEnv(CountingEnv(batch_size=(3,), device=device), RewardSum())
        env.append_transform(StepCounter())
        resets = [env.reset() for _ in range(70)]
        for key, dtype in (("episode_reward", torch.float32), ("step_count", torch.int64)):
            for a, b in itertools.pairwise(resets):
                a, b = a[key], b[key]
                assert a.dtype == dtype
                assert a.shape == (3, 1)
                assert a.device == cpu
                assert a.is_contiguous()
                assert torch.equal(a, torch.zeros(3, 1, dtype=dtype))
                assert a.data_ptr() != b.data_ptr()
                a.add_(5)
                assert torch.equal(b, torch.zeros(3, 1, dtype=dtype))


def test_reward_sum_and_step_counter_lean_paths_match_the_generic_loop():
    # The plain root-level step path of each against the same transform reading nested keys
    # (the generic get_leaf/set path), on a batched env with partial resets.
    def run(nested):
        if nested:
            sums = RewardSum(in_keys=["reward"], out_keys=[("stats", "episode_reward")])
            counter = StepCounter(step_count_key=("stats", "step_count"))
        else:
            sums, counter = RewardSum(), StepCounter()
        env = TransformedEnv(CountingEnv(max_count=3, batch_size=(2,)), sums)
        env.append_transform(counter)
        torch.manual_seed(0)
        traj = env.rollout(9, _ones, break_when_any_done=False)
        prefix = ("stats",) if nested else ()
        return (
            traj["next", (*prefix, "episode_reward")],
            traj["next", (*prefix, "step_count")],
        )

    lean, generic = run(False), run(True)
    assert torch.equal(lean[0], generic[0])
    assert torch.equal(lean[1], generic[1])
    assert lean[1][0].squeeze(-1).tolist() == [1, 2, 3, 1, 2, 3, 1, 2, 3]


def test_reward_sum_partial_reset_zeroes_only_the_reset_rows():
    env = TransformedEnv(CountingEnv(max_count=100, batch_size=[3]), RewardSum())
    td = env.reset()
    for _ in range(3):
        _, td = env.step_and_maybe_reset(_ones(td))
    td["_reset"] = torch.tensor([[True], [False], [False]])
    out = env.reset(td)
    assert out["episode_reward"].squeeze(-1).tolist() == [0.0, 3.0, 3.0]
