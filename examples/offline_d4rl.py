"""Offline datasets: a D4RL-layout HDF5 file served as a TED replay buffer, sampled in slices
that stay inside episodes, and stored in the compact and per-trajectory formats.

One file, top to bottom: the config, the dataset recording, then what is done with it. A
random policy plays ``episodes`` episodes of Pendulum-v1 (gymnasium directly); the steps are
written with h5py in D4RL's published layout (``observations``, ``actions``, ``rewards``,
``terminals``, ``timeouts``) to ``runs/<exp-name>/d4rl/pendulum-random-v0.hdf5``, which
``D4RLExperienceReplay(root=...)`` converts once into memory-mapped TED rows. A
``SliceSampler`` draws sub-trajectories of ``slice_len`` steps (checked: none crosses an
episode's end); ``TED2Flat`` stores the rows without the repeated next observations (its
size against the TED rows' is printed), ``TED2Nested`` splits them into trajectories and
``H5Split`` writes one HDF5 group per trajectory.

Run:  ``uv run python examples/offline_d4rl.py``; ``--help`` lists every flag.
"""

from __future__ import annotations

from dataclasses import dataclass

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--episodes 40``)."""

    seed: int = 0
    episodes: int = 20  # Pendulum-v1 episodes of 200 steps played by a random policy
    slice_len: int = 8  # steps per sampled sub-trajectory
    batch_size: int = 256  # steps per sampled batch (a multiple of slice_len)
    batches: int = 50  # batches sampled to check the slices
    exp_name: str | None = None  # defaults to offline_d4rl_<seed>_<unix time>
    out_dir: str = "runs"


RULES = {"batch_size": _recipe.multiple_of("slice_len")}


def parse_config(argv: list[str] | None = None) -> Config:
    """Builds a :class:`Config` from the command line: flags, ``key=value`` overrides and
    ``--config runs/<exp>/config.json`` (``--help`` lists every field and its default)."""
    return _recipe.parse_config(Config, argv, description=__doc__.split("\n")[0], rules=RULES)


if __name__ == "__main__":
    # Read before torch and the packages load (seconds): --help and a refused value answer now.
    CONFIG = parse_config()


import time
from pathlib import Path

import gymnasium as gym
import h5py
import numpy as np
import torch

from rl_buffers import H5Split, SliceSampler, TED2Flat, TED2Nested
from rl_buffers.datasets import D4RLExperienceReplay


def record_d4rl_file(path: Path, episodes: int, seed: int) -> float:
    """Plays ``episodes`` random-policy episodes and writes them in D4RL's layout; returns
    their mean return."""
    env = gym.make("Pendulum-v1")
    env.action_space.seed(seed)
    columns: dict[str, list] = {k: [] for k in ("observations", "actions", "rewards")}
    terminals, timeouts, returns = [], [], []
    for episode in range(episodes):
        observation, _ = env.reset(seed=seed + episode)
        total, ended = 0.0, False
        while not ended:
            action = env.action_space.sample()
            following, reward, terminated, truncated, _ = env.step(action)
            columns["observations"].append(observation)
            columns["actions"].append(action)
            columns["rewards"].append(reward)
            terminals.append(terminated)
            timeouts.append(truncated)
            observation, total, ended = following, total + reward, terminated or truncated
        returns.append(total)
    env.close()
    with h5py.File(path, "w") as handle:
        for key, values in columns.items():
            handle[key] = np.asarray(values, dtype=np.float32)
        handle["terminals"] = np.asarray(terminals, dtype=bool)
        handle["timeouts"] = np.asarray(timeouts, dtype=bool)
        handle["metadata/policy"] = "uniform random"
    return float(np.mean(returns))


def tensor_bytes(data) -> int:
    return sum(t.numel() * t.element_size() for t in data.values(True, True))


def train(cfg: Config) -> dict[str, float]:
    """Records the dataset, loads it, samples it in slices and converts it; returns the
    figures printed."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    exp_name = cfg.exp_name or f"offline_d4rl_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:
        _recipe.save_config(cfg, run_dir)
        root = run_dir / "d4rl"
        root.mkdir()
        start = time.perf_counter()
        mean_return = record_d4rl_file(root / "pendulum-random-v0.hdf5", cfg.episodes, cfg.seed)
        data = D4RLExperienceReplay(
            "pendulum-random-v0",
            batch_size=cfg.batch_size,
            root=root,
            download=False,
            sampler=SliceSampler(slice_len=cfg.slice_len, end_key=("next", "done")),
        )
        loaded = time.perf_counter() - start
        crossing = 0
        for _ in range(cfg.batches):
            batch = data.sample().reshape(-1, cfg.slice_len)
            crossing += int(batch["next", "done"][:, :-1].any(-1).sum())
        rows = data[:]
        flat = TED2Flat()(rows, path=run_dir / "flat")
        nested = TED2Nested()(rows)
        H5Split()(nested, path=run_dir / "trajectories.h5")
        figures = {
            "rows": float(len(data)),
            "episodes": float(nested.shape[0]),
            "mean_return": mean_return,
            "slices_crossing_an_end": float(crossing),
            "ted_bytes": float(tensor_bytes(rows)),
            "flat_bytes": float(tensor_bytes(flat)),
            "h5_bytes": float((run_dir / "trajectories.h5").stat().st_size),
            "record_and_load_s": loaded,
        }
    print(
        f"{int(figures['rows'])} TED rows in {int(figures['episodes'])} episodes (mean return "
        f"{mean_return:.1f}), recorded and converted in {loaded:.1f} s; "
        f"{cfg.batches} batches of {cfg.batch_size // cfg.slice_len} slices of {cfg.slice_len} "
        f"steps: {crossing} slices cross an episode's end; TED rows "
        f"{figures['ted_bytes'] / 1e6:.2f} MB, TED2Flat {figures['flat_bytes'] / 1e6:.2f} MB, "
        f"H5Split file {figures['h5_bytes'] / 1e6:.2f} MB; written to {run_dir}"
    )
    return figures


if __name__ == "__main__":
    train(CONFIG)
