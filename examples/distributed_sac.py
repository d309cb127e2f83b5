"""Distributed SAC on Pendulum-v1: Ray collector actors fill a replay buffer hosted in Ray
while the learner samples from it.

The same SAC as ``examples/sac.py`` (its networks and loss), spread over processes:

- ``num_collectors`` Ray actors (``RayCollector(sync=False)``), each running a
  ``SyncDataCollector`` over its own ``GymEnv``, write every batch straight into a
  ``RayReplayBuffer`` (a ``TensorDictReplayBuffer`` living in a Ray actor of its own): the
  transitions never pass through the learner;
- the learner (this process) counts the batches as they arrive, takes
  ``updates_per_batch`` gradient steps on minibatches sampled from the Ray buffer after
  each, and pushes its actor's weights to the collectors through the collector's
  ``RayWeightUpdater`` (one ``ray.put`` per push) every ``weight_update_every`` batches;
- an ``Evaluator`` runs the deterministic policy for 4 episodes in a background thread
  every ``eval_every`` frames; its results are logged with the training figures.

Run:  ``uv run python examples/distributed_sac.py --num-collectors 2``; ``--help`` lists
every flag. On a Ray cluster, start Ray on each node first and pass ``--ray-address auto``
(see examples/README.md).

Writes to ``runs/<exp-name>/``: the logs, ``checkpoint.pt`` and ``learning_curve.png`` (the
evaluation returns against frames).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--num-collectors 4``)."""

    env_name: str = "Pendulum-v1"
    seed: int = 0
    num_collectors: int = 2  # Ray actors collecting in parallel
    total_frames: int = 15_000  # env steps summed over all collectors
    frames_per_batch: int = 64  # per batch of one collector
    init_random_frames: int = 1_000  # uniform-random actions first (shared among collectors)
    updates_per_batch: int = 32  # gradient steps per arrived batch
    weight_update_every: int = 1  # push the weights to the collectors every N batches
    batch_size: int = 128
    buffer_size: int = 100_000
    lr: float = 3e-3
    gamma: float = 0.99
    tau: float = 0.01
    hidden: int = 64
    eval_every: int = 2_000  # frames between two background evaluations
    ray_address: str | None = None  # None: a local Ray; "auto" or "ray://host:10001": a cluster
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"
    exp_name: str | None = None  # defaults to distributed_sac_<env>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


# gymnasium's classic-control tasks with continuous actions
RULES = {
    "env_name": _recipe.one_of("Pendulum-v1", "MountainCarContinuous-v0"),
}


def parse_config(argv: list[str] | None = None) -> Config:
    """Builds a :class:`Config` from the command line (see ``examples/_recipe.py``)."""
    return _recipe.parse_config(Config, argv, description=__doc__.split("\n")[0], rules=RULES)


if __name__ == "__main__":
    # Read before torch and the packages load (seconds): --help and a refused value answer now.
    CONFIG = parse_config()


import dataclasses
import os
import sys
import time
from functools import partial

import torch
from sac import make_actor_critic, save_curve
from tensordict import TensorDictBase
from tqdm import tqdm

from rl_buffers import LazyTensorStorage, RayReplayBuffer, TensorDictReplayBuffer
from rl_collectors import Evaluator, RayCollector, SyncDataCollector
from rl_envs import GymEnv
from rl_objectives import SACLoss, SoftUpdate
from rl_objectives.loggers import get_logger

STORED = ("observation", "action", "next")


def make_env(env_name: str, seed: int) -> GymEnv:
    env = GymEnv(env_name)
    env.set_seed(seed)
    return env


def keep_transitions(batch: TensorDictBase) -> TensorDictBase:
    """The collectors' postproc: flat transitions with the entries every batch has (random
    batches carry no log-probabilities)."""
    return batch.reshape(-1).select(*STORED)


def start_ray(cfg: Config) -> None:
    """Joins the cluster at ``cfg.ray_address``, or starts a local Ray for this run."""
    if cfg.ray_address is None:
        # Before Ray is imported: start its workers with this interpreter (not through
        # `uv run`, which copies the working directory for each worker: ~50 s for the first
        # actor), no token auth, loopback only. A cluster keeps its own settings.
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():
        return
    if cfg.ray_address is not None:
        ray.init(address=cfg.ray_address)
        return
    ray.init(
        address="local",  # a new instance (never a stale one left in the temp dir)
        num_cpus=cfg.num_collectors + 2,  # the collectors, the buffer, slack
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )


