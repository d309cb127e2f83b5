"""IQL (implicit Q-learning) on Pendulum-v1, offline: first collect a dataset, then learn from
it alone.

One file, top to bottom: the config, the env, the dataset collection, the networks, the loss,
then the training loop. Phase 1 runs a uniformly random policy for ``dataset_frames`` frames
with a ``SyncDataCollector`` and writes the transitions into a ``LazyMemmapStorage`` on disk
(``runs/<exp-name>/dataset``). Phase 2 never touches the env for data: it takes
``num_updates`` gradient steps on minibatches sampled from that storage, and every
``eval_interval`` steps plays ``eval_episodes`` episodes with the deterministic policy (the
mode of the tanh-Gaussian) to measure its return.

Run:  ``uv run python examples/iql.py``; ``--help`` lists every flag.

Writes to ``runs/<exp-name>/``: the dataset, the logs (CSV by default,
``--logger tensorboard|wandb``), ``checkpoint.pt`` (networks, optimiser, config) and
``learning_curve.png`` (evaluation return against gradient steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--num-updates 5000``)."""

    env_name: str = "Pendulum-v1"
    seed: int = 0
    num_envs: int = 4  # vectorised gymnasium envs, for collection and evaluation
    dataset_frames: int = 20_000  # transitions collected by the random policy
    num_updates: int = 10_000  # gradient steps on the fixed dataset
    batch_size: int = 256
    lr: float = 3e-4
    gamma: float = 0.99
    expectile: float = 0.8  # tau of the value regression (0.5: mean, towards 1: max)
    temperature: float = 5.0  # beta of the advantage-weighted actor regression
    tau: float = 0.005  # share of the online critics mixed into the targets per step
    hidden: int = 128  # width of the two hidden layers of every network
    eval_interval: int = 1_000  # gradient steps between evaluations
    eval_episodes: int = 4  # one per env: num_envs episodes are played together
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to iql_<env>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


