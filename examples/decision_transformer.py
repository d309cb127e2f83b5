"""Offline Decision Transformer on Pendulum, from a dataset this script generates.

One file, top to bottom: the config; the dataset (``expert_episodes`` episodes of a swing-up
controller with exploration noise and ``random_episodes`` of a uniformly random policy, stored
episode by episode in a ``LazyMemmapStorage`` on disk); the ``DTActor`` trained with
``DTLoss`` on context windows of ``context`` steps (returns-to-go divided by
``return_scale``); then the evaluation: ``eval_episodes`` episodes side by side, each step the
last ``context`` observations, previous actions and returns-to-go go through the
``DecisionTransformerInferenceWrapper``, and the return-to-go starts at ``target_return`` and
loses each reward (what rl-envs' ``TargetReturn`` does inside an env).

The data policy here is a hand-written energy-pumping swing-up controller, not a trained SAC
agent: it gives good and mediocre episodes in seconds, so the run stays on a CPU budget.

Run:  ``uv run python examples/decision_transformer.py`` (the figures it prints: the mean
return of the dataset's expert and random episodes and of the DT conditioned on
``target_return``). Every config field is a flag: ``--help`` lists them.

Writes to ``runs/<exp-name>/``: the logs (CSV by default), ``config.json`` and
``checkpoint.pt``.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import _recipe
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_buffers import LazyMemmapStorage, TensorDictReplayBuffer
from rl_core.modules import DecisionTransformerInferenceWrapper, DTActor
from rl_envs import PendulumEnv
from rl_objectives import DTLoss
from rl_objectives.loggers import get_logger


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--context 10``)."""

    seed: int = 0
    expert_episodes: int = 48  # episodes of the swing-up controller in the dataset
    random_episodes: int = 48  # episodes of the uniformly random policy in the dataset
    expert_noise: float = 0.3  # std of the Gaussian noise added to the controller's torque
    max_steps: int = 200  # Pendulum-v1's time limit
    context: int = 20  # steps the transformer sees
    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 2
    dropout: float = 0.1
    return_scale: float = 1000.0  # returns-to-go are divided by this
    batch_size: int = 64  # context windows per update
    updates: int = 3000  # Adam steps
    lr: float = 3e-4
    target_return: float = -150.0  # the return the DT is asked for at evaluation
    eval_episodes: int = 8
    logger: str = "csv"
    exp_name: str | None = None  # defaults to dt_Pendulum_<seed>_<unix time>
    out_dir: str = "runs"


def parse_config(argv: list[str] | None = None) -> Config:
    return _recipe.parse_config(Config, argv, description=__doc__.splitlines()[0])


def swing_up(obs: torch.Tensor) -> torch.Tensor:
    """Energy pumping far from the top, a PD controller near it (torque in ``[-2, 2]``).

    With ``theta = 0`` upright, Pendulum's dynamics ``theta'' = 15 sin(theta) + 3 u`` conserve
    ``E = theta'^2 / 2 + 15 cos(theta)`` without torque, 15 at rest on top; ``dE/dt = 3 u
    theta'``, so pushing along ``theta'`` while ``E < 15`` pumps energy in.
    """
    cos, sin, speed = obs.unbind(-1)
    theta = torch.atan2(sin, cos)
    energy = 0.5 * speed**2 + 15.0 * cos
    pump = 2.0 * torch.sign(speed + 1e-6) * torch.sign(15.0 - energy)
    hold = -(10.0 * theta + 2.0 * speed)
    torque = torch.where((cos > 0.85) & (speed.abs() < 4.0), hold, pump)
    return torque.clamp(-2.0, 2.0).unsqueeze(-1)


def generate_episodes(cfg: Config, episodes: int, expert: bool) -> TensorDict:
    """``episodes`` Pendulum episodes ``[episodes, max_steps]`` with their returns-to-go."""
    env = PendulumEnv(batch_size=[episodes])
    env.set_seed(cfg.seed + (0 if expert else 1))

    def policy(td):
        if expert:
            noise = cfg.expert_noise * torch.randn(episodes, 1)
            action = (swing_up(td["observation"]) + noise).clamp(-2.0, 2.0)
        else:
            action = torch.rand(episodes, 1) * 4.0 - 2.0
        return td.set("action", action)

    traj = env.rollout(cfg.max_steps, policy)
    reward = traj["next", "reward"]
    return_to_go = reward.flip(-2).cumsum(-2).flip(-2)
    return TensorDict(
        observation=traj["observation"],
        action=traj["action"],
        reward=reward,
        return_to_go=return_to_go,
        batch_size=traj.batch_size,
    )


def sample_windows(data: TensorDict, cfg: Config, generator: torch.Generator) -> TensorDict:
    """``batch_size`` windows of ``context`` steps ending anywhere in an episode; windows
    reaching before the episode's start are zero-padded on the left, as at evaluation."""
    k = cfg.context
    padded = torch.cat(
        [data[:, :1].apply(lambda x: torch.zeros_like(x)).expand(data.shape[0], k - 1), data],
        dim=1,
    )
    episode = torch.randint(data.shape[0], (cfg.batch_size,), generator=generator)
    end = torch.randint(data.shape[1], (cfg.batch_size,), generator=generator)
    steps = end[:, None] + torch.arange(k)[None, :]  # indices into the padded episodes
    window = padded[episode[:, None], steps]
    window["return_to_go"] = window["return_to_go"] / cfg.return_scale
    return window


