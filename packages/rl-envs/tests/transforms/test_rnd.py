"""RunningMeanStd and RNDTransform against float64 references written from Burda et al. 2018
(the intrinsic reward is the predictor's squared error on the standardised next observation,
divided by the running std of the rewards) and the pairwise mean/variance update."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import RNDTransform, RunningMeanStd


def ref_stats(batches: list[list[list[float]]], eps: float) -> tuple[list[float], list[float]]:
    """Mean and population variance of all samples plus ``eps`` pseudo-samples of mean 0 and
    variance 1 (the starting statistics), feature by feature."""
    rows = [row for batch in batches for row in batch]
    n = len(rows)
    total = n + eps
    means, variances = [], []
    for f in range(len(rows[0])):
        values = [row[f] for row in rows]
        mean = sum(values) / total  # the prior's mean is 0
        second = (sum(v * v for v in values) + eps * 1.0) / total  # E[x^2] of the prior is 1
        means.append(mean)
        variances.append(second - mean * mean)
    return means, variances


def test_running_mean_std_matches_pooled_statistics_in_float64():
    torch.manual_seed(0)
    batches = [torch.randn(5, 3, dtype=torch.float64) * 3 + 1 for _ in range(4)]
    batches.append(torch.randn(1, 3, dtype=torch.float64))  # a single sample
    rms = RunningMeanStd(shape=(3,), epsilon=1e-4).double()
    for batch in batches:
        rms.update(batch)
    mean, var = ref_stats([b.tolist() for b in batches], 1e-4)
    torch.testing.assert_close(
        rms.mean, torch.tensor(mean, dtype=torch.float64), rtol=1e-12, atol=1e-12
    )
    torch.testing.assert_close(
        rms.var, torch.tensor(var, dtype=torch.float64), rtol=1e-12, atol=1e-12
    )
    assert rms.count.item() == pytest.approx(21 + 1e-4)
    x = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
    expected = [(x[i].item() - mean[i]) / math.sqrt(var[i]) for i in range(3)]
    torch.testing.assert_close(rms.normalize(x), torch.tensor(expected, dtype=torch.float64))


def test_running_mean_std_refuses_bad_shapes_and_epsilon():
    rms = RunningMeanStd(shape=(3,))
    with pytest.raises(ValueError, match=r"feature shape \(3,\), got a tensor of shape \(4, 2\)"):
        rms.update(torch.zeros(4, 2))
    with pytest.raises(ValueError, match="expected epsilon"):
        RunningMeanStd(epsilon=0.0)


def _linear(weight: list[list[float]]) -> torch.nn.Linear:
    w = torch.tensor(weight, dtype=torch.float64)
    layer = torch.nn.Linear(w.shape[1], w.shape[0], bias=False).double()
    with torch.no_grad():
        layer.weight.copy_(w)
    return layer


TARGET_W = [[1.0, -2.0], [0.5, 3.0], [-1.0, 1.0]]
PREDICTOR_W = [[0.0, 1.0], [1.0, 1.0], [2.0, -0.5]]


def ref_error(obs: list[float]) -> float:
    """mean_k (P o - T o)_k^2 with the fixed weights above."""
    diffs = [
        sum(PREDICTOR_W[k][i] * obs[i] for i in range(2))
        - sum(TARGET_W[k][i] * obs[i] for i in range(2))
        for k in range(3)
    ]
    return sum(d * d for d in diffs) / 3


def test_intrinsic_reward_is_the_prediction_error_over_its_running_std():
    t = RNDTransform(
        _linear(TARGET_W), _linear(PREDICTOR_W), normalize_obs=False, reward_clip=100.0
    )
    batches = [[[1.0, 0.0], [0.5, -2.0]], [[3.0, 1.0], [-1.0, 0.25]]]
    seen: list[list[list[float]]] = []
    for batch in batches:
        errors = [[ref_error(o)] for o in batch]
        seen.append(errors)
        _, var = ref_stats(seen, 1e-4)
        expected = [[e[0] / math.sqrt(var[0])] for e in errors]
        td = TensorDict(observation=torch.tensor(batch, dtype=torch.float64), batch_size=[2])
        got = t(td)["intrinsic_reward"]
        torch.testing.assert_close(
            got, torch.tensor(expected, dtype=torch.float64), rtol=1e-6, atol=1e-9
        )
    # without reward normalisation the reward is the raw error; in eval mode nothing updates
    raw = RNDTransform(
        _linear(TARGET_W), _linear(PREDICTOR_W), normalize_obs=False, normalize_reward=False
    )
    td = TensorDict(observation=torch.tensor([[0.5, -2.0]], dtype=torch.float64), batch_size=[1])
    assert raw(td)["intrinsic_reward"].item() == pytest.approx(ref_error([0.5, -2.0]))
    t.eval()
    count = t.reward_rms.count.clone()
    t(td)
    assert t.reward_rms.count == count


def test_observations_are_standardised_and_clipped_before_the_networks():
    t = RNDTransform(_linear(TARGET_W), _linear(PREDICTOR_W), normalize_reward=False, obs_clip=0.5)
    obs = torch.tensor([[1.0, 0.0], [3.0, -2.0]], dtype=torch.float64)
    reward = t(TensorDict(observation=obs, batch_size=[2]))["intrinsic_reward"]
    mean, var = ref_stats([obs.tolist()], 1e-4)
    normed = [
        [max(-0.5, min(0.5, (o[i] - mean[i]) / math.sqrt(var[i]))) for i in range(2)]
        for o in obs.tolist()
    ]
    expected = torch.tensor([[ref_error(o)] for o in normed], dtype=torch.float64)
    torch.testing.assert_close(reward, expected, rtol=1e-5, atol=1e-9)


def test_in_an_env_it_writes_a_reward_entry_and_keeps_the_reward(cartpole):
    target, predictor = torch.nn.Linear(4, 8), torch.nn.Linear(4, 8)
    env = TransformedEnv(cartpole, RNDTransform(target, predictor))
    check_env_specs(env)
    traj = env.rollout(6)
    assert traj["next", "intrinsic_reward"].shape == (6, 1)
    assert bool((traj["next", "intrinsic_reward"] >= 0).all())
    assert traj["next", "reward"].eq(1).all()  # CartPole's own reward, untouched
    assert "intrinsic_reward" not in env.reset().keys()
    assert not any(p.requires_grad for p in target.parameters())
    assert all(p.requires_grad for p in predictor.parameters())


def test_state_dict_round_trips_the_statistics():
    t = RNDTransform(torch.nn.Linear(2, 4), torch.nn.Linear(2, 4))
    t(TensorDict(observation=torch.randn(8, 2), batch_size=[8]))
    fresh = RNDTransform(torch.nn.Linear(2, 4), torch.nn.Linear(2, 4))
    fresh.load_state_dict(t.state_dict())
    torch.testing.assert_close(fresh.obs_rms.mean, t.obs_rms.mean)
    torch.testing.assert_close(fresh.reward_rms.var, t.reward_rms.var)


def test_bad_input_is_refused_naming_the_argument():
    net = torch.nn.Linear(2, 4)
    with pytest.raises(
        TypeError, match=r"expected predictor_network as a torch\.nn\.Module, got function"
    ):
        RNDTransform(net, lambda x: x)
    with pytest.raises(ValueError, match="expected obs_clip as a number > 0, got 0"):
        RNDTransform(net, torch.nn.Linear(2, 4), obs_clip=0)
    with pytest.raises(ValueError, match="one observation key"):
        RNDTransform(net, torch.nn.Linear(2, 4), in_keys=["a", "b"], out_keys=["c", "d"])
    t = RNDTransform(net, torch.nn.Linear(2, 3))
    with pytest.raises(
        ValueError, match=r"predictor's output shaped like the target's \(5, 4\), got \(5, 3\)"
    ):
        t(TensorDict(observation=torch.randn(5, 2), batch_size=[5]))
    with pytest.raises(KeyError, match="expected the observation at 'observation'"):
        t(TensorDict(pixels=torch.randn(5, 2), batch_size=[5]))
