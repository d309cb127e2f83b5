import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms import PolicyAgeFilter


def _batch(versions):
    versions = torch.tensor(versions)
    return TensorDict(
        {"observation": torch.arange(len(versions)).float(), "policy_version": versions},
        batch_size=[len(versions)],
    )


def test_write_and_sample_paths_keep_lags_up_to_the_limit():
    live = {"version": 10}
    f = PolicyAgeFilter(lambda: live["version"], max_policy_lag=3)
    written = f.inv(_batch([6, 7, 8, 10]))  # lags 4, 3, 2, 0: the first is dropped
    assert written["observation"].tolist() == [1.0, 2.0, 3.0]
    live["version"] = 12  # two weight updates later: lags 5, 4, 2
    sampled = f(written)
    assert sampled["policy_version"].tolist() == [10]
    assert sampled.batch_size == (1,)


def test_a_fixed_version_a_trailing_dim_and_a_two_dim_batch():
    f = PolicyAgeFilter(5, max_policy_lag=0)
    data = TensorDict(policy_version=torch.tensor([[5], [4]]), batch_size=[2])
    assert f(data)["policy_version"].tolist() == [[5]]
    # [2 trajectories, 3 steps]: a trajectory goes when one of its steps is stale
    traj = TensorDict(policy_version=torch.tensor([[5, 5, 5], [5, 4, 5]]), batch_size=[2, 3])
    assert f(traj)["policy_version"].tolist() == [[5, 5, 5]]


def test_data_without_a_version_passes_unless_strict():
    data = TensorDict(observation=torch.zeros(3), batch_size=[3])
    assert PolicyAgeFilter(1, 0)(data) is data
    with pytest.raises(KeyError, match="the batch has no 'policy_version' entry"):
        PolicyAgeFilter(1, 0, strict=True)(data)


def test_in_a_batched_env_it_does_nothing():
    env = TransformedEnv(CountingEnv(batch_size=[2]), PolicyAgeFilter(100, 0))
    check_env_specs(env)
    assert env.rollout(3).batch_size == (2, 3)


def test_errors():
    with pytest.raises(ValueError, match="expected max_policy_lag >= 0, got -1"):
        PolicyAgeFilter(1, -1)
    with pytest.raises(ValueError, match="expected current_version as an int or a callable"):
        PolicyAgeFilter("v1", 1)
    bad = TensorDict(policy_version=torch.zeros(3, 2), batch_size=[3])
    with pytest.raises(ValueError, match=r"of the batch shape \(3,\), got \(3, 2\)"):
        PolicyAgeFilter(1, 0)(bad)
