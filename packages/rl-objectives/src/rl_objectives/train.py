"""``rl-train``: trains an algorithm from a Hydra config composed of the installed packages'
configs (needs the ``hydra`` extra of rl-objectives and of the packages it builds from).

    rl-train algo=ppo env=gym env.env_name=CartPole-v1 collector.frames_per_batch=2048
    rl-train --config-name ppo_cartpole              # a shipped recipe (rl_objectives.recipes)
    rl-train --config-name ppo_cartpole -m seed=0,1,2   # a sweep: one run per seed
    rl-train --cfg job                                # print the composed config
    rl-train --config-name ppo_cartpole +transform@transforms.steps=step_counter \
        transforms.steps.max_steps=200                # a transform on the recipe's env

Each run writes under its Hydra run directory: ``.hydra/config.yaml`` (the resolved config),
``logs/`` (the logger's scalars), ``checkpoints/`` (rotating, resumable with
``resume=true checkpoint_dir=<run>/checkpoints``), ``learning_curve.csv`` (frames, episode
return) and ``learning_curve.png`` (with matplotlib), and ``result.json`` (the final figures).
A progress bar shows the frames and the mean return of the last 10 episodes.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import sys
from collections import deque
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Compose, Transform, TransformedEnv
from rl_core.keys import DONE, NEXT, REWARD
from rl_objectives.trainers import LRSchedulerHook, OnPolicyTrainer, RunCheckpointer

#: The entry-point group where each package registers its configs.
ENTRY_POINT_GROUP = "rl_stack.configs"
#: Which package ships each config group, for the install line of a missing one.
GROUP_PACKAGES = {
    "env": "rl-envs",
    "collector": "rl-collectors",
    "replay_buffer": "rl-buffers",
    "algo": "rl-objectives",
    "logger": "rl-objectives",
    "hook": "rl-objectives",
    "transform": "rl-envs",
    "llm_policy": "rl-llm",
    "llm_transform": "rl-llm",
    "llm_trainer": "rl-llm",
}
#: The groups the ``train`` config selects by default.
DEFAULT_GROUPS = ("algo", "env", "collector", "logger")


def register_all_configs() -> list[str]:
    """Loads every ``rl_stack.configs`` entry point (one per installed package) and calls it;
    returns their names."""
    names = []
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        entry.load()()
        names.append(entry.name)
    return names


def recipe_groups(argv: list[str]) -> set[str]:
    """The config groups that the shipped recipe named by ``--config-name``/``-cn`` selects in
    its defaults list (none for another config)."""
    name = None
    for i, arg in enumerate(argv):
        if arg in ("--config-name", "-cn") and i + 1 < len(argv):
            name = argv[i + 1]
        elif arg.startswith("--config-name="):
            name = arg.split("=", 1)[1]
    if name is None:
        return set()
    from importlib.resources import files

    recipe = files("rl_objectives.recipes") / f"{name}.yaml"
    if not recipe.is_file():
        return set()
    from omegaconf import OmegaConf

    groups = set()
    for entry in OmegaConf.create(recipe.read_text()).get("defaults", []):
        if isinstance(entry, str) or not hasattr(entry, "keys"):
            continue
        for key in entry.keys():
            group = str(key).removeprefix("override ").strip().lstrip("/").split("@")[0]
            if group in GROUP_PACKAGES:
                groups.add(group)
    return groups


def check_groups(argv: list[str], repo: dict[str, Any] | None = None) -> None:
    """Exits with the install line when a group the run needs (the default ones and those
    ``argv`` selects) has no configs in ``repo`` (default: Hydra's ``ConfigStore``): its
    package is not installed."""
    if repo is None:
        from hydra.core.config_store import ConfigStore

        repo = ConfigStore.instance().repo
    wanted = set(DEFAULT_GROUPS) | recipe_groups(argv)
    for arg in argv:
        key = arg.lstrip("+~").split("=", 1)[0].split("@", 1)[0]
        if "=" in arg and key in GROUP_PACKAGES:
            wanted.add(key)
    for group in sorted(wanted):
        if not repo.get(group):
            package = GROUP_PACKAGES[group]
            raise SystemExit(
                f"rl-train: no '{group}' configs: they come with {package}, which is not "
                f'installed (or lacks its hydra extra): pip install "{package}[hydra]"'
            )


class EpisodeReturns:
    """Sums rewards per env across batches and records each finished episode's return;
    logs ``train/episode_return`` and ``train/return_last10``, and stops the trainer once the
    last-10 mean reaches ``target``."""

    def __init__(self, trainer: Any, target: float | None) -> None:
        self.trainer = trainer
        self.target = target
        self.running: torch.Tensor | None = None
        self.curve: list[tuple[int, float]] = []
        self.last10: deque[float] = deque(maxlen=10)

    def __call__(self, batch: TensorDictBase) -> dict[str, Any] | None:
        reward = batch.get((NEXT, REWARD))
        done = batch.get((NEXT, DONE))
        reward = reward.reshape(*batch.shape, -1).sum(-1)
        done = done.reshape(*batch.shape, -1).any(-1)
        rows_r = reward.reshape(-1, batch.shape[-1])
        rows_d = done.reshape(-1, batch.shape[-1])
        if self.running is None or self.running.shape[0] != rows_r.shape[0]:
            self.running = torch.zeros(rows_r.shape[0], dtype=torch.float64)
        finished = []
        for t in range(rows_r.shape[1]):
            self.running += rows_r[:, t].double()
            ended = rows_d[:, t]
            if ended.any():
                finished.extend(self.running[ended].tolist())
                self.running[ended] = 0.0
        frames = self.trainer.collected_frames
        for value in finished:
            self.curve.append((frames, value))
            self.last10.append(value)
        if not finished:
            return None
        mean10 = sum(self.last10) / len(self.last10)
        if self.target is not None and len(self.last10) == 10 and mean10 >= self.target:
            self.trainer.stop(f"the mean return of the last 10 episodes reached {self.target}")
        return {
            "train/episode_return": sum(finished) / len(finished),
            "train/return_last10": mean10,
            "log_pbar": True,
        }

    def state_dict(self) -> dict[str, Any]:
        return {"running": self.running, "curve": list(self.curve), "last10": list(self.last10)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.running = state["running"]
        self.curve = [tuple(p) for p in state["curve"]]
        self.last10 = deque(state["last10"], maxlen=10)


def _optim_steps(cfg: Any, trainer: Any) -> int:
    batches = math.ceil(cfg.total_frames / cfg.collector.frames_per_batch)
    if isinstance(trainer, OnPolicyTrainer):
        size = trainer.minibatches.batch_size
        per_epoch = 1 if size is None else math.ceil(cfg.collector.frames_per_batch / size)
        return batches * trainer.num_epochs * per_epoch
    return batches * trainer.num_epochs * trainer.optim_steps_per_batch


def make_env(env_cfg: Any, transforms: Any = None) -> Any:
    """Builds the env of ``env_cfg``, wrapped in a ``TransformedEnv`` of the ``transforms``
    (transform configs, composed in their order) when there are any.

    Raises:
        SystemExit: a transform config does not build an rl-core ``Transform``.
    """
    from hydra.utils import instantiate

    env = instantiate(env_cfg)
    built = []
    for name, transform_cfg in (transforms or {}).items():
        transform = instantiate(transform_cfg)
        if not isinstance(transform, Transform):
            raise SystemExit(
                f"rl-train: transforms.{name} built a {type(transform).__name__}, not a "
                f"Transform: give it a transform's _target_ (+transform@transforms.{name}=...)."
            )
        built.append(transform)
    if not built:
        return env
    return TransformedEnv(env, built[0] if len(built) == 1 else Compose(*built))


def _env_or_factory(cfg: Any, env: Any) -> Any:
    """What the collector is called with: the built env, or, for a collector whose workers
    build their own envs (its config's ``env_factory``), a factory of ``cfg.env`` and
    ``cfg.transforms``."""
    from omegaconf import OmegaConf

    if getattr(OmegaConf.get_type(cfg.collector), "env_factory", False):
        return functools.partial(make_env, cfg.env, cfg.transforms)
    return env


def build(cfg: Any, run_dir: Path) -> tuple[Any, EpisodeReturns, RunCheckpointer]:
    """Builds the env, networks, collector, loss, optimizer, logger and trainer of ``cfg``."""
    from hydra.utils import instantiate

    algo = cfg.algo
    env = make_env(cfg.env, cfg.transforms)
    models = instantiate(algo.model)(env)
    policy = models.pop("policy")
    exploration = models.pop("exploration", None)
    collector = instantiate(cfg.collector)(_env_or_factory(cfg, env), policy)
    loss = instantiate(algo.loss)(**models)
    estimator = {k: v for k, v in dict(algo.value_estimator).items() if v is not None}
    if estimator:
        loss.make_value_estimator(**estimator)
    optimizer = instantiate(algo.optimizer)(loss.parameters())
    logger = instantiate(cfg.logger)(log_dir=str(run_dir))
    extra: dict[str, Any] = {}
    if algo.target_net_updater is not None:
        extra["target_net_updater"] = instantiate(algo.target_net_updater)(loss)
    if cfg.replay_buffer is not None:
        extra["replay_buffer"] = instantiate(cfg.replay_buffer)
    trainer_factory = instantiate(algo.trainer)
    try:
        trainer = trainer_factory(
            collector, cfg.total_frames, loss, optimizer, logger=logger, seed=cfg.seed,
            progress_bar=cfg.progress_bar, **extra,
        )  # fmt: skip
    except TypeError as err:
        if "replay_buffer" in str(err) and cfg.replay_buffer is None:
            raise SystemExit(
                "rl-train: this algorithm trains from a replay buffer: add "
                'replay_buffer=tensordict (rl-buffers, pip install "rl-buffers[hydra]").'
            ) from err
        raise
    if algo.anneal_lr:
        steps = _optim_steps(cfg, trainer)
        schedule = torch.optim.lr_scheduler.LinearLR(
            optimizer, start_factor=1.0, end_factor=0.0, total_iters=steps
        )
        LRSchedulerHook(schedule).register(trainer)
    for name, hook_cfg in (cfg.hooks or {}).items():
        hook = instantiate(hook_cfg)
        if not callable(getattr(hook, "register", None)):
            raise SystemExit(
                f"rl-train: hooks.{name} built a {type(hook).__name__}, which is not a trainer "
                f"hook (no register method): give it a hook's _target_ (+hook@hooks.{name}=...)."
            )
        hook.register(trainer, name=name)
    if exploration is not None:  # anneal epsilon by the frames collected
        trainer.register_op("batch_process", lambda batch: exploration.step(batch.numel()))
    returns = EpisodeReturns(trainer, cfg.target_return)
    trainer.register_op("pre_steps_log", returns)
    trainer.register_module("episode_returns", returns)
    directory = cfg.checkpoint_dir or run_dir / "checkpoints"
    checkpointer = RunCheckpointer(directory, interval=cfg.checkpoint_interval, keep_last=2)
    checkpointer.register(trainer)
    return trainer, returns, checkpointer


def write_curve(run_dir: Path, curve: list[tuple[int, float]], plot: bool, title: str) -> None:
    """``learning_curve.csv`` and, with matplotlib and ``plot``, ``learning_curve.png``."""
    with open(run_dir / "learning_curve.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["frames", "episode_return"])
        writer.writerows(curve)
    if not (plot and curve):
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    frames, values = zip(*curve)
    mean = [
        sum(values[max(0, i - 9) : i + 1]) / len(values[max(0, i - 9) : i + 1])
        for i in range(len(values))
    ]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frames, values, ".", alpha=0.3, label="episode return")
    ax.plot(frames, mean, label="mean of the last 10")
    ax.set_xlabel("frames")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "learning_curve.png")
    plt.close(fig)


def run(cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Trains ``cfg`` with ``run_dir`` as the run directory; returns the final figures."""
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.num_threads)
    run_dir.mkdir(parents=True, exist_ok=True)
    trainer, returns, checkpointer = build(cfg, run_dir)
    if cfg.resume and not checkpointer.restore():
        raise SystemExit(
            f"rl-train: resume=true but {checkpointer.rotation.directory} holds no checkpoint."
        )
    trainer.train()
    checkpointer.save(force=True)
    last10 = list(returns.last10)
    result = {
        "frames": trainer.collected_frames,
        "optim_steps": trainer.optim_count,
        "episodes": len(returns.curve),
        "mean_return_last10": sum(last10) / len(last10) if last10 else None,
        "stop_reason": trainer.stop_reason,
    }
    (run_dir / "result.json").write_text(json.dumps(result, indent=1))
    write_curve(run_dir, returns.curve, cfg.plot, f"{type(trainer).__name__}")
    close = getattr(trainer.logger, "close", None)
    if close is not None:
        close()
    print(json.dumps(result))
    return result


def main() -> None:
    """The ``rl-train`` console script."""
    try:
        import hydra
        from hydra.core.hydra_config import HydraConfig
    except ImportError as err:
        raise SystemExit(
            'rl-train needs hydra-core: pip install "rl-objectives[hydra]" (and the hydra '
            "extra of rl-envs, rl-collectors, rl-buffers)"
        ) from err
    register_all_configs()
    check_groups(sys.argv[1:])

    @hydra.main(version_base=None, config_path="pkg://rl_objectives.recipes", config_name="train")
    def _main(cfg: Any) -> None:
        run(cfg, Path(HydraConfig.get().runtime.output_dir))

    _main()


if __name__ == "__main__":
    main()
