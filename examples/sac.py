"""SAC on Pendulum-v1: a tanh-Gaussian actor, twin Q-networks, a learned temperature.

One file, top to bottom: the config, the env, the actor and critic, the loss and its target
updater, then the training loop. Each iteration collects ``frames_per_batch`` frames from
``num_envs`` vectorised envs into the replay buffer, then takes ``updates_per_batch``
gradient steps on minibatches sampled from it; the target critics follow the online ones by
Polyak averaging (``SoftUpdate``).

Run:  ``uv run python examples/sac.py``; ``--help`` lists every flag.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``checkpoint.pt`` (actor, critics, optimiser, config) and ``learning_curve.png``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--num-envs 4``)."""

    env_name: str = "Pendulum-v1"
    seed: int = 0
    num_envs: int = 4  # vectorised gymnasium envs stepped together
    total_frames: int = 15_000  # env steps summed over all envs
    frames_per_batch: int = 32  # collected per iteration
    init_random_frames: int = 1_000  # uniform-random actions before learning starts
    updates_per_batch: int = 16  # gradient steps per collected batch
    batch_size: int = 128
    buffer_size: int = 100_000
    lr: float = 3e-3  # actor, critics and temperature
    gamma: float = 0.99
    tau: float = 0.01  # share of the online critics mixed into the targets per step
    hidden: int = 64  # width of the two hidden layers of every network
    target_return: float | None = None  # stop once the last-10-episode mean reaches it
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to sac_<env>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


# gymnasium's classic-control tasks with continuous actions
RULES = {
    "env_name": _recipe.one_of("Pendulum-v1", "MountainCarContinuous-v0"),
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
from tensordict.nn import NormalParamExtractor, TensorDictModule
from tqdm import tqdm

from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import TransformedEnv
from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from rl_envs import GymEnv
from rl_envs.transforms import RewardSum
from rl_objectives import SACLoss, SoftUpdate
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


def make_actor_critic(env: TransformedEnv, hidden: int) -> tuple[ProbabilisticActor, ValueOperator]:
    """A tanh-Gaussian policy squashed onto the action box and a Q-network on
    ``(observation, action)``."""
    obs_dim = env.observation_spec["observation"].shape[-1]
    action_spec = env.action_spec
    n_act = action_spec.shape[-1]
    net = torch.nn.Sequential(
        MLP(obs_dim, 2 * n_act, depth=2, num_cells=hidden), NormalParamExtractor()
    )
    # The spec's bounds are per env ([num_envs, n_act]); the policy needs one copy.
    low, high = action_spec.low.reshape(-1, n_act)[0], action_spec.high.reshape(-1, n_act)[0]
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]), ["loc", "scale"],
        spec=action_spec, distribution_class=TanhNormal,
        distribution_kwargs={"low": low, "high": high}, return_log_prob=True,
    )  # fmt: skip
    qvalue = ValueOperator(
        MLP(obs_dim + n_act, 1, depth=2, num_cells=hidden), ["observation", "action"]
    )
    return actor, qvalue


def train(cfg: Config) -> dict[str, float]:
    """Runs SAC; returns the final figures (``mean_return_last10``, ``frames``, ``seconds``,
    ``frames_to_target``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give
    exp_name = cfg.exp_name or f"sac_{cfg.env_name}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    env = make_env(cfg)
    actor, qvalue = make_actor_critic(env, cfg.hidden)
    collector = SyncDataCollector(
        env,
        actor,
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        init_random_frames=cfg.init_random_frames,
    )
    loss_fn = SACLoss(actor, qvalue, num_qvalue_nets=2, loss_function="l2")
    loss_fn.make_value_estimator(gamma=cfg.gamma)
    target_updater = SoftUpdate(loss_fn, tau=cfg.tau)
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(cfg.buffer_size), batch_size=cfg.batch_size
    )
    # The actor loss sees frozen critics and each term moves only its own parameters, so one
    # optimiser over the sum is three optimisers with one learning rate.
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
        # Random-action batches carry no log-probabilities: store only what every batch has.
        buffer.extend(batch.reshape(-1).select("observation", "action", "next"))

        if frames >= cfg.init_random_frames:
            for _ in range(cfg.updates_per_batch):
                out = loss_fn(buffer.sample())
                loss = out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]
                optim.zero_grad()
                loss.backward()
                optim.step()
                target_updater.step()
            logger.log_scalar("train/loss_qvalue", out["loss_qvalue"].item(), step=frames)
            logger.log_scalar("train/alpha", out["alpha"].item(), step=frames)
            collector.update_policy_weights_()

        mean10 = sum(last10) / len(last10) if last10 else float("nan")
        bar.set_postfix(episodes=len(ep_returns), return_last10=f"{mean10:.1f}")
        if cfg.target_return is not None and len(last10) == 10 and mean10 >= cfg.target_return:
            frames_to_target = frames
            break
    bar.close()
    collector.shutdown()
    seconds = time.perf_counter() - start

    torch.save(
        {
            "loss_module": loss_fn.state_dict(),  # actor, critics, targets and temperature
            "optimizer": optim.state_dict(),
            "config": dataclasses.asdict(cfg),
            "frames": frames,
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot and ep_returns:
        save_curve(ep_frames, ep_returns, run_dir / "learning_curve.png", f"SAC {cfg.env_name}")
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