@torch.no_grad()
def evaluate(cfg: Config, wrapper: DecisionTransformerInferenceWrapper) -> float:
    """Mean return of ``eval_episodes`` episodes conditioned on ``target_return``."""
    n, k = cfg.eval_episodes, cfg.context
    env = PendulumEnv(batch_size=[n])
    env.set_seed(cfg.seed + 100)
    td = env.reset()
    obs_hist = torch.zeros(n, k, 3)
    act_hist = torch.zeros(n, k, 1)  # the k previous actions
    rtg_hist = torch.zeros(n, k, 1)
    rtg = torch.full((n, 1), cfg.target_return / cfg.return_scale)
    total = torch.zeros(n)
    for _ in range(cfg.max_steps):
        obs_hist = torch.cat([obs_hist[:, 1:], td["observation"][:, None]], dim=1)
        rtg_hist = torch.cat([rtg_hist[:, 1:], rtg[:, None]], dim=1)
        inputs = TensorDict(
            observation=obs_hist, action=act_hist, return_to_go=rtg_hist, batch_size=[n]
        )
        action = wrapper(inputs)["action"] * 2.0  # the actor's tanh output, scaled to [-2, 2]
        td.set("action", action)
        td = env.step(td)
        reward = td["next", "reward"]
        total += reward.squeeze(-1)
        rtg = rtg - reward / cfg.return_scale  # the return still to collect (TargetReturn)
        act_hist = torch.cat([act_hist[:, 1:], action[:, None] / 2.0], dim=1)
        td = td["next"]
    return total.mean().item()


def train(cfg: Config) -> dict[str, float]:
    """Generates and stores the dataset, trains the DT, evaluates it; returns the figures
    (``expert_return``, ``random_return``, ``eval_return``, ``final_loss``, ``seconds``)."""
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small batches: threads cost more than they give on a shared CPU
    exp_name = cfg.exp_name or f"dt_Pendulum_{cfg.seed}_{int(time.time())}"
    run_dir = Path(cfg.out_dir) / exp_name
    run_dir.mkdir(parents=True, exist_ok=True)
    logger = get_logger(cfg.logger, str(run_dir), "logs")
    logger.log_hparams(dataclasses.asdict(cfg))
    _recipe.save_config(cfg, run_dir)
    start = time.perf_counter()

    expert = generate_episodes(cfg, cfg.expert_episodes, expert=True)
    random = generate_episodes(cfg, cfg.random_episodes, expert=False)
    expert_return = expert["reward"].sum((-1, -2)).mean().item()
    random_return = random["reward"].sum((-1, -2)).mean().item()
    episodes = torch.cat([expert, random], dim=0)
    with tempfile.TemporaryDirectory() as scratch:
        # the transitions, in episode order, memory-mapped on disk, then read back whole
        storage = LazyMemmapStorage(episodes.numel(), scratch_dir=scratch, existsok=True)
        buffer = TensorDictReplayBuffer(storage=storage)
        buffer.extend(episodes.reshape(-1))
        data = buffer[:].clone().reshape(episodes.shape)
    # the actor's tanh output is in [-1, 1]: it regresses the actions divided by max torque
    data["action"] = data["action"] / 2.0
    print(
        f"dataset: {episodes.shape[0]} episodes, expert return {expert_return:.0f}, "
        f"random return {random_return:.0f}"
    )

    config = {
        "n_embd": cfg.n_embd,
        "n_layer": cfg.n_layer,
        "n_head": cfg.n_head,
        "n_inner": 4 * cfg.n_embd,
        "n_positions": 3 * cfg.context,
        "resid_pdrop": cfg.dropout,
        "attn_pdrop": cfg.dropout,
    }
    actor = DTActor(3, 1, transformer_config=config)
    policy = TensorDictModule(actor, ["observation", "action", "return_to_go"], ["action"])
    loss_module = DTLoss(policy, loss_function="l2")
    optim = torch.optim.AdamW(actor.parameters(), lr=cfg.lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(cfg.seed)
    loss = torch.tensor(math.nan)
    for step in range(cfg.updates):
        window = sample_windows(data, cfg, generator)
        loss = loss_module(window)["loss"]
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(actor.parameters(), 0.25)
        optim.step()
        if step % 100 == 0:
            logger.log_scalar("train/loss", loss.item(), step)

    actor.eval()
    wrapper = DecisionTransformerInferenceWrapper(policy, inference_context=cfg.context)
    eval_return = evaluate(cfg, wrapper)
    seconds = time.perf_counter() - start
    logger.log_scalar("eval/return", eval_return, cfg.updates)
    torch.save(
        {"actor": actor.state_dict(), "config": dataclasses.asdict(cfg)}, run_dir / "checkpoint.pt"
    )
    print(
        f"DT conditioned on {cfg.target_return:.0f}: mean return {eval_return:.0f} over "
        f"{cfg.eval_episodes} episodes ({seconds:.0f} s)"
    )
    return {
        "expert_return": expert_return,
        "random_return": random_return,
        "eval_return": eval_return,
        "final_loss": loss.item(),
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(parse_config())
