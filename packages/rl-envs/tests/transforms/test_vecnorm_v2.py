import math
import multiprocessing

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs import GymEnv, ParallelEnv, SerialEnv
from rl_envs.transforms import ObservationNorm, VecNormV2


def _counting(batch: int = 2) -> CountingEnv:
    return CountingEnv(max_count=100, batch_size=[batch])


def _first_counts_second_stays(td):
    # sub-env 0 counts up 0, 1, 2, ...; sub-env 1 stays at 0
    return td.set("action", torch.tensor([[1], [0]]))


def test_per_sub_env_statistics_with_decay_one():
    env = TransformedEnv(_counting(), VecNormV2(["observation"], ["norm"], decay=1.0))
    traj = env.rollout(3, _first_counts_second_stays)
    # sub-env 0 saw 0, 1, 2, 3: mean 1.5, variance 1.25; sub-env 1 saw 0 four times.
    assert traj["next", "norm"][0, -1].item() == pytest.approx((3 - 1.5) / math.sqrt(1.25))
    assert traj["next", "norm"][1].tolist() == [[0.0], [0.0], [0.0]]
    # the first value (the reset's) is the mean of itself: 0
    assert traj["norm"][:, 0].tolist() == [[0.0], [0.0]]
    assert env.transform.loc["observation"].tolist() == [[1.5], [0.0]]
    assert env.transform.scale["observation"][1].item() == pytest.approx(1e-4)
    assert env.transform._count["observation"].item() == 4


def test_reduce_batch_dims_pools_the_sub_envs():
    env = TransformedEnv(
        _counting(), VecNormV2(["observation"], ["norm"], decay=1.0, reduce_batch_dims=True)
    )
    traj = env.rollout(3, _first_counts_second_stays)
    # 8 values 0,0,1,0,2,0,3,0: mean 0.75, E[x^2] 14/8, variance 1.1875
    std = math.sqrt(14 / 8 - 0.75**2)
    assert traj["next", "norm"][:, -1, 0].tolist() == pytest.approx([(3 - 0.75) / std, -0.75 / std])
    assert env.transform._count["observation"].item() == 8
    assert env.transform.loc["observation"].shape == (1,)


def test_reduce_batch_dims_with_decay_weighs_a_batch_as_n_updates():
    env = TransformedEnv(
        _counting(), VecNormV2(["observation"], ["norm"], decay=0.5, reduce_batch_dims=True)
    )
    traj = env.rollout(1, _first_counts_second_stays)
    # reset [0, 0]: w = 1 - 0.5**2 = 0.75, loc = var = 0, count 2.
    # step [1, 0]: batch mean 0.5, mean square 0.5: loc = var = 0.375, count 4.
    # bias correction c = 1 - 0.5**4 = 0.9375: mean 0.4, E[x^2] 0.4, std sqrt(0.24).
    std = math.sqrt(0.4 - 0.16)
    assert traj["next", "norm"][:, 0, 0].tolist() == pytest.approx([0.6 / std, -0.4 / std])


def test_decay_below_one_bias_corrects_both_moments():
    env = TransformedEnv(CountingEnv(max_count=100), VecNormV2(["observation"], decay=0.9))
    traj = env.rollout(1, lambda td: td.set("action", torch.ones(1, dtype=torch.int64)))
    # values 0 then 1: loc = var = 0.1 * 1 = 0.1; c = 1 - 0.81 = 0.19
    mean = 0.1 / 0.19
    std = math.sqrt(0.1 / 0.19 - mean**2)
    assert traj["next", "observation"].item() == pytest.approx((1 - mean) / std, rel=1e-5)


def test_observation_and_reward_keep_their_own_counts(pendulum):
    env = TransformedEnv(pendulum, VecNormV2(["observation", "reward"], ["obs_n", "rew_n"]))
    check_env_specs(env)
    env.rollout(5)
    counts = env.transform._count
    # the resets (check_env_specs': 1 and 1, the rollout's: 1) update the observation only
    assert (counts["observation"].item(), counts["reward"].item()) == (2 + 3 + 5, 3 + 5)


def test_stateless_statistics_travel_in_the_tensordict():
    env = TransformedEnv(
        _counting(),
        VecNormV2(["observation", "reward"], ["obs_n", "rew_n"], stateful=False, decay=0.9),
    )
    check_env_specs(env)
    traj = env.rollout(2, _first_counts_second_stays)
    # sub-env 0: values 0, 1: loc = var = 0.1, c = 0.19 (as above)
    mean = 0.1 / 0.19
    assert traj["next", "obs_n"][0, 0].item() == pytest.approx(
        (1 - mean) / math.sqrt(mean - mean**2), rel=1e-5
    )
    assert traj["next", "_vecnorm_count", "observation"][:, :, 0].tolist() == [[2, 3], [2, 3]]
    # the reward (always 1) has no value at the reset: its count starts at the first step
    assert traj["next", "_vecnorm_count", "reward"][0, :, 0].tolist() == [1, 2]
    assert traj["next", "rew_n"].abs().max().item() < 1e-3  # (1 - 1) / eps, up to rounding
    assert traj["next", "_vecnorm_loc", "observation"][0, 1].item() == pytest.approx(
        0.1 * 0.9 + 0.1 * 2
    )
    with pytest.raises(RuntimeError, match="a stateless VecNormV2 keeps no statistics"):
        env.transform.loc  # noqa: B018


