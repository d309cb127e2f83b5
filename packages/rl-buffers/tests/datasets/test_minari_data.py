"""Datasets are made here with minari's own writer (``create_dataset_from_buffers``) on a
gymnasium env: minari's ``DataCollector`` needs jax (``minari[create]``), which rl-buffers
does not depend on."""

import numpy as np
import pytest
import torch

from rl_buffers import SliceSampler
from rl_buffers.datasets import MinariExperienceReplay

gym = pytest.importorskip("gymnasium")
minari = pytest.importorskip("minari")
EpisodeBuffer = pytest.importorskip("minari.data_collector").EpisodeBuffer


def record(dataset_id, episodes=3):
    """Runs CartPole with random actions and stores the episodes as a minari dataset."""
    env = gym.make("CartPole-v1", max_episode_steps=40)
    env.action_space.seed(0)
    buffers = []
    for episode in range(episodes):
        observation, _ = env.reset(seed=episode)
        observations, actions, rewards, terminations, truncations = [observation], [], [], [], []
        while True:
            action = env.action_space.sample()
            observation, reward, terminated, truncated, _ = env.step(action)
            observations.append(observation)
            actions.append(action)
            rewards.append(reward)
            terminations.append(terminated)
            truncations.append(truncated)
            if terminated or truncated:
                break
        buffers.append(
            EpisodeBuffer(
                id=episode,
                observations=observations,
                actions=actions,
                rewards=rewards,
                terminations=terminations,
                truncations=truncations,
                infos={},
            )
        )
    minari.create_dataset_from_buffers(
        dataset_id=dataset_id,
        buffer=buffers,
        env=env,
        eval_env=env.spec,
        description="random CartPole episodes for rl-buffers tests",
        algorithm_name="random",
        author="rl-buffers tests",
        author_email="tests@example.com",
        code_permalink="https://example.com",
    )
    return buffers


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path


def test_transitions_match_the_recorded_episodes(store):
    recorded = record("cartpole/random-v0")
    buffer = MinariExperienceReplay("cartpole/random-v0", batch_size=16, root=store / "rb")
    steps = sum(len(b.rewards) for b in recorded)
    assert len(buffer) == steps
    assert buffer.metadata["episodes"] == 3
    everything = buffer.storage.get(torch.arange(steps))
    first = recorded[0]
    n = len(first.rewards)
    obs = torch.as_tensor(np.stack(first.observations))
    torch.testing.assert_close(everything["observation"][:n], obs[:-1])
    torch.testing.assert_close(everything["next", "observation"][:n], obs[1:])
    assert everything["action"][:n].tolist() == [int(a) for a in first.actions]
    assert everything["episode"].unique().tolist() == [0, 1, 2]
    done = everything["next", "done"].squeeze(-1)
    ends = torch.tensor([len(b.rewards) for b in recorded]).cumsum(0) - 1
    assert done.nonzero().squeeze(-1).tolist() == ends.tolist()
    batch = buffer.sample()
    assert batch["observation"].shape == (16, 4)
    assert batch["next", "reward"].shape == (16, 1)

    # A second buffer reuses the converted files.
    again = MinariExperienceReplay("cartpole/random-v0", root=store / "rb")
    assert len(again) == steps


def test_slices_of_episodes(store):
    record("cartpole/slices-v0", episodes=4)
    buffer = MinariExperienceReplay(
        "cartpole/slices-v0",
        batch_size=20,
        root=store / "rb",
        sampler=SliceSampler(slice_len=5, traj_key="episode"),
    )
    batch = buffer.sample()
    assert (batch["episode"].view(4, 5).diff(dim=1) == 0).all()


def test_errors(store):
    with pytest.raises(ValueError, match="download=True is not supported"):
        MinariExperienceReplay("cartpole/none-v0", download=True, root=store)
    with pytest.raises(FileNotFoundError, match="no local minari dataset 'cartpole/none-v0'"):
        MinariExperienceReplay("cartpole/none-v0", root=store)
    record("cartpole/ro-v0", episodes=1)
    buffer = MinariExperienceReplay("cartpole/ro-v0", root=store / "rb")
    with pytest.raises(RuntimeError, match="is read-only"):
        buffer.extend(buffer.storage.get(torch.arange(2)))
