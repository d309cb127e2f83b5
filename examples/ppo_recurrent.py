"""Recurrent PPO on a partially observed CartPole: the velocities are removed from the observation.

The policy sees the cart position and the pole angle only, so it must remember the previous
observations to tell which way things move. The actor and the critic each carry that memory
in an LSTM whose hidden state lives in the TensorDict (``InitTracker`` marks the episode
starts, the primers that ``get_primers_from_module`` gathers from the LSTMs' own
``make_tensordict_primer()`` write zero states at reset and carry the policy's next state to
the next step). Training runs the same LSTM in sequence mode on chunks
of the collected ``[env, time]`` batch, each chunk starting from the state stored at its first
step, with backpropagation through time inside the chunk.

Run:  ``uv run python examples/ppo_recurrent.py`` (a mean return of 400 over the last 10
episodes, see examples/README.md for frames and time) and the memoryless baseline, the same
network with the LSTM replaced by a feed-forward layer of the same width:
``uv run python examples/ppo_recurrent.py --no-memory``. Every config field is a flag:
``--help`` lists them.

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

    env_name: str = "CartPole-v1"
    seed: int = 0
    memory: bool = True  # False: the LSTM replaced by a feed-forward layer (the baseline)
    num_envs: int = 8  # vectorised gymnasium envs stepped together
    total_frames: int = 150_000  # env steps summed over all envs
    frames_per_batch: int = 256  # collected per iteration (num_envs * rollout length)
    chunk_len: int = 32  # training sequences: the rollout cut into chunks of this length
    chunks_per_minibatch: int = 8
    num_epochs: int = 10  # passes over each batch
    lr: float = 1e-3
    anneal_lr: bool = True  # linear decay of the learning rate to 0 over the run
    gamma: float = 0.98
    gae_lambda: float = 0.8
    clip_epsilon: float = 0.2
    entropy_coeff: float = 0.0
    critic_coeff: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64  # LSTM (or feed-forward) width and the heads' hidden width
    target_return: float | None = None  # stop once the last-10-episode mean reaches it
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to ppo_recurrent_<env>_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


# DropVelocities keeps CartPole's positions: the task is CartPole
RULES = {
    "env_name": _recipe.one_of("CartPole-v1"),
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
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential
from tqdm import tqdm

from rl_collectors import SyncDataCollector
from rl_core import Bounded, Composite, TensorSpec, Transform, TransformedEnv
from rl_core.modules import (
    MLP,
    LSTMModule,
    OneHotCategorical,
    ProbabilisticActor,
    get_primers_from_module,
)
from rl_core.transforms import InitTracker
from rl_envs import GymEnv
from rl_envs.transforms import RewardSum
from rl_objectives import ClipPPOLoss
from rl_objectives.loggers import get_logger
from rl_objectives.value import GAE


class DropVelocities(Transform):
    """Keeps the position entries of CartPole's ``[x, x_dot, theta, theta_dot]`` observation."""

    def __init__(self, keep: tuple[int, ...] = (0, 2)) -> None:
        super().__init__(in_keys=["observation"])
        self.keep = list(keep)

    def _apply_transform(self, observation: torch.Tensor) -> torch.Tensor:
        return observation[..., self.keep]

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        spec = observation_spec["observation"]
        observation_spec["observation"] = Bounded(
            low=spec.low[..., self.keep],
            high=spec.high[..., self.keep],
            shape=(*spec.shape[:-1], len(self.keep)),
            dtype=spec.dtype,
            device=spec.device,
        )
        return observation_spec


def make_env(cfg: Config) -> TransformedEnv:
    """``num_envs`` CartPoles without velocities, episode starts marked (``is_init``, which
    restarts the LSTM's state) and episode returns summed at ``"episode_reward"``."""
    env = TransformedEnv(GymEnv(cfg.env_name, num_envs=cfg.num_envs), DropVelocities())
    env.append_transform(InitTracker())
    env.append_transform(RewardSum())
    env.set_seed(cfg.seed)
    return env


