"""PPO with its collector nodes on torch.distributed: ``examples/ppo.py``'s learner, fed by
``num_nodes`` collector nodes of a ``DistributedSyncCollector`` (gloo).

Each node is a process (``--launcher mp``) or a submitit job (``--launcher submitit``: SLURM
on a cluster, submitit's local executor with ``--submitit-cluster local``) running a
``SyncDataCollector`` over ``num_envs`` vectorised gymnasium envs, seeded ``seed + node``.
Each iteration every node collects ``frames_per_batch / num_nodes`` frames with the current
policy; the trainer (this process, rank 0) concatenates them, computes GAE, runs the minibatch
updates of ``ppo.py`` and pushes the new weights to every node before the next batch
(``update_policy_weights_``, tagged with the policy version each batch carries).

Run:  ``uv run python examples/ppo_distributed.py`` (CartPole-v1, 2 local nodes; the run
prints the frames at which the mean of the last 10 episodes first reaches 475).

On a SLURM cluster (the trainer on the login node or in a job of its own, one job per node;
the nodes must reach the trainer's host on a TCP port)::

    uv run python examples/ppo_distributed.py --launcher submitit --num-nodes 8 \\
        --slurm-partition <partition> --slurm-timeout-min 60

submitit writes each node's logs to ``runs/<exp-name>/submitit``. Every config field is a flag
(``--help``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag."""

    env_name: str = "CartPole-v1"
    seed: int = 0
    num_nodes: int = 2  # collector nodes (processes or SLURM jobs)
    num_envs: int = 4  # vectorised gymnasium envs per node
    total_frames: int = 100_000  # env steps summed over all nodes
    frames_per_batch: int = 1024  # per iteration, all nodes together
    num_epochs: int = 4
    minibatch_size: int = 256
    lr: float = 2.5e-3
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_epsilon: float = 0.2
    critic_coeff: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    threshold: float | None = None  # reported (None: the env's, 475 on CartPole)
    target_return: float | None = None  # stop once the last-10-episode mean reaches it
    launcher: Literal["mp", "submitit"] = "mp"  # local processes, or a submitit job per node
    submitit_cluster: str | None = None  # None: SLURM when present; "local": this machine
    slurm_partition: str | None = None
    slurm_timeout_min: int = 60
    exp_name: str | None = None  # defaults to ppo_distributed_<env>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "env_name": _recipe.one_of("CartPole-v1", "Acrobot-v1", "Pendulum-v1"),
    "num_nodes": _recipe.COUNT,
    "num_envs": _recipe.COUNT,
    "frames_per_batch": _recipe.Rule(
        "a positive multiple of {num_nodes} * {num_envs}",
        lambda v, cfg: v >= 1 and v % (cfg.num_nodes * cfg.num_envs) == 0,
    ),
    "minibatch_size": _recipe.count_at_most("frames_per_batch"),
    "threshold": _recipe.FINITE,
    "submitit_cluster": _recipe.one_of(None, "local", "slurm", "debug"),
}


def parse_config(argv: list[str] | None = None) -> Config:
    """Builds a :class:`Config` from the command line (``--help`` lists every field)."""
    return _recipe.parse_config(Config, argv, description=__doc__.split("\n")[0], rules=RULES)


if __name__ == "__main__":
    CONFIG = parse_config()

import time
from collections import deque
from functools import partial

import ppo  # the networks, the threshold and the learning-curve plot of the one-process PPO
import torch

from rl_buffers import LazyTensorStorage, SamplerWithoutReplacement, TensorDictReplayBuffer
from rl_collectors.distributed import DistributedSyncCollector
from rl_core import TransformedEnv
from rl_envs import GymEnv
from rl_envs.transforms import RewardSum
from rl_objectives import ClipPPOLoss


def make_node_env(env_name: str, num_envs: int, seed: int) -> TransformedEnv:
    """One node's envs: ``num_envs`` copies in one gymnasium vector env, returns summed at
    ``"episode_reward"`` (built inside the node's process)."""
    env = TransformedEnv(GymEnv(env_name, num_envs=num_envs), RewardSum())
    env.set_seed(seed)
    return env


def make_collector(cfg: Config, actor: torch.nn.Module, run_dir) -> DistributedSyncCollector:
    """The collector nodes: node ``i``'s envs seeded ``seed + 1000 * i``."""
    factories = [
        partial(make_node_env, cfg.env_name, cfg.num_envs, cfg.seed + 1000 * i)
        for i in range(cfg.num_nodes)
    ]
    slurm = {"timeout_min": cfg.slurm_timeout_min, "cpus_per_task": cfg.num_envs}
    if cfg.slurm_partition is not None:
        slurm["slurm_partition"] = cfg.slurm_partition
    return DistributedSyncCollector(
        factories,
        actor,
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        launcher=cfg.launcher,
        slurm_kwargs=slurm,
        submitit_folder=str(run_dir / "submitit"),
        submitit_cluster=cfg.submitit_cluster,
    )


