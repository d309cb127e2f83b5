import pytest
import torch
from tensordict import TensorDict

from rl_collectors import MultiStep, SyncDataCollector
from rl_core.testing import CountingEnv


def reference(reward, done, next_obs, gamma, n):
    """n-step returns from the definition, one row and one step at a time, in float64.

    For step t: add gamma**i * r[t + i] for i = 0, 1, ... while i < n, stopping after a
    step whose done is set or at the end of the row; the next observation is the one after
    the last step added.
    """
    rows, steps = done.shape
    summed = torch.zeros(rows, steps, dtype=torch.float64)
    horizon = torch.zeros(rows, steps, dtype=torch.int64)
    shifted = torch.zeros_like(next_obs, dtype=torch.float64)
    for b in range(rows):
        for t in range(steps):
            total, i = 0.0, 0
            while i < n and t + i < steps:
                total += gamma**i * float(reward[b, t + i])
                i += 1
                if done[b, t + i - 1]:
                    break
            summed[b, t] = total
            horizon[b, t] = i
            shifted[b, t] = next_obs[b, t + i - 1].double()
    return summed, horizon, shifted


def random_batch(rows, steps, seed, obs_dim=3):
    generator = torch.Generator().manual_seed(seed)
    done = torch.rand(rows, steps, 1, generator=generator) < 0.2
    return TensorDict(
        observation=torch.randn(rows, steps, obs_dim, generator=generator, dtype=torch.float64),
        action=torch.randn(rows, steps, 2, generator=generator),
        next=TensorDict(
            observation=torch.randn(rows, steps, obs_dim, generator=generator, dtype=torch.float64),
            reward=torch.randn(rows, steps, 1, generator=generator, dtype=torch.float64),
            done=done,
            terminated=done.clone(),
            truncated=torch.zeros_like(done),
            batch_size=[rows, steps],
        ),
        batch_size=[rows, steps],
    )


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("gamma", [0.9, 1.0])
def test_matches_the_float64_definition(n, gamma):
    batch = random_batch(4, 12, seed=n)
    before = batch.clone()
    out = MultiStep(gamma=gamma, n_steps=n)(batch)
    done = batch["next", "done"].squeeze(-1)
    summed, horizon, shifted = reference(
        batch["next", "reward"].squeeze(-1), done, batch["next", "observation"], gamma, n
    )
    torch.testing.assert_close(out["next", "reward"].squeeze(-1), summed)
    assert out["next", "reward"].shape == (4, 12, 1)
    torch.testing.assert_close(out["next", "original_reward"], batch["next", "reward"])
    assert torch.equal(out["steps_to_next_obs"], horizon)
    torch.testing.assert_close(out["next", "observation"], shifted)
    torch.testing.assert_close(out["gamma"], gamma ** horizon.float())
    assert torch.equal(out["nonterminal"], horizon != 1)
    # The done flags and the root entries are the step's own.
    for key in ("done", "terminated", "truncated"):
        assert torch.equal(out["next", key], batch["next", key])
    assert torch.equal(out["observation"], batch["observation"])
    assert (batch == before).all()  # the input is left as it was
    if n > 1:
        assert not torch.equal(out["next", "reward"], batch["next", "reward"])


def test_unbatched_rows_and_a_mask():
    batch = random_batch(1, 9, seed=3)[0]  # batch size [T]
    batch.set(("collector", "mask"), torch.arange(9) < 7)
    out = MultiStep(gamma=0.8, n_steps=3)(batch)
    done = batch["next", "done"].reshape(1, 9)
    summed, horizon, _ = reference(
        batch["next", "reward"].reshape(1, 9), done, batch["next", "observation"][None], 0.8, 3
    )
    torch.testing.assert_close(out["next", "reward"].reshape(1, 9), summed)
    assert torch.equal(out["steps_to_next_obs"], horizon[0])
    assert not out["nonterminal"][7:].any()  # padding is never nonterminal


def test_as_a_collector_postproc():
    env = CountingEnv(max_count=3, batch_size=[2])
    collector = SyncDataCollector(
        env,
        lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)),
        frames_per_batch=12,
        postproc=MultiStep(gamma=0.5, n_steps=2),
    )
    batch = collector.next()
    # Episodes of 3 steps (counts 0 -> 1 -> 2 -> 3), rewards 1, batches of 6 steps.
    assert batch["steps_to_next_obs"][0].tolist() == [2, 2, 1, 2, 2, 1]
    assert batch["next", "reward"][0].squeeze(-1).tolist() == [1.5, 1.5, 1.0, 1.5, 1.5, 1.0]
    assert batch["next", "observation"][0].squeeze(-1).tolist() == [2, 3, 3, 2, 3, 3]
    assert batch["next", "original_reward"].eq(1).all()


def test_bad_arguments_and_batches():
    with pytest.raises(ValueError, match=r"n_steps as an int >= 1, got 0"):
        MultiStep(0.9, 0)
    with pytest.raises(ValueError, match=r"gamma in \(0, 1\], got 1.5"):
        MultiStep(1.5, 3)
    batch = random_batch(2, 5, seed=0)
    with pytest.raises(KeyError, match="MultiStep: the batch lacks") as error:
        MultiStep(0.9, 2)(batch.exclude(("next", "reward")))
    assert "'reward'" in str(error.value).replace("\\", "")
    wide = batch.clone()
    wide.set(("next", "done"), torch.zeros(2, 5, 2, dtype=torch.bool), inplace=False)
    with pytest.raises(ValueError, match=r"\('next', 'done'\) of shape \(2, 5\) or \(2, 5, 1\)"):
        MultiStep(0.9, 2)(wide)