# gymnasium's classic-control tasks with continuous actions
RULES = {
    "env_name": _recipe.one_of("Pendulum-v1", "MountainCarContinuous-v0"),
    "expectile": _recipe.between(0, 1, open_low=True, open_high=True),
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
from pathlib import Path

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from tqdm import tqdm

from rl_buffers import LazyMemmapStorage, TensorDictReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import ExplorationType, RandomPolicy, TransformedEnv, set_exploration_type
from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from rl_envs import GymEnv
from rl_envs.transforms import RewardSum
from rl_objectives import IQLLoss, SoftUpdate
from rl_objectives.loggers import get_logger


def make_env(cfg: Config) -> TransformedEnv:
    """``num_envs`` copies of the task in one gymnasium vector env, with episode returns
    summed at ``"episode_reward"``."""
    env = TransformedEnv(GymEnv(cfg.env_name, num_envs=cfg.num_envs), RewardSum())
    env.set_seed(cfg.seed)
    return env


def save_curve(frames: list[int], returns: list[float], path: Path, title: str) -> None:
    """Evaluation returns against gradient steps, with a running mean over 10 points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frames, returns, ".", alpha=0.3, label="evaluation")
    smooth = [sum(returns[max(0, i - 9) : i + 1]) / len(returns[max(0, i - 9) : i + 1])
              for i in range(len(returns))]  # fmt: skip
    ax.plot(frames, smooth, label="mean of last 10")
    ax.set_xlabel("gradient steps")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def make_networks(
    env: TransformedEnv, hidden: int
) -> tuple[ProbabilisticActor, ValueOperator, ValueOperator]:
    """A tanh-Gaussian policy, a Q-network on ``(observation, action)`` and a state-value
    network."""
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
        distribution_kwargs={"low": low, "high": high},
    )  # fmt: skip
    qvalue = ValueOperator(
        MLP(obs_dim + n_act, 1, depth=2, num_cells=hidden), ["observation", "action"]
    )
    value = ValueOperator(MLP(obs_dim, 1, depth=2, num_cells=hidden), ["observation"])
    return actor, qvalue, value


def collect_dataset(
    cfg: Config, env: TransformedEnv, path: Path
) -> tuple[TensorDictReplayBuffer, float]:
    """Runs a uniformly random policy and stores every transition in a memory-mapped buffer;
    returns the buffer and the mean return of the episodes it holds."""
    storage = LazyMemmapStorage(cfg.dataset_frames, scratch_dir=path, existsok=True)
    buffer = TensorDictReplayBuffer(storage=storage, batch_size=cfg.batch_size)
    collector = SyncDataCollector(
        env,
        RandomPolicy(env.action_spec),
        frames_per_batch=cfg.num_envs * 200,
        total_frames=cfg.dataset_frames,
    )
    returns: list[float] = []
    for batch in collector:
        buffer.extend(batch.reshape(-1).select("observation", "action", "next"))
        returns += batch["next", "episode_reward"][batch["next", "done"]].tolist()
    collector.shutdown()
    return buffer, sum(returns) / max(len(returns), 1)


def evaluate(env: TransformedEnv, actor: ProbabilisticActor, episodes: int) -> float:
    """Mean return of ``episodes`` episodes of the deterministic policy (played ``num_envs`` at
    a time)."""
    returns: list[float] = []
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        while len(returns) < episodes:
            traj = env.rollout(10_000, actor, break_when_all_done=True)
            returns += traj["next", "episode_reward"][traj["next", "done"]].tolist()
    return sum(returns[:episodes]) / episodes


def train(cfg: Config) -> dict[str, float]:
    """Collects the dataset, then runs IQL on it; returns the final figures
    (``dataset_return``, ``eval_return``, ``best_eval_return``, ``seconds``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give
    exp_name = cfg.exp_name or f"iql_{cfg.env_name}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)
    start = time.perf_counter()

    env = TransformedEnv(GymEnv(cfg.env_name, num_envs=cfg.num_envs), RewardSum())
    env.set_seed(cfg.seed)
    buffer, dataset_return = collect_dataset(cfg, env, run_dir / "dataset")
    print(f"dataset: {len(buffer)} random-policy transitions, mean return {dataset_return:.1f}")

    actor, qvalue, value = make_networks(env, cfg.hidden)
    loss_fn = IQLLoss(
        actor, qvalue, value, loss_function="l2", expectile=cfg.expectile,
        temperature=cfg.temperature,
    )  # fmt: skip
    loss_fn.make_value_estimator(gamma=cfg.gamma)
    target_updater = SoftUpdate(loss_fn, tau=cfg.tau)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr)

    steps: list[int] = []
    eval_returns: list[float] = []
    bar = tqdm(total=cfg.num_updates, unit="steps", dynamic_ncols=True)
    for step in range(1, cfg.num_updates + 1):
        out = loss_fn(buffer.sample())
        loss = out["loss_actor"] + out["loss_qvalue"] + out["loss_value"]
        optim.zero_grad()
        loss.backward()
        optim.step()
        target_updater.step()
        bar.update(1)
        if step % cfg.eval_interval == 0 or step == cfg.num_updates:
            ret = evaluate(env, actor, cfg.eval_episodes)
            steps.append(step)
            eval_returns.append(ret)
            logger.log_scalar("eval/return", ret, step=step)
            logger.log_scalar("train/loss_qvalue", out["loss_qvalue"].item(), step=step)
            logger.log_scalar("train/loss_value", out["loss_value"].item(), step=step)
            bar.set_postfix(eval_return=f"{ret:.1f}")
    bar.close()
    seconds = time.perf_counter() - start

    torch.save(
        {
            "loss_module": loss_fn.state_dict(),  # actor, critics, targets and value network
            "optimizer": optim.state_dict(),
            "config": dataclasses.asdict(cfg),
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot and eval_returns:
        save_curve(steps, eval_returns, run_dir / "learning_curve.png", f"IQL {cfg.env_name}")
    logger.close()
    print(
        f"done: {cfg.num_updates} gradient steps in {seconds:.1f} s (collection included); "
        f"random-policy return {dataset_return:.1f}, last evaluation {eval_returns[-1]:.1f}, "
        f"best {max(eval_returns):.1f}; outputs in {run_dir}"
    )
    return {
        "dataset_return": dataset_return,
        "eval_return": eval_returns[-1],
        "best_eval_return": max(eval_returns),
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
