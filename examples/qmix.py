"""QMIX/VDN on PettingZoo's MPE simple-spread: per-agent Q-values mixed into a team value.

One file, top to bottom: the config, the env, the networks, the loss, then the training loop.
``num_envs`` copies of ``simple_spread_v3`` (``mpe2``, through ``PettingZooEnv``) run in a
``SerialEnv``; the agents form one group, ``"agents"``.

- Each agent's Q-values come from one ``MultiAgentMLP`` shared by the agents, each reading its
  own observation; a ``QValueModule`` picks the greedy move per agent and an ``EGreedyModule``
  explores.
- The mixer: ``--mixer vdn`` (the default) sums the agents' values (``VDNMixer``);
  ``--mixer qmix`` is ``QMixer``, a monotonic mixing network whose weights are produced from
  the global state (here all agents' observations, flattened); ``--mixer none`` trains the
  agents independently (independent Q-learning: each agent's TD target uses the team reward
  and its own value, a ``QMixerLoss`` with a per-agent "mixer" that passes values through).
  On this task and budget VDN learns best; see examples/README.md for the three.
- QMIX runs with ``mixing_embed_dim=8`` (not the paper's 32) and ``qmix_lr=2e-4``. With Adam
  an update moves each agent's values by about the step size whatever the mixer, and the
  mixer multiplies that by its slope ``dQ_tot/dQ_i``, about the width times ``|W1| * |W2|``
  (each 0.4 to 0.6 at initialisation): about 6 at 32 against 1 for VDN's sum. The team value
  then moves several times faster than VDN's, and the mixed ``max_a Q_i`` of the TD target
  overestimates: at 32 the greedy policy did worse than random moves (-53.8 after 24k
  frames; -46.0 after 8k, where the mixed values on visited states averaged +0.9 against
  -3.9 at width 8). At 8 the slope starts near 1 but grows with ``|W2|`` at ``lr=5e-4`` (to
  about 4 by 24k frames; the policy fell back to -28.1); at ``2e-4`` it stayed under 1 (0.3
  at 24k). Both settings matter on this budget (one seed): see examples/README.md.

Before training, the script plays ``eval_episodes`` episodes with uniformly random moves;
after training, as many with the trained greedy policy (with ``eval_eps`` random moves).

Run:  ``uv run python examples/qmix.py``; ``--help`` lists every flag.

Writes to ``runs/<exp-name>/``: the logs (CSV by default), ``checkpoint.pt`` and
``learning_curve.png``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--num-envs 8``)."""

    task: str = "simple_spread_v3"
    n_agents: int = 3  # agents (and landmarks) of simple-spread
    max_cycles: int = 25  # steps per episode
    seed: int = 0
    num_envs: int = 8  # env copies stepped together in a SerialEnv
    total_frames: int = 24_000  # env steps summed over all envs (each step moves every agent)
    frames_per_batch: int = 200  # collected per iteration (one episode of each env)
    init_random_frames: int = 1_600  # uniformly random moves before learning starts
    updates_per_batch: int = 16  # gradient steps per collected batch
    batch_size: int = 256
    buffer_size: int = 24_000
    lr: float = 5e-4  # Adam step size (--mixer vdn and none)
    qmix_lr: float = 2e-4  # Adam step size with --mixer qmix (see above)
    gamma: float = 0.95
    eps_init: float = 1.0
    eps_end: float = 0.05
    eps_frames: int = 12_000  # frames over which epsilon decays linearly
    tau: float = 0.01  # share of the online weights mixed into the targets per update
    max_grad_norm: float = 10.0
    hidden: int = 64  # width of the two hidden layers of the agents' network
    mixer: Literal["qmix", "vdn", "none"] = "vdn"  # none: independent Q-learning
    reward_scale: float = 1.0  # the team reward is multiplied by this before the TD targets
    mixing_embed_dim: int = 8  # QMixer's mixing width (32 overestimates here: see above)
    eval_eps: float = 0.05  # random moves of the evaluated greedy policy
    eval_episodes: int = 64  # episodes of the random baseline and of the final evaluation
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to qmix_<task>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
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
from pathlib import Path

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from tqdm import tqdm

from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import TransformedEnv
from rl_core.modules import EGreedyModule, QValueModule
from rl_envs import PettingZooEnv, SerialEnv
from rl_envs.transforms import RewardSum
from rl_objectives import QMixerLoss, SoftUpdate
from rl_objectives.loggers import get_logger
from rl_objectives.mixers import QMixer, VDNMixer
from rl_objectives.modules import MultiAgentMLP

GROUP = "agents"


def make_env(cfg: Config) -> TransformedEnv:
    """``num_envs`` copies of the task with discrete moves, per-agent episode returns summed
    at ``("agents", "episode_reward")``."""

    def make_one() -> PettingZooEnv:
        return PettingZooEnv(
            cfg.task, parallel=True, N=cfg.n_agents, max_cycles=cfg.max_cycles,
            continuous_actions=False,
        )  # fmt: skip

    env = TransformedEnv(SerialEnv(cfg.num_envs, make_one), RewardSum(in_keys=[(GROUP, "reward")]))
    env.set_seed(cfg.seed)
    return env


