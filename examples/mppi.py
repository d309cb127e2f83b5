"""MPPI (or CEM) planning on Pendulum through its dynamics wrapped as a model-based env.

One file, top to bottom: the config, the world model (Pendulum-v1's equations as a
``TensorDictModule``), the ``ModelBasedEnvBase`` around it, the planner, then the evaluation
loop. No network is trained: at every step of the true ``PendulumEnv`` the planner samples
``num_candidates`` action sequences of ``planning_horizon`` steps, simulates all of them at once
in the model env (batch ``[num_episodes, num_candidates]``), refits its Gaussian
``optim_steps`` times and plays the first action of the plan. ``num_episodes`` episodes of 200
steps run side by side. With ``--model learned`` the world model is instead an MLP fitted to
``random_frames`` transitions of a random policy, and the planner uses it the same way.

Run:  ``uv run python examples/mppi.py`` (a mean return of about -215 over 8 episodes, in about
20 s on a 2-core CPU; examples/README.md has the figures), ``uv run python examples/mppi.py
--planner cem``, ``uv run python examples/mppi.py --model learned`` (about -200, against
about -1270 for the random policy from the same start states).
Every config field is a flag: ``--help`` lists them.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``config.json`` and ``learning_curve.png`` (the return accumulated along each episode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--num-candidates 64``)."""

    seed: int = 0
    planner: Literal["mppi", "cem"] = "mppi"
    model: Literal["true", "learned"] = "true"  # Pendulum's equations, or an MLP fitted to data
    random_frames: int = 4000  # learned model: random-policy transitions it is fitted to
    model_updates: int = 3000  # learned model: Adam steps on minibatches of 256
    model_hidden: int = 128  # learned model: width of its two hidden layers
    model_lr: float = 1e-3
    num_episodes: int = 8  # episodes of the true env run side by side
    max_steps: int = 200  # Pendulum-v1's time limit
    planning_horizon: int = 20  # steps simulated per candidate
    optim_steps: int = 4  # refits of the sampling Gaussian per env step
    num_candidates: int = 128  # action sequences sampled per refit
    top_k: int = 16  # candidates the Gaussian is refitted to
    temperature: float = 1.0  # MPPI: weights exp(temperature * return)
    gamma: float = 1.0  # discount of the simulated rewards (MPPI's advantage)
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to mppi_Pendulum_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "top_k": _recipe.count_at_most("num_candidates"),
}


def parse_config(argv: list[str] | None = None) -> Config:
    """Builds a :class:`Config` from the command line: flags, ``key=value`` overrides and
    ``--config runs/<exp>/config.json`` (``--help`` lists every field and its default)."""
    return _recipe.parse_config(Config, argv, description=__doc__.split("\n")[0], rules=RULES)


if __name__ == "__main__":
    # Read before torch and the packages load (seconds): --help and a refused value answer now.
    CONFIG = parse_config()


import dataclasses
import math
import time
from pathlib import Path

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from tqdm import tqdm

from rl_core.keys import NEXT, REWARD
from rl_core.modules import MLP
from rl_core.specs import Bounded, Composite, Unbounded
from rl_envs import CEMPlanner, ModelBasedEnvBase, MPCPlannerBase, MPPIPlanner, PendulumEnv
from rl_envs.native.pendulum import MAX_SPEED, MAX_TORQUE, pendulum_step
from rl_objectives.loggers import get_logger


