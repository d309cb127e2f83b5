"""DQN on an Atari game (Breakout by default) with the usual pixel pipeline.

One file, top to bottom: the config, the env, the Q-network, the loss and its target updater,
then the training loop. Each of ``num_envs`` worker processes of a ``ParallelEnv`` runs an
``ale-py`` game (4 frames per step, no sticky actions) under the transforms Atari recipes use:

- ``NoopResetEnv``: up to 30 random no-op steps after each reset;
- ``ToTensorImage`` -> ``GrayScale`` -> ``Resize(84, 84)`` -> ``CatFrames(4)``: the
  observation becomes the last 4 grey 84x84 frames, floats in [0, 1];
- ``RewardSum`` (the game score, before clipping), then ``RewardClipping(-1, 1)``;
- ``StepCounter``: truncates an episode after ``max_episode_steps`` steps;
- ``EndOfLifeTransform``: flags each lost life; the loss treats it as the end of the
  trajectory for its bootstrapped targets (``done``/``terminated`` keys set to it), while the
  episode itself goes on until the game ends.

The Q-network is the Nature-DQN ``ConvNet`` (32-64-64 channels) followed by a 512-unit MLP;
double DQN with a hard target copy. Frames are stored in the replay buffer as ``uint8`` (4
times smaller than floats) in a ``LazyMemmapStorage`` on disk.

Not run for learning in CI (Atari DQN needs millions of frames, hours on a CPU); the tests run
it for a few hundred frames. Run:  ``uv run python examples/dqn_atari.py``; ``--help`` lists
every flag.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``checkpoint.pt`` (Q-network, optimiser, config) and ``learning_curve.png``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--num-envs 8``)."""

    env_name: str = "ALE/Breakout-v5"
    seed: int = 0
    num_envs: int = 4  # worker processes of the ParallelEnv
    max_episode_steps: int = 27_000  # agent steps (4 frames each) before truncation
    noops: int = 30  # at most this many no-op steps after a reset
    total_frames: int = 10_000_000  # agent steps summed over all envs
    frames_per_batch: int = 16  # collected per iteration
    init_random_frames: int = 50_000  # uniform-random actions before learning starts
    updates_per_batch: int = 4  # gradient steps per collected batch
    batch_size: int = 32
    buffer_size: int = 100_000  # transitions; about 5.6 GB on disk as uint8 frames
    lr: float = 1e-4
    gamma: float = 0.99
    eps_init: float = 1.0
    eps_end: float = 0.01
    eps_frames: int = 1_000_000  # frames over which epsilon decays linearly
    hard_update_interval: int = 2_000  # gradient steps between target copies
    max_grad_norm: float = 10.0
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to dqn_atari_<game>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "env_name": _recipe.Rule(
        "an Atari id of ale-py, ALE/<Game>-v5 (e.g. ALE/Pong-v5)",
        lambda v, _: re.fullmatch(r"ALE/[A-Z]\w*-v5", v) is not None,
    ),
    "noops": _recipe.Rule("an integer >= 0", lambda v, _: v >= 0),
    "frames_per_batch": _recipe.multiple_of("num_envs"),
}


def parse_config(argv: list[str] | None = None) -> Config:
    """Builds a :class:`Config` from the command line: flags, ``key=value`` overrides and
    ``--config runs/<exp>/config.json`` (``--help`` lists every field and its default)."""
    return _recipe.parse_config(Config, argv, description=__doc__.split("\n")[0], rules=RULES)


if __name__ == "__main__":
    # Read before torch and the packages load (seconds): --help and a refused value answer now.
    CONFIG = parse_config()


import dataclasses
import functools
import time
from collections import deque
from pathlib import Path

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictSequential
from tqdm import tqdm

from rl_buffers import LazyMemmapStorage, TensorDictReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import Compose, StepCounter, TransformedEnv
from rl_core.modules import MLP, ConvNet, EGreedyModule, QValueActor
from rl_envs import GymEnv, ParallelEnv, default_info_dict_reader
from rl_envs.transforms import (
    CatFrames,
    EndOfLifeTransform,
    GrayScale,
    NoopResetEnv,
    Resize,
    RewardClipping,
    RewardSum,
    ToTensorImage,
)
from rl_objectives import DQNLoss, HardUpdate
from rl_objectives.loggers import get_logger

PIXELS = "observation"


def make_atari_env(env_name: str, max_episode_steps: int, noops: int) -> TransformedEnv:
    """One game with the pixel pipeline (runs inside a worker process)."""
    base = GymEnv(env_name, frameskip=4, repeat_action_probability=0.0)
    base.set_info_dict_reader(default_info_dict_reader(["lives"]))
    transforms = Compose(
        NoopResetEnv(noops),
        ToTensorImage(in_keys=[PIXELS]),
        GrayScale(in_keys=[PIXELS]),
        Resize(84, 84, in_keys=[PIXELS]),
        CatFrames(4, -3, in_keys=[PIXELS]),
        RewardSum(),
        RewardClipping(-1.0, 1.0),
        StepCounter(max_steps=max_episode_steps),
        EndOfLifeTransform(),
    )
    return TransformedEnv(base, transforms)