def make_networks(env: TransformedEnv, cfg: Config) -> tuple[TensorDictSequential, nn.Module]:
    """The agents' Q-network with its greedy move (``("agents", "action")``) and the mixer
    writing the team value ``"chosen_action_value"``."""
    obs_dim = env.observation_spec[GROUP, "observation"].shape[-1]
    n_actions = env.action_spec.n
    q_net = MultiAgentMLP(
        obs_dim, n_actions, cfg.n_agents, centralized=False, share_params=True,
        depth=2, num_cells=cfg.hidden, activation_class=nn.ReLU,
    )  # fmt: skip
    actor = TensorDictSequential(
        TensorDictModule(q_net, [(GROUP, "observation")], [(GROUP, "action_value")]),
        QValueModule(
            spec=env.action_spec,
            action_value_key=(GROUP, "action_value"),
            out_keys=[env.action_key, (GROUP, "action_value"), (GROUP, "chosen_action_value")],
        ),
    )
    local = [(GROUP, "chosen_action_value")]
    if cfg.mixer == "qmix":
        state = TensorDictModule(nn.Flatten(-2), [(GROUP, "observation")], ["state"])
        mix = QMixer(
            state_shape=(cfg.n_agents * obs_dim,), mixing_embed_dim=cfg.mixing_embed_dim,
            n_agents=cfg.n_agents,
        )  # fmt: skip
        mixer = TensorDictSequential(
            state, TensorDictModule(mix, [*local, "state"], ["chosen_action_value"])
        )
    elif cfg.mixer == "vdn":
        mixer = TensorDictModule(VDNMixer(cfg.n_agents), local, ["chosen_action_value"])
    else:  # independent learners: each agent's value is its own "team" value
        mixer = TensorDictModule(nn.Identity(), local, [(GROUP, "team_value")])
    return actor, mixer


def evaluate(env: TransformedEnv, policy: nn.Module | None, episodes: int) -> float:
    """Mean per-agent episode return over ``episodes`` episodes: of uniformly random moves
    (``policy=None``) or of the given policy."""
    returns: list[float] = []
    with torch.no_grad():
        while len(returns) < episodes:
            rollout = env.rollout(
                10_000, policy, break_when_all_done=True, break_when_any_done=False
            )
            done = rollout["next", "done"].squeeze(-1)
            returns += rollout["next", GROUP, "episode_reward"][done].mean((-2, -1)).tolist()
    return sum(returns[:episodes]) / episodes


def save_curve(
    frames: list[int], means: list[float], baseline: float, path: Path, title: str
) -> None:
    """Mean episode return per batch against frames, with the random-policy baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frames, means, label="training episodes (epsilon-greedy)")
    ax.axhline(baseline, color="gray", linestyle="--", label="uniform-random policy")
    ax.set_xlabel("frames")
    ax.set_ylabel("episode return per agent")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, float]:
    """Runs QMIX (or VDN, or independent Q-learning); returns ``random_return`` and
    ``final_return`` (the evaluations before and after training), ``train_return_last3``,
    ``frames`` and ``seconds`` (training only)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give
    exp_name = cfg.exp_name or f"qmix_{cfg.task}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    env = make_env(cfg)
    random_return = evaluate(env, None, cfg.eval_episodes)
    print(f"uniform-random policy: mean episode return per agent {random_return:.2f}")
    logger.log_scalar("eval/random_return", random_return, step=0)

    actor, mixer = make_networks(env, cfg)
    explore = EGreedyModule(
        env.action_spec, eps_init=cfg.eps_init, eps_end=cfg.eps_end,
        annealing_num_steps=cfg.eps_frames, action_key=env.action_key,
    )  # fmt: skip
    collector = SyncDataCollector(
        env,
        TensorDictSequential(actor, explore),
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        init_random_frames=cfg.init_random_frames,
    )
    loss_fn = QMixerLoss(actor, mixer, delay_value=True, gamma=cfg.gamma)
    if cfg.mixer == "none":
        # The team reward, flags and target are broadcast to every agent.
        loss_fn.set_keys(global_value=(GROUP, "team_value"))
    target_updater = SoftUpdate(loss_fn, tau=cfg.tau)
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(cfg.buffer_size), batch_size=cfg.batch_size
    )
    lr = cfg.qmix_lr if cfg.mixer == "qmix" else cfg.lr
    optim = torch.optim.Adam(loss_fn.parameters(), lr=lr)

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
        # The team reward: the mean of the agents' rewards (they share most of it).
        team_reward = batch["next", GROUP, "reward"].mean(-2) * cfg.reward_scale
        batch.set(("next", "reward"), team_reward)
        keep = [env.action_key, (GROUP, "observation"), ("next", GROUP, "observation")]
        keep += [("next", k) for k in ("reward", "done", "terminated")]
        buffer.extend(batch.select(*keep).reshape(-1))
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
        if curve_means:
            bar.set_postfix(
                episode_return=f"{curve_means[-1]:.2f}", eps=f"{explore.eps.item():.2f}"
            )
    bar.close()
    seconds = time.perf_counter() - start
    collector.shutdown()
    greedy = TensorDictSequential(
        actor,
        EGreedyModule(
            env.action_spec, eps_init=cfg.eval_eps, eps_end=cfg.eval_eps,
            action_key=env.action_key,
        ),
    )  # fmt: skip
    final_return = evaluate(env, greedy, cfg.eval_episodes)
    logger.log_scalar("eval/final_return", final_return, step=frames)

    torch.save(
        {
            "q_network": actor.state_dict(),
            "mixer": mixer.state_dict(),
            "optimizer": optim.state_dict(),
            "config": dataclasses.asdict(cfg),
            "frames": frames,
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot and curve_means:
        title = {"qmix": "QMIX", "vdn": "VDN", "none": "independent Q-learning"}[cfg.mixer]
        save_curve(
            curve_frames,
            curve_means,
            random_return,
            run_dir / "learning_curve.png",
            f"{title} {cfg.task}",
        )
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
