"""DQN on CartPole-v1: an epsilon-greedy Q-network, a replay buffer and a target network.

One file, top to bottom: the config, the env, the Q-network with its exploration module, the
loss and its target updater, then the training loop. Each iteration collects
``frames_per_batch`` frames from ``num_envs`` vectorised envs into the replay buffer, then takes
``updates_per_batch`` gradient steps on minibatches sampled from it. The target network is a
copy of the online one refreshed every ``hard_update_interval`` gradient steps
(``HardUpdate``, the default) or follows it by Polyak averaging (``--target-update soft``,
``SoftUpdate``).

Run:  ``uv run python examples/dqn.py``; ``--help`` lists every flag.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``checkpoint.pt`` (Q-network, optimiser, config) and ``learning_curve.png``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--num-envs 8``)."""

    env_name: str = "CartPole-v1"
    seed: int = 0
    num_envs: int = 8  # vectorised gymnasium envs stepped together
    total_frames: int = 60_000  # env steps summed over all envs
    frames_per_batch: int = 256  # collected per iteration
    init_random_frames: int = 1_024  # uniform-random actions before learning starts
    updates_per_batch: int = 64  # gradient steps per collected batch
    batch_size: int = 64
    buffer_size: int = 50_000
    lr: float = 2.3e-3
    gamma: float = 0.99
    double_dqn: bool = True
    eps_init: float = 1.0
    eps_end: float = 0.04
    eps_frames: int = 8_000  # frames over which epsilon decays linearly
    target_update: Literal["hard", "soft"] = "hard"  # copy every N updates, or Polyak
    tau: float = 0.01  # share of the online weights mixed into the target per step (soft)
    hard_update_interval: int = 10  # gradient steps between target copies (hard)
    max_grad_norm: float = 10.0
    hidden: int = 256  # width of the two hidden layers
    target_return: float | None = None  # stop once the last-10-episode mean reaches it
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to dqn_<env>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


# gymnasium's classic-control tasks with discrete actions
RULES = {
    "env_name": _recipe.one_of("CartPole-v1", "Acrobot-v1", "MountainCar-v0"),
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
import time
from collections import deque
from pathlib import Path

import torch
from tensordict.nn import TensorDictSequential
from tqdm import tqdm

from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import TransformedEnv
from rl_core.modules import MLP, EGreedyModule, QValueActor
from rl_envs import GymEnv
from rl_envs.transforms import RewardSum
from rl_objectives import DQNLoss, HardUpdate, SoftUpdate
from rl_objectives.loggers import get_logger


def make_env(cfg: Config) -> TransformedEnv:
    """``num_envs`` copies of the task in one gymnasium vector env, with episode returns
    summed at ``"episode_reward"``."""
    env = TransformedEnv(GymEnv(cfg.env_name, num_envs=cfg.num_envs), RewardSum())
    env.set_seed(cfg.seed)
    return env


def save_curve(frames: list[int], returns: list[float], path: Path, title: str) -> None:
    """Episode returns against frames, with a running mean over 10 episodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frames, returns, ".", alpha=0.3, label="episode")
    smooth = [sum(returns[max(0, i - 9) : i + 1]) / len(returns[max(0, i - 9) : i + 1])
              for i in range(len(returns))]  # fmt: skip
    ax.plot(frames, smooth, label="mean of last 10")
    ax.set_xlabel("frames")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, float]:
    """Runs DQN; returns the final figures (``mean_return_last10``, ``frames``, ``seconds``,
    ``frames_to_target``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give
    exp_name = cfg.exp_name or f"dqn_{cfg.env_name}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    env = make_env(cfg)
    obs_dim = env.observation_spec["observation"].shape[-1]
    n_actions = env.action_spec.shape[-1]
    q_net = MLP(obs_dim, n_actions, depth=2, num_cells=cfg.hidden)
    actor = QValueActor(q_net, in_keys=["observation"], spec=env.action_spec)
    explore = EGreedyModule(
        env.action_spec, eps_init=cfg.eps_init, eps_end=cfg.eps_end,
        annealing_num_steps=cfg.eps_frames,
    )  # fmt: skip
    policy = TensorDictSequential(actor, explore)
    collector = SyncDataCollector(
        env,
        policy,
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        init_random_frames=cfg.init_random_frames,
    )
    loss_fn = DQNLoss(actor, loss_function="l2", delay_value=True, double_dqn=cfg.double_dqn)
    loss_fn.make_value_estimator(gamma=cfg.gamma)
    if cfg.target_update == "soft":
        target_updater = SoftUpdate(loss_fn, tau=cfg.tau)
    else:
        target_updater = HardUpdate(loss_fn, value_network_update_interval=cfg.hard_update_interval)
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(cfg.buffer_size), batch_size=cfg.batch_size
    )
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr)

    ep_frames: list[int] = []
    ep_returns: list[float] = []
    last10: deque[float] = deque(maxlen=10)
    frames, frames_to_target, start = 0, None, time.perf_counter()
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
        # Random-action batches carry no Q-values: store only what every batch has.
        buffer.extend(batch.reshape(-1).exclude("action_value", "chosen_action_value"))
        explore.step(batch.numel())

        if frames >= cfg.init_random_frames:
            for _ in range(cfg.updates_per_batch):
                loss = loss_fn(buffer.sample())["loss"]
                optim.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(loss_fn.parameters(), cfg.max_grad_norm)
                optim.step()
                target_updater.step()
            logger.log_scalar("train/loss", loss.item(), step=frames)
            collector.update_policy_weights_()

        mean10 = sum(last10) / len(last10) if last10 else float("nan")
        bar.set_postfix(
            episodes=len(ep_returns), return_last10=f"{mean10:.1f}", eps=f"{explore.eps.item():.2f}"
        )
        if cfg.target_return is not None and len(last10) == 10 and mean10 >= cfg.target_return:
            frames_to_target = frames
            break
    bar.close()
    collector.shutdown()
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
        save_curve(ep_frames, ep_returns, run_dir / "learning_curve.png", f"DQN {cfg.env_name}")
    logger.close()
    mean10 = sum(last10) / len(last10) if last10 else float("nan")
    print(
        f"done: {frames} frames in {seconds:.1f} s, {len(ep_returns)} episodes, "
        f"mean return of the last 10: {mean10:.1f}; outputs in {run_dir}"
    )
    return {
        "mean_return_last10": mean10,
        "frames": frames,
        "seconds": seconds,
        "frames_to_target": frames_to_target,
    }


if __name__ == "__main__":
    train(CONFIG)