def make_modules(cfg: Config, obs_dim: int, action_spec: TensorSpec) -> dict:
    """The actor and the critic, each with its own LSTM (or, without memory, a feed-forward
    layer of the same width) and a one-hidden-layer head.

    Returns the acting policy (step mode: the actor then the critic, so that both hidden
    states advance while collecting), the actor and critic that the loss trains (sequence
    mode) and the step-mode critic; they all share the same parameters.
    """

    def features(in_keys: list, out_keys: list) -> tuple[TensorDictModule, TensorDictModule]:
        if cfg.memory:
            lstm = LSTMModule(obs_dim, cfg.hidden, in_keys=in_keys, out_keys=out_keys)
            return lstm, lstm.set_recurrent_mode(True)
        net = torch.nn.Sequential(torch.nn.Linear(obs_dim, cfg.hidden), torch.nn.Tanh())
        ff = TensorDictModule(net, in_keys[:1], out_keys[:1])
        return ff, ff

    def head(out: int) -> MLP:
        return MLP(cfg.hidden, out, depth=1, num_cells=cfg.hidden, activation_class=torch.nn.Tanh)

    actor_step, actor_seq = features(
        ["observation", "recurrent_state_h", "recurrent_state_c"],
        ["features", ("next", "recurrent_state_h"), ("next", "recurrent_state_c")],
    )
    critic_step, critic_seq = features(
        ["observation", "critic_state_h", "critic_state_c"],
        ["critic_features", ("next", "critic_state_h"), ("next", "critic_state_c")],
    )
    logits = TensorDictModule(head(action_spec.shape[-1]), ["features"], ["logits"])
    value = TensorDictModule(head(1), ["critic_features"], ["state_value"])

    def actor(feats: TensorDictModule) -> ProbabilisticActor:
        return ProbabilisticActor(
            TensorDictSequential(feats, logits), ["logits"], spec=action_spec,
            distribution_class=OneHotCategorical, return_log_prob=True,
        )  # fmt: skip

    critic = TensorDictSequential(critic_step, value)
    return {
        "policy": TensorDictSequential(actor(actor_step), critic),
        "actor": actor(actor_seq),
        "critic": TensorDictSequential(critic_seq, value),
        "critic_step": critic,
    }


def state_values(batch: TensorDictBase, critic_step: TensorDictSequential) -> None:
    """Writes ``state_value`` and ``("next", "state_value")`` from the stored hidden states.

    Each step's root holds the state the policy acted from and its ``"next"`` the state the
    policy produced, so one step-mode call per side gives exactly the values along the
    trajectory, with no time loop.
    """
    for td in (batch, batch["next"]):
        inputs = td.select(*critic_step.in_keys, "is_init", strict=False)
        td.set("state_value", critic_step(inputs)["state_value"])


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
    """Runs recurrent PPO; returns the final figures (``mean_return_last10``, ``frames``,
    ``seconds``, ``frames_to_target``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give
    if cfg.frames_per_batch % (cfg.num_envs * cfg.chunk_len):
        raise ValueError(
            f"ppo_recurrent: frames_per_batch ({cfg.frames_per_batch}) must be a multiple of "
            f"num_envs * chunk_len ({cfg.num_envs} * {cfg.chunk_len})."
        )
    kind = "lstm" if cfg.memory else "mlp"
    exp_name = cfg.exp_name or f"ppo_recurrent_{kind}_{cfg.env_name}_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    env = make_env(cfg)
    obs_dim = env.observation_spec["observation"].shape[-1]
    nets = make_modules(cfg, obs_dim, env.action_spec)
    if cfg.memory:
        # zero hidden states at reset, the policy's ("next", state) carried to the next step
        # (one LSTM alone: env.append_transform(lstm.make_tensordict_primer()))
        env.append_transform(get_primers_from_module(nets["policy"]))
    collector = SyncDataCollector(
        env, nets["policy"], frames_per_batch=cfg.frames_per_batch, total_frames=cfg.total_frames
    )
    loss_fn = ClipPPOLoss(
        nets["actor"],
        nets["critic"],
        clip_epsilon=cfg.clip_epsilon,
        entropy_bonus=cfg.entropy_coeff > 0,
        entropy_coeff=cfg.entropy_coeff,
        critic_coeff=cfg.critic_coeff,
        loss_critic_type="l2",
        normalize_advantage=True,
        functional=False,  # train the modules themselves (the step-mode twins share them)
    )
    gae = GAE(cfg.gamma, cfg.gae_lambda, value_network=None, skip_existing=True)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr, eps=1e-5)
    num_iters = -(-cfg.total_frames // cfg.frames_per_batch)
    n_chunks = cfg.frames_per_batch // cfg.chunk_len

    ep_frames: list[int] = []
    ep_returns: list[float] = []
    last10: deque[float] = deque(maxlen=10)
    frames, frames_to_target, start = 0, None, time.perf_counter()
    bar = tqdm(total=cfg.total_frames, unit="frames", dynamic_ncols=True)
    for it, batch in enumerate(collector):  # batch: [num_envs, time]
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
            state_values(batch, nets["critic_step"])
            gae(batch)  # "advantage" and "value_target" from the values written above
        # [num_envs, time] -> [chunks, chunk_len]: each chunk starts from its stored state
        chunks = batch.reshape(n_chunks, cfg.chunk_len)
        for _ in range(cfg.num_epochs):
            for idx in torch.randperm(n_chunks).split(cfg.chunks_per_minibatch):
                out = loss_fn(chunks[idx].clone())
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
            "policy": nets["policy"].state_dict(),
            "critic": nets["critic"].state_dict(),
            "optimizer": optim.state_dict(),
            "config": dataclasses.asdict(cfg),
            "frames": frames,
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot and ep_returns:
        title = f"recurrent PPO ({kind}) {cfg.env_name} without velocities"
        save_curve(ep_frames, ep_returns, run_dir / "learning_curve.png", title)
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