def test_stateless_partial_reset_keeps_the_other_sub_envs_statistics():
    env = TransformedEnv(_counting(), VecNormV2(["observation"], stateful=False, decay=1.0))
    td = env.reset()
    td = env.step(_first_counts_second_stays(td))["next"]
    assert td["_vecnorm_count", "observation"][:, 0].tolist() == [2, 2]
    td["_reset"] = torch.tensor([[True], [False]])
    out = env.reset(td)
    assert out["_vecnorm_count", "observation"][:, 0].tolist() == [1, 2]
    assert out["_vecnorm_loc", "observation"][:, 0].tolist() == [0.0, 0.0]


def test_buffer_batch_denorm_and_observation_norm():
    env = TransformedEnv(_counting(), VecNormV2(["observation"], ["norm"], decay=1.0))
    traj = env.rollout(3, _first_counts_second_stays)
    # the last step was normalised with the statistics as they are now
    back = env.transform.denorm(traj["next"][:, -1])
    assert torch.allclose(back["observation"], traj["next", "observation"][:, -1], atol=1e-5)
    fixed = env.transform.to_observation_norm()
    assert isinstance(fixed, ObservationNorm)
    sample = TensorDict(observation=torch.tensor([[3.0], [0.0]]), batch_size=[2])
    expected = env.transform(sample.clone())["norm"]
    assert torch.allclose(fixed(sample.clone())["norm"], expected)
    assert expected[0].item() == pytest.approx((3 - 1.5) / math.sqrt(1.25))
    # calling it on data does not update the statistics
    assert env.transform._count["observation"].item() == 4


def test_state_dict_frozen_copy_and_clone():
    env = TransformedEnv(_counting(), VecNormV2(["observation"], decay=1.0))
    env.rollout(3, _first_counts_second_stays)
    state = env.transform.state_dict()
    fresh = VecNormV2(["observation"], decay=1.0)
    fresh.load_state_dict(state)
    assert fresh._count["observation"].item() == 4
    assert torch.equal(fresh.loc["observation"], env.transform.loc["observation"])
    frozen = env.transform.frozen_copy()
    eval_env = TransformedEnv(_counting(), frozen)
    eval_env.rollout(3, _first_counts_second_stays)
    assert frozen._count["observation"].item() == 4
    assert env.transform._count["observation"].item() == 4


def test_serial_env_statistics_per_sub_env():
    env = TransformedEnv(
        SerialEnv(2, lambda: GymEnv("Pendulum-v1")),
        VecNormV2(["observation"], ["norm"], decay=1.0),
    )
    env.set_seed(0)
    traj = env.rollout(4)
    raw = torch.cat([traj["observation"][:, :1], traj["next", "observation"]], dim=1)  # [2, 5, 3]
    mean = raw.mean(1)
    std = (raw.pow(2).mean(1) - mean.pow(2)).sqrt()
    assert torch.allclose(env.transform.loc["observation"], mean, atol=1e-5)
    assert torch.allclose(env.transform.scale["observation"], std, atol=1e-4)
    last = (raw[:, -1] - mean) / std
    assert torch.allclose(traj["next", "norm"][:, -1], last, atol=1e-3)
    back = env.transform.denorm(traj["next"][:, -1])
    assert torch.allclose(back["observation"], raw[:, -1], atol=1e-4)


def test_workers_of_a_parallel_env_share_statistics():
    shared = VecNormV2.build_shared_data(GymEnv("Pendulum-v1"), ["observation", "reward"])
    lock = multiprocessing.get_context("fork").Lock()

    def make():
        return TransformedEnv(
            GymEnv("Pendulum-v1"),
            VecNormV2(["observation", "reward"], shared_data=shared, lock=lock, decay=1.0),
        )

    env = ParallelEnv(2, make)
    try:
        env.rollout(10, break_when_any_done=False)
    finally:
        env.close()
    # Each of the 2 workers counted 1 reset and 10 steps (the reward 10 steps) in one place.
    assert shared["count", "observation"].item() == 22
    assert shared["count", "reward"].item() == 20
    assert shared["loc", "reward"].item() < 0.0  # Pendulum's rewards are negative


def test_errors():
    with pytest.raises(ValueError, match=r"VecNormV2: expected 0 < decay <= 1, got decay=1.5"):
        VecNormV2(["observation"], decay=1.5)
    with pytest.raises(ValueError, match="need stateful=True"):
        VecNormV2(["observation"], stateful=False, reduce_batch_dims=True)
    with pytest.raises(KeyError, match="shared_data has no 'loc' entry for the key 'pixels'"):
        VecNormV2(["pixels"], shared_data=TensorDict())
    with pytest.raises(RuntimeError, match=r"VecNormV2.forward: no statistics yet"):
        VecNormV2(["observation"])(TensorDict(observation=torch.zeros(3)))
    with pytest.raises(KeyError, match="VecNormV2: the key 'pixels' is not an observation"):
        TransformedEnv(_counting(), VecNormV2(["pixels"])).output_spec  # noqa: B018
    shared = VecNormV2.build_shared_data(_counting(), ["observation"])
    env = TransformedEnv(_counting(3), VecNormV2(["observation"], shared_data=shared))
    with pytest.raises(ValueError, match=r"the statistics of 'observation' have shape \(2, 1\)"):
        env.reset()
