"""A2C (synchronous advantage actor-critic) on a gymnasium task: CartPole-v1 by default.

One file, top to bottom: the config, the env, the two networks, the loss, then the training
loop. Each iteration collects ``frames_per_batch`` frames from ``num_envs`` vectorised envs,
computes GAE advantages and takes one gradient step on the whole batch (on-policy: the data
is used once).

Run:  ``uv run python examples/a2c.py``, ``uv run python examples/a2c.py --env-name
Pendulum-v1``. Every config field is a flag: ``--help`` lists them.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``checkpoint.pt`` (networks, optimiser, config) and ``learning_curve.png``.
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
    total_frames: int = 200_000  # env steps summed over all envs
    frames_per_batch: int = 128  # collected per iteration (num_envs * rollout length)
    lr: float = 2e-3
    anneal_lr: bool = True  # linear decay of the learning rate to 0 over the run
    gamma: float = 0.99
    gae_lambda: float = 0.95
    entropy_coeff: float = 0.01
    critic_coeff: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64  # width of the two hidden layers of both networks
    target_return: float | None = None  # stop once the last-10-episode mean reaches it
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to a2c_<env>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


# gymnasium's classic-control tasks: the policy handles discrete and continuous actions
RULES = {
    "env_name": _recipe.one_of(
        "CartPole-v1", "Acrobot-v1", "MountainCar-v0", "Pendulum-v1", "MountainCarContinuous-v0"
    ),
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

from rl_collectors import SyncDataCollector
from rl_core import TransformedEnv
from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor, TanhNormal, ValueOperator
from rl_envs import GymEnv
from rl_envs.transforms import RewardSum
from rl_objectives import A2CLoss
from rl_objectives.loggers import get_logger


def make_env(cfg: Config) -> TransformedEnv:
    """``num_envs`` copies of the task in one gymnasium vector env, with episode returns
    summed at ``"episode_reward"``."""
    env = TransformedEnv(GymEnv(cfg.env_name, num_envs=cfg.num_envs), RewardSum())
    env.set_seed(cfg.seed)
    return env


def make_actor_critic(env: TransformedEnv, hidden: int) -> tuple[ProbabilisticActor, ValueOperator]:
    """A stochastic policy fitted to the action space (categorical or tanh-Gaussian) and a
    state-value network, both two-layer tanh MLPs."""
    obs_dim = env.observation_spec["observation"].shape[-1]
    action_spec = env.action_spec
    n_out = action_spec.shape[-1]
    discrete = not action_spec.dtype.is_floating_point

    def mlp(out_features: int) -> MLP:
        return MLP(obs_dim, out_features, depth=2, num_cells=hidden, activation_class=torch.nn.Tanh)

    if discrete:
        body = TensorDictModule(mlp(n_out), ["observation"], ["logits"])
        actor = ProbabilisticActor(
            body, ["logits"], spec=action_spec, distribution_class=OneHotCategorical,
            return_log_prob=True,
        )  # fmt: skip
    else:
        net = torch.nn.Sequential(mlp(2 * n_out), NormalParamExtractor())
        body = TensorDictModule(net, ["observation"], ["loc", "scale"])
        # The spec's bounds are per env ([num_envs, n_out]); the policy needs one copy.
        low, high = action_spec.low.reshape(-1, n_out)[0], action_spec.high.reshape(-1, n_out)[0]
        actor = ProbabilisticActor(
            body, ["loc", "scale"], spec=action_spec, distribution_class=TanhNormal,
            distribution_kwargs={"low": low, "high": high}, return_log_prob=True,
        )  # fmt: skip
    critic = ValueOperator(mlp(1), ["observation"])
    return actor, critic


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
    """Runs A2C; returns the final figures (``mean_return_last10``, ``frames``, ``seconds``,
    ``frames_to_target``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give
    exp_name = cfg.exp_name or f"a2c_{cfg.env_name}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    env = make_env(cfg)
    actor, critic = make_actor_critic(env, cfg.hidden)
    collector = SyncDataCollector(
        env, actor, frames_per_batch=cfg.frames_per_batch, total_frames=cfg.total_frames
    )
    loss_fn = A2CLoss(
        actor,
        critic,
        entropy_bonus=cfg.entropy_coeff > 0,
        entropy_coeff=cfg.entropy_coeff,
        critic_coeff=cfg.critic_coeff,
        loss_critic_type="l2",
        normalize_advantage=True,
    )
    loss_fn.make_value_estimator(gamma=cfg.gamma, lmbda=cfg.gae_lambda)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr, eps=1e-5)
    num_iters = -(-cfg.total_frames // cfg.frames_per_batch)

    ep_frames: list[int] = []
    ep_returns: list[float] = []
    last10: deque[float] = deque(maxlen=10)
    frames, frames_to_target, start = 0, None, time.perf_counter()
    bar = tqdm(total=cfg.total_frames, unit="frames", dynamic_ncols=True)
    for it, batch in enumerate(collector):
        frames += batch.numel()
        bar.update(batch.numel())
        done = batch["next", "done"]
        for r in batch["next", "episode_reward"][done].tolist():
            ep_frames.append(frames)
            ep_returns.append(r)
            last10.append(r)
            logger.log_scalar("train/episode_return", r, step=frames)

        if cfg.anneal_lr:
            for group in optim.param_groups:
                group["lr"] = cfg.lr * (1 - it / num_iters)
        with torch.no_grad():
            loss_fn.value_estimator(batch)  # writes "advantage" and "value_target"
        out = loss_fn(batch.reshape(-1))
        loss = out["loss_objective"] + out["loss_critic"]
        if cfg.entropy_coeff > 0:
            loss = loss + out["loss_entropy"]
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(loss_fn.parameters(), cfg.max_grad_norm)
        optim.step()
        collector.update_policy_weights_()

        logger.log_scalar("train/loss_objective", out["loss_objective"].item(), step=frames)
        logger.log_scalar("train/loss_critic", out["loss_critic"].item(), step=frames)
        logger.log_scalar("train/entropy", out["entropy"].item(), step=frames)
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
            "actor": actor.state_dict(),
            "critic": critic.state_dict(),
            "optimizer": optim.state_dict(),
            "config": dataclasses.asdict(cfg),
            "frames": frames,
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot and ep_returns:
        save_curve(ep_frames, ep_returns, run_dir / "learning_curve.png", f"A2C {cfg.env_name}")
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