class PendulumDynamics(torch.nn.Module):
    """Pendulum-v1's true transition on observations: ``[cos th, sin th, thdot]`` and a
    torque to the next observation and the reward (``rl_envs.native.pendulum_step``)."""

    def __init__(self, g: float = 10.0) -> None:
        super().__init__()
        self.g = g

    def forward(
        self, observation: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        th = torch.atan2(observation[..., 1:2], observation[..., 0:1])
        thdot = observation[..., 2:3]
        new_th, new_thdot, reward = pendulum_step(th, thdot, action, self.g)
        next_obs = torch.cat([torch.cos(new_th), torch.sin(new_th), new_thdot], dim=-1)
        return next_obs, reward


class LearnedDynamics(torch.nn.Module):
    """An MLP world model: ``[observation, action]`` (inputs scaled to about [-1, 1]) to the
    change of the observation and the reward."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = MLP(4, 4, num_cells=[hidden, hidden], activation_class=torch.nn.SiLU)
        self.register_buffer("scale", torch.tensor([1.0, 1.0, MAX_SPEED, MAX_TORQUE]))

    def forward(
        self, observation: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.net(torch.cat([observation, action], dim=-1) / self.scale)
        return observation + out[..., :3], out[..., 3:]


def fit_world_model(cfg: Config, logger) -> torch.nn.Module:
    """Collects ``random_frames`` transitions of the true env with uniform random torques and
    fits :class:`LearnedDynamics` to them (mean squared error on the next observation and the
    reward)."""
    num_envs = max(1, cfg.random_frames // cfg.max_steps)
    data_env = PendulumEnv(batch_size=[num_envs])
    data_env.set_seed(cfg.seed + 1)
    data = data_env.rollout(cfg.max_steps).reshape(-1)  # random actions
    obs, action = data["observation"], data["action"]
    target = torch.cat([data["next", "observation"], data["next", "reward"]], dim=-1)
    model = LearnedDynamics(cfg.model_hidden)
    optim = torch.optim.Adam(model.parameters(), lr=cfg.model_lr)
    for update in tqdm(range(cfg.model_updates), unit="updates", dynamic_ncols=True):
        idx = torch.randint(0, obs.shape[0], (256,))
        next_obs, reward = model(obs[idx], action[idx])
        loss = (torch.cat([next_obs, reward], dim=-1) - target[idx]).square().mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
        if update % 100 == 0:
            logger.log_scalar("model/loss", loss.item(), step=update)
    print(f"world model: {obs.shape[0]} random transitions, final minibatch loss {loss.item():.4f}")
    return model


class PendulumModelEnv(ModelBasedEnvBase):
    """Pendulum as a model-based env: the step is ``world_model``; the reset samples
    Pendulum-v1's start distribution (angle in ``[-pi, pi]``, velocity in ``[-1, 1]``)."""

    def __init__(self, world_model: torch.nn.Module, batch_size: tuple[int, ...] = ()) -> None:
        super().__init__(world_model, batch_size=batch_size)
        batch = tuple(self.batch_size)
        self.observation_spec = Composite(
            observation=Bounded(
                torch.tensor([-1.0, -1.0, -MAX_SPEED]).expand(*batch, 3),
                torch.tensor([1.0, 1.0, MAX_SPEED]).expand(*batch, 3),
                shape=(*batch, 3),
            ),
            shape=batch,
        )
        self.action_spec = Bounded(-MAX_TORQUE, MAX_TORQUE, shape=(*batch, 1))
        self.reward_spec = Unbounded(shape=(*batch, 1))

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        shape = (*self.batch_size, 1)
        th = (torch.rand(shape) * 2 - 1) * math.pi
        thdot = torch.rand(shape) * 2 - 1
        obs = torch.cat([torch.cos(th), torch.sin(th), thdot], dim=-1)
        return TensorDict(observation=obs, batch_size=self.batch_size)


class RewardToGo(torch.nn.Module):
    """MPPI's score: writes ``"advantage"``, the discounted sum of the simulated rewards from
    each step to the end of the plan (no value bootstrap)."""

    def __init__(self, gamma: float = 1.0) -> None:
        super().__init__()
        self.gamma = gamma

    def forward(self, traj: TensorDictBase) -> TensorDictBase:
        reward = traj.get((NEXT, REWARD))  # [..., T, 1]
        out = torch.zeros_like(reward)
        acc = torch.zeros_like(reward[..., 0, :])
        for t in range(reward.shape[-2] - 1, -1, -1):
            acc = reward[..., t, :] + self.gamma * acc
            out[..., t, :] = acc
        return traj.set("advantage", out)


def make_planner(cfg: Config, model_env: ModelBasedEnvBase) -> MPCPlannerBase:
    """The MPPI (default) or CEM planner over ``model_env``."""
    if cfg.planner == "mppi":
        return MPPIPlanner(
            model_env,
            RewardToGo(cfg.gamma),
            temperature=cfg.temperature,
            planning_horizon=cfg.planning_horizon,
            optim_steps=cfg.optim_steps,
            num_candidates=cfg.num_candidates,
            top_k=cfg.top_k,
        )
    return CEMPlanner(
        model_env,
        planning_horizon=cfg.planning_horizon,
        optim_steps=cfg.optim_steps,
        num_candidates=cfg.num_candidates,
        top_k=cfg.top_k,
    )


def save_curve(cumulative: torch.Tensor, path: Path, title: str) -> None:
    """The return accumulated along each episode (``cumulative``: ``[episodes, steps]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for i, row in enumerate(cumulative.tolist()):
        ax.plot(range(1, len(row) + 1), row, label=f"episode {i}")
    ax.set_xlabel("step")
    ax.set_ylabel("return so far")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, float]:
    """Plans through the model env in ``num_episodes`` episodes of the true env; returns the
    figures (``mean_return``, ``returns``, ``frames``, ``seconds``). Nothing is learned (the
    model is exact), so "train" is the evaluation run."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small batches: threads cost more than they give
    exp_name = cfg.exp_name or f"{cfg.planner}_{cfg.model}_Pendulum_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    dynamics = PendulumDynamics() if cfg.model == "true" else fit_world_model(cfg, logger)
    world_model = TensorDictModule(
        dynamics, in_keys=["observation", "action"], out_keys=["observation", "reward"]
    )
    model_env = PendulumModelEnv(world_model)
    planner = make_planner(cfg, model_env)
    env = PendulumEnv(batch_size=[cfg.num_episodes])
    env.set_seed(cfg.seed)  # the random policy's baseline starts from the same states
    random_return = env.rollout(cfg.max_steps)["next", "reward"].sum((-1, -2)).mean().item()
    env.set_seed(cfg.seed)

    start = time.perf_counter()
    td = env.reset()
    rewards = []
    for step in tqdm(range(cfg.max_steps), unit="steps", dynamic_ncols=True):
        td = env.step(planner(td))
        reward = td.get((NEXT, REWARD)).squeeze(-1)
        rewards.append(reward)
        logger.log_scalar("eval/step_reward", reward.mean().item(), step=step)
        td = env.step_mdp_plan()(td)
    seconds = time.perf_counter() - start
    cumulative = torch.stack(rewards, dim=-1).cumsum(-1)  # [episodes, steps]
    returns = cumulative[:, -1]
    mean_return = returns.mean().item()
    for i, r in enumerate(returns.tolist()):
        logger.log_scalar("eval/episode_return", r, step=i)
    logger.log_scalar("eval/random_policy_return", random_return, step=0)
    if cfg.plot:
        save_curve(cumulative, run_dir / "learning_curve.png", f"{cfg.planner.upper()} Pendulum")
    logger.close()
    frames = cfg.num_episodes * cfg.max_steps
    print(
        f"done: {cfg.num_episodes} episodes ({frames} frames) in {seconds:.1f} s; returns "
        f"{[round(r, 1) for r in returns.tolist()]}, mean {mean_return:.1f} (random policy: "
        f"{random_return:.1f}); outputs in {run_dir}"
    )
    return {
        "mean_return": mean_return,
        "random_return": random_return,
        "returns": returns.tolist(),
        "frames": frames,
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