def make_env(cfg: Config) -> ParallelEnv:
    """``num_envs`` games in worker processes."""
    make_one = functools.partial(make_atari_env, cfg.env_name, cfg.max_episode_steps, cfg.noops)
    env = ParallelEnv(cfg.num_envs, make_one)
    env.set_seed(cfg.seed)
    return env


def make_q_network(n_actions: int) -> torch.nn.Sequential:
    """The Nature-DQN network: three convolutions on ``[*B, 4, 84, 84]``, then 512 units."""
    conv = ConvNet(
        4, num_cells=[32, 64, 64], kernel_sizes=[8, 4, 3], strides=[4, 2, 1],
        activation_class=torch.nn.ReLU,
    )  # fmt: skip
    head = MLP(64 * 7 * 7, n_actions, depth=1, num_cells=512, activation_class=torch.nn.ReLU)
    return torch.nn.Sequential(conv, head)


def frames_to(td: TensorDictBase, dtype: torch.dtype) -> TensorDictBase:
    """The stacked frames of ``td`` (now and next) as ``uint8`` (storage) or float in [0, 1]."""
    for key in (PIXELS, ("next", PIXELS)):
        x = td.get(key)
        if dtype == torch.uint8:
            td.set(key, x.mul(255).round_().to(torch.uint8))
        else:
            td.set(key, x.to(dtype).div_(255))
    return td


def save_curve(frames: list[int], returns: list[float], path: Path, title: str) -> None:
    """Episode scores against frames, with a running mean over 10 episodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frames, returns, ".", alpha=0.3, label="episode")
    smooth = [sum(returns[max(0, i - 9) : i + 1]) / len(returns[max(0, i - 9) : i + 1])
              for i in range(len(returns))]  # fmt: skip
    ax.plot(frames, smooth, label="mean of last 10")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("score")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, float]:
    """Runs DQN; returns the final figures (``mean_return_last10``, ``episodes``, ``frames``,
    ``seconds``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # the env workers take the other cores
    game = cfg.env_name.split("/")[-1]
    exp_name = cfg.exp_name or f"dqn_atari_{game}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    env = make_env(cfg)
    actor = QValueActor(
        make_q_network(env.action_spec.shape[-1]), in_keys=[PIXELS], spec=env.action_spec
    )
    explore = EGreedyModule(
        env.action_spec, eps_init=cfg.eps_init, eps_end=cfg.eps_end,
        annealing_num_steps=cfg.eps_frames,
    )  # fmt: skip
    collector = SyncDataCollector(
        env,
        TensorDictSequential(actor, explore),
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        init_random_frames=cfg.init_random_frames,
    )
    loss_fn = DQNLoss(actor, loss_function="smooth_l1", delay_value=True, double_dqn=True)
    # A lost life ends the trajectory for the targets; the game goes on.
    loss_fn.set_keys(done="end-of-life", terminated="end-of-life")
    loss_fn.make_value_estimator(gamma=cfg.gamma)
    target_updater = HardUpdate(loss_fn, value_network_update_interval=cfg.hard_update_interval)
    buffer = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(cfg.buffer_size, scratch_dir=run_dir / "buffer"),
        batch_size=cfg.batch_size,
    )
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr)

    ep_frames: list[int] = []
    ep_returns: list[float] = []
    last10: deque[float] = deque(maxlen=10)
    frames, start = 0, time.perf_counter()
    bar = tqdm(total=cfg.total_frames, unit="frames", dynamic_ncols=True)
    for batch in collector:
        frames += batch.numel()
        bar.update(batch.numel())
        done = batch["next", "done"]
        for r in batch["next", "episode_reward"][done].tolist():
            ep_frames.append(frames)
            ep_returns.append(r)
            last10.append(r)
            logger.log_scalar("train/episode_return", r, step=frames)
        keep = [PIXELS, "action", ("next", PIXELS), ("next", "reward"), ("next", "end-of-life")]
        buffer.extend(frames_to(batch.reshape(-1).select(*keep), torch.uint8))
        explore.step(batch.numel())

        if frames >= cfg.init_random_frames:
            for _ in range(cfg.updates_per_batch):
                loss = loss_fn(frames_to(buffer.sample(), torch.float32))["loss"]
                optim.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(loss_fn.parameters(), cfg.max_grad_norm)
                optim.step()
                target_updater.step()
            logger.log_scalar("train/loss", loss.item(), step=frames)
            collector.update_policy_weights_()

        mean10 = sum(last10) / len(last10) if last10 else float("nan")
        bar.set_postfix(
            episodes=len(ep_returns), score_last10=f"{mean10:.1f}", eps=f"{explore.eps.item():.2f}"
        )
    bar.close()
    collector.shutdown()
    env.close()
    seconds = time.perf_counter() - start

    torch.save(
        {
            "q_network": actor.state_dict(),
            "optimizer": optim.state_dict(),
            "config": dataclasses.asdict(cfg),
            "frames": frames,
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot and ep_returns:
        save_curve(ep_frames, ep_returns, run_dir / "learning_curve.png", f"DQN {game}")
    logger.close()
    mean10 = sum(last10) / len(last10) if last10 else float("nan")
    print(
        f"done: {frames} frames in {seconds:.1f} s, {len(ep_returns)} episodes, "
        f"mean score of the last 10: {mean10:.1f}; outputs in {run_dir}"
    )
    return {
        "mean_return_last10": mean10,
        "episodes": len(ep_returns),
        "frames": frames,
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