def train(cfg: Config) -> dict[str, float]:
    """Runs distributed PPO; returns ``mean_return_last10``, ``frames``, ``seconds``,
    ``frames_to_threshold`` (when the last-10 mean first reached the task's threshold) and
    ``frames_to_target``."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)
    threshold = ppo.env_threshold(cfg)
    # The networks are built against one node's envs (the specs' batch is num_envs).
    spec_env = make_node_env(cfg.env_name, cfg.num_envs, cfg.seed)
    actor, critic = ppo.make_actor_critic(spec_env, cfg.hidden)
    spec_env.close()
    exp_name = cfg.exp_name or f"ppo_distributed_{cfg.env_name}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:
        _recipe.save_config(cfg, run_dir)
    loss_fn = ClipPPOLoss(
        actor,
        critic,
        clip_epsilon=cfg.clip_epsilon,
        entropy_bonus=False,
        critic_coeff=cfg.critic_coeff,
        loss_critic_type="l2",
        normalize_advantage=True,
    )
    loss_fn.make_value_estimator(gamma=cfg.gamma, lmbda=cfg.gae_lambda)
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(cfg.frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=cfg.minibatch_size,
    )
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr, eps=1e-5)
    num_iters = -(-cfg.total_frames // cfg.frames_per_batch)
    updates_per_epoch = cfg.frames_per_batch // cfg.minibatch_size

    ep_frames: list[int] = []
    ep_returns: list[float] = []
    last10: deque[float] = deque(maxlen=10)
    frames, frames_to_target, frames_to_threshold = 0, None, None
    collector = make_collector(cfg, actor, run_dir)
    start = time.perf_counter()
    try:
        for it, batch in enumerate(collector):
            # [nodes * num_envs, steps]: each node's envs stacked along the first dim.
            frames += batch.numel()
            done = batch["next", "done"]
            for r in batch["next", "episode_reward"][done].tolist():
                ep_frames.append(frames)
                ep_returns.append(r)
                last10.append(r)
            if cfg.anneal_lr:
                for group in optim.param_groups:
                    group["lr"] = cfg.lr * (1 - it / num_iters)
            with torch.no_grad():
                loss_fn.value_estimator(batch)
            buffer.empty()
            buffer.extend(batch.exclude("collector").reshape(-1))
            for _ in range(cfg.num_epochs):
                for _ in range(updates_per_epoch):
                    out = loss_fn(buffer.sample())
                    loss = out["loss_objective"] + out["loss_critic"]
                    optim.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(loss_fn.parameters(), cfg.max_grad_norm)
                    optim.step()
            collector.update_policy_weights_()
            mean10 = sum(last10) / len(last10) if last10 else float("nan")
            reached = threshold is not None and len(last10) == 10 and mean10 >= threshold
            if reached and frames_to_threshold is None:
                frames_to_threshold = frames
                print(
                    f"threshold {threshold:g} reached at {frames} frames "
                    f"({time.perf_counter() - start:.1f} s): mean of the last 10 {mean10:.1f}",
                    flush=True,
                )
            target = cfg.target_return
            if target is not None and len(last10) == 10 and mean10 >= target:
                frames_to_target = frames
                break
    finally:
        collector.shutdown()
    seconds = time.perf_counter() - start
    torch.save(
        {"actor": actor.state_dict(), "critic": critic.state_dict(), "frames": frames},
        run_dir / "checkpoint.pt",
    )
    if cfg.plot and ep_returns:
        title = f"PPO {cfg.env_name}, {cfg.num_nodes} distributed collector nodes"
        ppo.save_curve(ep_frames, ep_returns, run_dir / "learning_curve.png", title, threshold)
    mean10 = sum(last10) / len(last10) if last10 else float("nan")
    print(
        f"done: {frames} frames in {seconds:.1f} s, {len(ep_returns)} episodes, mean return "
        f"of the last 10: {mean10:.1f}; outputs in {run_dir}"
    )
    return {
        "mean_return_last10": mean10,
        "frames": frames,
        "seconds": seconds,
        "frames_to_threshold": frames_to_threshold,
        "frames_to_target": frames_to_target,
    }


if __name__ == "__main__":
    train(CONFIG)
