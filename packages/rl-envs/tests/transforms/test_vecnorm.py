import multiprocessing

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import GymEnv, ParallelEnv, SerialEnv
from rl_envs.transforms import VecNorm


def test_running_stats_normalise_pendulum(pendulum):
    check_env_specs(TransformedEnv(GymEnv("Pendulum-v1"), VecNorm()))
    env = TransformedEnv(pendulum, VecNorm(["observation"], ["norm"], decay=1.0))
    check_env_specs(env)
    env.transform.unfreeze()
    traj = env.rollout(50, break_when_any_done=False)
    seen = torch.cat([traj["observation"][:1], traj["next", "observation"]])
    # check_env_specs ran 1 reset and 3 steps first; they count too.
    assert env.transform.observation_count.item() == 4 + 51
    last = traj["next", "norm"][-1]
    total, ssq = env.transform.observation_sum, env.transform.observation_ssq
    mean, var = total / 55, ssq / 55 - (total / 55) ** 2
    assert torch.allclose(last, (seen[-1] - mean) / var.sqrt(), atol=1e-3)
    assert seen.shape == (51, 3)


def test_matches_the_formula_on_a_buffer_batch():
    stats = TensorDict(
        {
            "observation": {
                "sum": torch.tensor([6.0, 0.0]),
                "ssq": torch.tensor([20.0, 3.0]),
                "count": torch.tensor(3.0),
            }
        }
    )
    t = VecNorm(shared_td=stats)
    batch = TensorDict(observation=torch.tensor([[2.0, 1.0]]), batch_size=[1])
    out = t(batch)["observation"]
    mean = torch.tensor([2.0, 0.0])
    var = torch.tensor([20.0 / 3 - 4.0, 1.0])
    assert torch.allclose(out, (torch.tensor([2.0, 1.0]) - mean) / var.sqrt())
    assert stats["observation", "count"].item() == 3.0  # data calls never update


def test_frozen_mode_and_state_dict_round_trip(cartpole):
    env = TransformedEnv(cartpole, VecNorm())
    env.rollout(20)
    t = env.transform
    saved = {k: v.clone() for k, v in t.state_dict().items()}
    t.freeze()
    env.rollout(20)
    assert all(torch.equal(saved[k], v) for k, v in t.state_dict().items())
    copy = t.unfreeze().frozen_copy()
    assert copy.frozen
    assert not t.frozen
    fresh = VecNorm()
    fresh.load_state_dict(saved)
    batch = TensorDict(observation=torch.randn(5, 4), batch_size=[5])
    assert torch.equal(fresh(batch.clone())["observation"], copy(batch.clone())["observation"])


def test_partial_reset_counts_only_the_reset_sub_envs():
    env = TransformedEnv(SerialEnv(3, lambda: GymEnv("CartPole-v1")), VecNorm(decay=1.0))
    td = env.reset()
    assert env.transform.observation_count.item() == 3
    td["_reset"] = torch.tensor([[True], [False], [False]])
    env.reset(td)
    assert env.transform.observation_count.item() == 4


def test_workers_of_a_parallel_env_share_stats():
    stats = VecNorm.build_td_for_shared_vecnorm(GymEnv("Pendulum-v1"))
    lock = multiprocessing.get_context("fork").Lock()

    def make():
        return TransformedEnv(GymEnv("Pendulum-v1"), VecNorm(shared_td=stats, lock=lock, decay=1.0))

    env = ParallelEnv(2, make)
    try:
        env.rollout(10, break_when_any_done=False)
    finally:
        env.close()
    # Each of the 2 workers counted 1 reset and 10 steps, into the same shared tensors.
    assert stats["observation", "count"].item() == 22


def test_errors():
    with pytest.raises(ValueError, match="VecNorm: expected 0 < decay <= 1"):
        VecNorm(decay=0.0)
    with pytest.raises(
        KeyError, match="VecNorm: shared_td has no 'sum' entry for the key 'pixels'"
    ):
        VecNorm(in_keys=["pixels"], shared_td=TensorDict())
    with pytest.raises(RuntimeError, match="VecNorm: no statistics for 'observation' yet"):
        VecNorm()(TensorDict(observation=torch.zeros(3)))


def _reference_normalise(updates, decay, eps):
    """Float64 running statistics per feature, written from VecNorm's definition: each update
    adds the values summed over the batch dims (never over the features) to decayed sums."""
    total = ssq = count = 0.0
    for x in updates:
        x = x.to(torch.float64)
        flat = x.reshape(-1, x.shape[-1])  # one row per sub-env, one column per feature
        total = decay * total + flat.sum(0)
        ssq = decay * ssq + (flat * flat).sum(0)
        count = decay * count + flat.shape[0]
    mean = total / count
    var = (ssq / count - mean * mean).clamp_min(eps)
    return mean, var


@pytest.mark.parametrize("batch_size", [[], [4], [2, 3]])
def test_statistics_are_per_feature_for_every_batch_shape(batch_size):
    from rl_envs.native import PendulumEnv

    base = PendulumEnv(batch_size=batch_size)
    base.set_seed(0)
    env = TransformedEnv(base, VecNorm(["observation"], ["norm"], decay=0.9, eps=1e-4))
    traj = env.rollout(30, break_when_any_done=False)
    ndim = len(batch_size)
    time_dim = ndim  # rollout stacks time after the batch dims
    raw = [traj["observation"].select(time_dim, 0), *traj["next", "observation"].unbind(time_dim)]
    mean, var = _reference_normalise(raw, 0.9, 1e-4)
    t = env.transform
    assert t.observation_sum.shape == (3,)
    expected = (raw[-1].to(torch.float64) - mean) / var.sqrt()
    got = traj["next", "norm"].select(time_dim, -1).to(torch.float64)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(
        t.observation_sum.double() / t.observation_count.double(), mean, rtol=1e-5, atol=1e-5
    )
    # The state_dict round trip keeps the per-feature statistics.
    fresh = VecNorm(["observation"], ["norm"])
    fresh.load_state_dict(t.state_dict())
    batch = TensorDict(observation=raw[-1].clone(), batch_size=batch_size)
    torch.testing.assert_close(fresh(batch)["norm"].double(), expected, rtol=1e-4, atol=1e-4)


def test_unbatched_gym_pendulum_stays_in_range():
    env = TransformedEnv(GymEnv("Pendulum-v1"), VecNorm(decay=0.99))
    env.set_seed(0)
    traj = env.rollout(100)
    assert env.transform.observation_sum.shape == (3,)
    # Per-feature statistics: a normalised value is a few standard deviations at most (the
    # old, mixed statistics gave values near 900).
    assert traj["next", "observation"].abs().max() < 15
