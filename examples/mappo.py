"""MAPPO on PettingZoo's MPE simple-spread: agents share a policy and a centralised critic.

One file, top to bottom: the config, the env, the two networks, the loss, then the training
loop. ``num_envs`` copies of ``simple_spread_v3`` (from the ``mpe2`` package, through
``PettingZooEnv``) run in a ``SerialEnv``; the agents form one group, ``"agents"``, so every
entry carries an agent dimension (``("agents", "observation")`` is ``[num_envs, T, 3, 18]``).

- The policy is one ``MultiAgentMLP`` whose parameters all agents share, each agent reading
  only its own observation (decentralised execution).
- The critic is a centralised ``MultiAgentMLP``: it reads the observations of all agents
  concatenated and writes one value per agent (MAPPO; ``--no-centralised-critic`` gives IPPO).
- ``MAPPOLoss`` (``IPPOLoss`` without the centralised critic) runs on the ``("agents", ...)``
  keys: ``MultiAgentGAE`` gives per-agent advantages from the per-agent rewards and done
  flags, standardised per agent, and a value normaliser (``--value-norm``: running mean and
  variance by default, PopArt's moving averages, or none) rescales the critic's regression.

``--env vmas`` trains on a VMAS scenario instead (``--task navigation`` by default with this
flag; ``VmasEnv``, discrete moves): VMAS simulates the ``num_envs`` copies in one batch, so no
``SerialEnv`` is needed, and ``max_cycles`` becomes the scenario's ``max_steps``.

What limits the margin over random (issue 38; seed 0, figures in examples/README.md): no
defect in the pieces. The centralised critic reads the three agents' observations concatenated
(54 inputs); ``MultiAgentGAE`` reads the per-agent rewards and done flags inside the group (the
time limit's ``truncated`` bootstraps; PettingZoo's mask, False at the step after the last,
does not cut the trajectory); the advantage is standardised per agent; the log-ratio is exactly
0 on each batch's first update; the collector samples the 5-way categorical. A value
normaliser in MAPPO's own form (the critic predicting normalised values, GAE on denormalised
ones) ends at -22.47 (l2) and -22.07 (smooth L1) after 24k frames against -22.26 here, so the
critic is not the limit. The policy is: its entropy falls only from 1.59 (uniform: 1.61) to
1.45 over 96k frames, and the return keeps rising with frames (evaluated: -22.26 after 24k,
-20.56 after 96k; training batches from 32k to 48k: -21.5), so the default budget is 96k
frames (the learning test runs 24k). Other settings at 24k moved the return by less than the
seed-to-seed spread: 400-frame batches (60 PPO iterations instead of 15) -21.83 (seeds 1 and
2: margins +2.54 and +5.10, against +4.47 and +4.41 with 1600), ``entropy_coeff=0`` -21.69,
``lr=2e-3`` -22.27, one policy per agent (``share_params=False``) -25.38.

Before training, the script plays ``eval_episodes`` episodes with uniformly random actions;
after training, as many with the trained policy. The learning test compares the
two mean returns.

Run:  ``uv run python examples/mappo.py``; ``--help`` lists every flag.

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

    env: Literal["pettingzoo", "vmas"] = "pettingzoo"  # the simulator: PettingZoo/mpe2 or VMAS
    task: str = "simple_spread_v3"  # with --env vmas, a VMAS scenario ("navigation" if unset)
    n_agents: int = 3  # agents (and landmarks) of simple-spread
    max_cycles: int = 25  # steps per episode
    seed: int = 0
    num_envs: int = 8  # env copies stepped together in a SerialEnv
    total_frames: int = 96_000  # env steps summed over all envs (each step moves every agent)
    frames_per_batch: int = 1600  # collected per iteration
    num_epochs: int = 8  # passes over each batch
    minibatch_size: int = 400
    lr: float = 1e-3
    gamma: float = 0.95
    gae_lambda: float = 0.95
    clip_epsilon: float = 0.2
    entropy_coeff: float = 0.01
    critic_coeff: float = 1.0
    max_grad_norm: float = 1.0
    hidden: int = 64  # width of the two hidden layers of both networks
    centralised_critic: bool = True  # MAPPO; --no-centralised-critic: IPPO
    value_norm: Literal["running", "popart", "none"] = "running"  # the critic's target scaler
    eval_episodes: int = 64  # episodes of the random baseline and of the final evaluation
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to mappo_<task>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "frames_per_batch": _recipe.multiple_of("num_envs"),
    "minibatch_size": _recipe.count_at_most("frames_per_batch"),
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
from tensordict.nn import TensorDictModule
from torch.distributions import Categorical
from tqdm import tqdm

from rl_buffers import LazyTensorStorage, SamplerWithoutReplacement, TensorDictReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import ExplorationType, TransformedEnv, set_exploration_type
from rl_core.modules import ProbabilisticActor
from rl_envs import PettingZooEnv, SerialEnv, VmasEnv
from rl_envs.transforms import RewardSum
from rl_objectives import IPPOLoss, MAPPOLoss
from rl_objectives.loggers import get_logger
from rl_objectives.modules import MultiAgentMLP
from rl_objectives.value import MultiAgentGAE, PopArtValueNorm, RunningValueNorm

GROUP = "agents"


def make_env(cfg: Config) -> TransformedEnv:
    """``num_envs`` copies of the task with discrete actions, per-agent episode returns summed
    at ``("agents", "episode_reward")``."""
    if cfg.env == "vmas":
        task = "navigation" if cfg.task == Config.task else cfg.task
        vmas_env = VmasEnv(
            task, cfg.num_envs, continuous_actions=False, max_steps=cfg.max_cycles,
            seed=cfg.seed, n_agents=cfg.n_agents,
        )  # fmt: skip
        return TransformedEnv(vmas_env, RewardSum(in_keys=[(GROUP, "reward")]))

    def make_one() -> PettingZooEnv:
        return PettingZooEnv(
            cfg.task, parallel=True, N=cfg.n_agents, max_cycles=cfg.max_cycles,
            continuous_actions=False,
        )  # fmt: skip

    env = TransformedEnv(SerialEnv(cfg.num_envs, make_one), RewardSum(in_keys=[(GROUP, "reward")]))
    env.set_seed(cfg.seed)
    return env


def make_actor_critic(
    env: TransformedEnv, cfg: Config
) -> tuple[ProbabilisticActor, TensorDictModule]:
    """The shared decentralised policy (categorical over the 5 moves) and the critic writing
    ``("agents", "state_value")``."""
    obs_dim = env.observation_spec[GROUP, "observation"].shape[-1]
    n_actions = env.action_spec.n
    mlp = {"depth": 2, "num_cells": cfg.hidden, "activation_class": torch.nn.Tanh}
    policy_net = MultiAgentMLP(
        obs_dim, n_actions, cfg.n_agents, centralized=False, share_params=True, **mlp
    )
    body = TensorDictModule(policy_net, [(GROUP, "observation")], [(GROUP, "logits")])
    actor = ProbabilisticActor(
        body, [(GROUP, "logits")], out_keys=[env.action_key], spec=env.action_spec,
        distribution_class=Categorical, return_log_prob=True,
        log_prob_key=(GROUP, "action_log_prob"),
    )  # fmt: skip
    critic_net = MultiAgentMLP(
        obs_dim, 1, cfg.n_agents, centralized=cfg.centralised_critic, share_params=True, **mlp
    )
    critic = TensorDictModule(critic_net, [(GROUP, "observation")], [(GROUP, "state_value")])
    return actor, critic


def evaluate(env: TransformedEnv, policy: ProbabilisticActor | None, episodes: int) -> float:
    """Mean per-agent episode return over ``episodes`` episodes: of uniformly random actions
    (``policy=None``) or of actions sampled from the policy (its most likely actions do worse
    on this task: agents that always take the same move from the same view collide or
    stall)."""
    returns: list[float] = []
    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        while len(returns) < episodes:
            rollout = env.rollout(
                10_000, policy, break_when_all_done=True, break_when_any_done=False
            )
            done = rollout["next", "done"].squeeze(-1)
            returns += rollout["next", GROUP, "episode_reward"][done].mean((-2, -1)).tolist()
    return sum(returns[:episodes]) / episodes


def save_curve(frames: list[int], means: list[float], baseline: float, path: Path) -> None:
    """Mean episode return per batch against frames, with the random-policy baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frames, means, label="MAPPO (mean over the batch's episodes)")
    ax.axhline(baseline, color="gray", linestyle="--", label="uniform-random policy")
    ax.set_xlabel("frames")
    ax.set_ylabel("episode return per agent")
    ax.set_title("MAPPO simple_spread")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, float]:
    """Runs MAPPO; returns the final figures: ``random_return`` and ``final_return`` (the
    evaluations before and after training), ``train_return_last3`` (mean episode return of
    the last 3 training batches), ``frames`` and ``seconds`` (training only)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give
    exp_name = cfg.exp_name or f"mappo_{cfg.env}_{cfg.task}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    env = make_env(cfg)
    random_return = evaluate(env, None, cfg.eval_episodes)
    print(f"uniform-random policy: mean episode return per agent {random_return:.2f}")
    logger.log_scalar("eval/random_return", random_return, step=0)

    actor, critic = make_actor_critic(env, cfg)
    collector = SyncDataCollector(
        env, actor, frames_per_batch=cfg.frames_per_batch, total_frames=cfg.total_frames
    )
    advantage_module = MultiAgentGAE(cfg.gamma, cfg.gae_lambda, critic, group=GROUP)
    value_norm = {"running": RunningValueNorm, "popart": PopArtValueNorm}.get(cfg.value_norm)
    loss_class = MAPPOLoss if cfg.centralised_critic else IPPOLoss
    loss_fn = loss_class(
        actor,
        critic,
        value_norm=None if value_norm is None else value_norm(),
        clip_epsilon=cfg.clip_epsilon,
        entropy_bonus=cfg.entropy_coeff > 0,
        entropy_coeff=cfg.entropy_coeff,
        critic_coeff=cfg.critic_coeff,
        loss_critic_type="smooth_l1",
        normalize_advantage=True,
    )
    loss_fn.set_keys(
        action=env.action_key,
        sample_log_prob=(GROUP, "action_log_prob"),
        value=(GROUP, "state_value"),
        advantage=(GROUP, "advantage"),
        value_target=(GROUP, "value_target"),
        reward=(GROUP, "reward"),
        done=(GROUP, "done"),
        terminated=(GROUP, "terminated"),
    )
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(cfg.frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=cfg.minibatch_size,
    )
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr)
    updates_per_epoch = cfg.frames_per_batch // cfg.minibatch_size

    curve_frames: list[int] = []
    curve_means: list[float] = []
    frames, start = 0, time.perf_counter()
    bar = tqdm(total=cfg.total_frames, unit="frames", dynamic_ncols=True)
    for batch in collector:
        frames += batch.numel()
        bar.update(batch.numel())
        done = batch["next", "done"].squeeze(-1)
        episode_returns = batch["next", GROUP, "episode_reward"][done].mean((-2, -1))
        if episode_returns.numel():
            curve_frames.append(frames)
            curve_means.append(episode_returns.mean().item())
            logger.log_scalar("train/episode_return", curve_means[-1], step=frames)

        with torch.no_grad():
            advantage_module(batch)  # writes ("agents", "advantage") and ("agents", "value_target")
        buffer.empty()
        buffer.extend(batch.reshape(-1))
        for _ in range(cfg.num_epochs):
            for _ in range(updates_per_epoch):
                out = loss_fn(buffer.sample())
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
        if "entropy" in out.keys():
            logger.log_scalar("train/entropy", out["entropy"].item(), step=frames)
        if curve_means:
            bar.set_postfix(episode_return=f"{curve_means[-1]:.2f}")
    bar.close()
    seconds = time.perf_counter() - start
    final_return = evaluate(env, actor, cfg.eval_episodes)
    logger.log_scalar("eval/final_return", final_return, step=frames)
    collector.shutdown()

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
    if cfg.plot and curve_means:
        save_curve(curve_frames, curve_means, random_return, run_dir / "learning_curve.png")
    logger.close()
    last = curve_means[-3:]
    last_batches = sum(last) / len(last) if last else float("nan")
    print(
        f"done: {frames} frames in {seconds:.1f} s; mean episode return per agent: random "
        f"policy {random_return:.2f}, trained policy {final_return:.2f} ({last_batches:.2f} "
        f"in the last 3 training batches); outputs in {run_dir}"
    )
    return {
        "random_return": random_return,
        "final_return": final_return,
        "train_return_last3": last_batches,
        "frames": frames,
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