def train(cfg: Config) -> dict[str, float]:
    """Runs distributed SAC; returns the figures: ``frames``, ``stored`` (in the buffer),
    ``startup_seconds`` (until the first batch arrived: Ray, the actors' imports and envs),
    ``seconds`` (from the first batch to the last), ``frames_per_second`` and
    ``updates_per_second`` over those seconds, and ``eval_return`` (the final policy's mean
    return over 4 evaluation episodes)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)
    exp_name = cfg.exp_name or f"distributed_sac_{cfg.env_name}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    started = time.perf_counter()
    start_ray(cfg)
    actor, qvalue = make_actor_critic(make_env(cfg.env_name, cfg.seed), cfg.hidden)
    buffer = RayReplayBuffer(
        replay_buffer_cls=TensorDictReplayBuffer,
        storage=partial(LazyTensorStorage, cfg.buffer_size),  # built in the buffer's actor
        batch_size=cfg.batch_size,
        remote_config={"num_cpus": 1},
    )
    n = cfg.num_collectors
    collector = RayCollector(
        [partial(make_env, cfg.env_name, cfg.seed + 1 + i) for i in range(n)],
        actor,
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        collector_class=SyncDataCollector,
        collector_kwargs={
            "init_random_frames": -(-cfg.init_random_frames // n),
            "postproc": keep_transitions,
        },
        sync=False,  # each batch is counted as it lands in the buffer
        replay_buffer=buffer,
    )
    eval_actor, _ = make_actor_critic(make_env(cfg.env_name, cfg.seed), cfg.hidden)
    evaluator = Evaluator(
        partial(make_env, cfg.env_name, cfg.seed + 1000),
        eval_actor,
        num_trajectories=4,
        logger=logger,
    )
    loss_fn = SACLoss(actor, qvalue, num_qvalue_nets=2, loss_function="l2")
    loss_fn.make_value_estimator(gamma=cfg.gamma)
    target_updater = SoftUpdate(loss_fn, tau=cfg.tau)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr)

    eval_frames: list[int] = []
    eval_returns: list[float] = []
    frames = batches = updates = 0
    next_eval = cfg.eval_every
    start = startup = 0.0
    bar = tqdm(total=cfg.total_frames, unit="frames", dynamic_ncols=True)
    for nothing in collector:  # the actors wrote the batch into the buffer
        assert nothing is None
        if batches == 0:  # the actors are up (their imports and envs took this long)
            startup = time.perf_counter() - started
            start = time.perf_counter()
        frames += cfg.frames_per_batch
        batches += 1
        bar.update(cfg.frames_per_batch)
        if frames < cfg.init_random_frames:
            continue
        for _ in range(cfg.updates_per_batch):
            out = loss_fn(buffer.sample())
            loss = out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]
            optim.zero_grad()
            loss.backward()
            optim.step()
            target_updater.step()
            updates += 1
        logger.log_scalar("train/loss_qvalue", out["loss_qvalue"].item(), step=frames)
        if batches % cfg.weight_update_every == 0:
            collector.update_policy_weights_()
        if frames >= next_eval:
            evaluator.trigger_eval(weights=actor, step=frames)  # skipped while one runs
            next_eval += cfg.eval_every
        result = evaluator.poll()
        if result is not None:
            eval_frames.append(int(result["eval/step"]))
            eval_returns.append(float(result["eval/reward"]))
            bar.set_postfix(eval_return=f"{eval_returns[-1]:.1f}")
    seconds = time.perf_counter() - start
    bar.close()
    collector.shutdown()
    if evaluator.pending:
        evaluator.wait()
    result = evaluator.evaluate(weights=actor, step=frames)  # the final policy
    eval_frames.append(frames)
    eval_returns.append(float(result["eval/reward"]))
    evaluator.shutdown()
    stored = len(buffer)
    buffer.shutdown()

    torch.save(
        {
            "loss_module": loss_fn.state_dict(),
            "optimizer": optim.state_dict(),
            "config": dataclasses.asdict(cfg),
            "frames": frames,
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot:
        save_curve(
            eval_frames, eval_returns, run_dir / "learning_curve.png", f"SAC x{n} {cfg.env_name}"
        )
    logger.close()
    figures = {
        "frames": frames,
        "stored": stored,
        "seconds": seconds,
        "startup_seconds": startup,
        # From the first batch on: the first one's frames are not in this window.
        "frames_per_second": (frames - cfg.frames_per_batch) / seconds,
        "updates_per_second": updates / seconds,
        "eval_return": eval_returns[-1],
    }
    print(
        f"done: {n} collector(s), {frames} frames ({stored} in the buffer) in {seconds:.1f} s "
        f"({figures['frames_per_second']:.0f} frames/s, {figures['updates_per_second']:.0f} "
        f"updates/s; start-up {startup:.1f} s); final evaluation return {eval_returns[-1]:.1f}; "
        f"outputs in {run_dir}"
    )
    return figures


if __name__ == "__main__":
    try:
        train(CONFIG)
    finally:
        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()
