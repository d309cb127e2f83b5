"""The Pendulum-v1 swing-up expert and its D4RL-layout dataset, shared by the imitation examples
(``act_pendulum.py``, ``diffusion_bc_pendulum.py``): the scripted controller, the recording
into a D4RL HDF5 file, the evaluation of a cloned policy and the loss curve."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import h5py
import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_buffers.datasets import D4RLExperienceReplay
from rl_core import ExplorationType, set_exploration_type
from rl_envs import GymEnv

OBS_SCALE = torch.tensor([1.0, 1.0, 1.0 / 8.0])  # cos, sin, angular speed (|speed| <= 8)
MAX_TORQUE = 2.0


def swing_up(obs: np.ndarray) -> np.ndarray:
    """The expert: energy pumping far from the top, a PD controller near it.

    With ``theta = 0`` upright, Pendulum's ``E = speed^2 / 2 + 15 cos(theta)`` is 15 at rest
    on top and ``dE/dt = 3 u speed``: pushing along the speed while ``E < 15`` pumps energy in.
    """
    cos, sin, speed = obs[..., 0], obs[..., 1], obs[..., 2]
    theta = np.arctan2(sin, cos)
    energy = 0.5 * speed**2 + 15.0 * cos
    pump = MAX_TORQUE * np.tanh(2.0 * speed) * np.tanh((15.0 - energy) / 2.0)
    hold = -(10.0 * theta + 2.0 * speed)
    near_top = (cos > 0.85) & (np.abs(speed) < 4.0)
    return np.clip(np.where(near_top, hold, pump), -MAX_TORQUE, MAX_TORQUE)


def record_d4rl_file(
    path: Path, episodes: int, seed: int, noise: float | Sequence[float | None]
) -> float:
    """Plays ``episodes`` expert episodes of Pendulum-v1 and writes them in D4RL's layout;
    returns their mean return. ``noise`` is the std of the Gaussian torque noise, or a list
    of them used in turn, one per episode (``(0.2, 1.0)``: expert and noisy-expert episodes
    alternate, a mixed dataset like D4RL's "medium-expert"); ``None`` in place of a std plays
    uniformly random torques for that episode."""
    noises = [noise] if isinstance(noise, (int, float)) else list(noise)
    env = gym.make("Pendulum-v1")
    rng = np.random.default_rng(seed)
    columns = {k: [] for k in ("observations", "actions", "rewards", "terminals", "timeouts")}
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        total, ended = 0.0, False
        std = noises[episode % len(noises)]
        while not ended:
            if std is None:
                action = rng.uniform(-MAX_TORQUE, MAX_TORQUE)
            else:
                action = np.clip(swing_up(obs) + std * rng.standard_normal(), -2.0, 2.0)
            following, reward, terminated, truncated, _ = env.step(np.array([action], np.float32))
            for key, value in zip(columns, (obs, [action], reward, terminated, truncated)):
                columns[key].append(value)
            obs, total, ended = following, total + reward, terminated or truncated
        returns.append(total)
    env.close()
    with h5py.File(path, "w") as handle:
        for key in ("observations", "actions", "rewards"):
            handle[key] = np.asarray(columns[key], dtype=np.float32)
        for key in ("terminals", "timeouts"):
            handle[key] = np.asarray(columns[key], dtype=bool)
        handle["metadata/policy"] = f"scripted swing-up, torque noise std {noise}"
    return float(np.mean(returns))


def play(policy, episodes: int, seed: int) -> float:
    """Mean return of ``episodes`` Pendulum-v1 episodes (played at once) of ``policy``."""
    env = GymEnv("Pendulum-v1", num_envs=episodes)
    env.set_seed(seed)
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        rollout = env.rollout(200, policy)
    env.close()
    return rollout["next", "reward"].sum(-2).mean().item()


def save_curve(losses: list[float], path: Path, label: str) -> None:
    """Plots the training loss of ``label`` (a method's name) against updates, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(losses)
    ax.set_xlabel("updates")
    ax.set_ylabel(f"{label} loss")
    ax.set_yscale("log")
    ax.set_title(f"{label} on the Pendulum-v1 swing-up dataset")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def expert_rows(
    root: Path, dataset: str | None, episodes: int, seed: int, noise: float
) -> tuple[TensorDict, float]:
    """The dataset's TED rows, read through ``D4RLExperienceReplay(root=root)``, and the
    expert's mean return: ``episodes`` expert episodes recorded into ``root``, or the D4RL-layout
    file ``dataset`` copied there (its expert return unknown: NaN)."""
    path = root / "pendulum-expert-v0.hdf5"
    if dataset is None:
        expert_return = record_d4rl_file(path, episodes, seed, noise)
    else:
        shutil.copyfile(dataset, path)
        expert_return = float("nan")
    rows = D4RLExperienceReplay("pendulum-expert-v0", root=root, download=False)[:]
    return rows, expert_return


def random_return(episodes: int, seed: int) -> float:
    """Mean return of uniformly random torques over the same episodes as :func:`play`'s."""
    random_action = TensorDictModule(
        lambda obs: MAX_TORQUE * (2 * torch.rand(*obs.shape[:-1], 1) - 1),
        ["observation"], ["action"],
    )  # fmt: skip
    return play(random_action, episodes, seed)
