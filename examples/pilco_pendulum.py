"""PILCO swings up Pendulum-v1 from the bottom: GP dynamics, an RBF policy, moment matching.

One file, top to bottom: the config, the real episodes on rl-envs' ``PendulumEnv`` (started
hanging down, the policy's torque held for ``action_repeat`` steps of 0.05 s), the imagined
rollout of a Gaussian state belief through ``GPWorldModel`` and ``RBFController``, and the loop
of Deisenroth & Rasmussen (2011): one random episode, then per episode fit the GPs to all the
data, minimise the summed expected saturating cost (``ExponentialQuadraticCost``) of a
``horizon``-step imagined rollout over the policy's parameters (L-BFGS through the analytic
moments), and run the policy on the real pendulum. The task counts as solved in the first
episode whose last ``hold_steps`` control steps stay within ``success_angle`` of upright.

Run:  ``uv run python examples/pilco_pendulum.py --seed 1`` (balanced in the 4th policy episode;
it prints each episode's return and the episode count it needed). Every config field is a
flag: ``--help`` lists them.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``config.json`` and ``learning_curve.png`` (the return of each episode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--horizon 30``)."""

    seed: int = 0
    max_episodes: int = 8  # policy episodes after the random one, at most
    episode_steps: int = 40  # control steps per real episode
    action_repeat: int = 2  # env steps (0.05 s each) per control step
    horizon: int = 40  # control steps of the imagined rollout
    n_basis: int = 30  # RBF policy basis functions
    policy_steps: int = 40  # L-BFGS iterations of the policy search per episode
    fit_steps: int = 50  # L-BFGS iterations of the GP hyperparameter fit
    max_points: int = 200  # GP training points (a random subset when there are more)
    cost_width: float = 0.5  # width of the saturating cost around the upright position
    velocity_weight: float = 0.01  # weight of the angular velocity in the cost (position: 1)
    success_angle: float = 0.3  # radians from upright that count as balanced
    hold_steps: int = 10  # last control steps of an episode that must be balanced
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to pilco_Pendulum_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "cost_width": _recipe.above(0),
    "velocity_weight": _recipe.at_least(0),
    "success_angle": _recipe.between(0, 3.14159, open_low=True),
    "hold_steps": _recipe.count_at_most("episode_steps"),
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
from tensordict import TensorDict

from rl_core import step_mdp
from rl_envs import PendulumEnv
from rl_objectives.loggers import get_logger
from rl_objectives.losses import ExponentialQuadraticCost
from rl_objectives.modules import GPWorldModel, RBFController

F64 = torch.float64


def run_episode(env: PendulumEnv, cfg: Config, policy) -> tuple[TensorDict, float, list[float]]:
    """One real episode from the bottom (angle pi, a little noise); ``policy`` maps an
    observation ``[cos, sin, thdot]`` to a torque. Returns the control-step transitions, the
    Pendulum-v1 return and the angle from upright after each control step."""
    td = env.reset()
    th = torch.full((1,), math.pi, dtype=F64) + 0.05 * torch.randn(1, dtype=F64)
    td["th"], td["thdot"] = th, torch.zeros(1, dtype=F64)
    td["observation"] = torch.cat([th.cos(), th.sin(), torch.zeros(1, dtype=F64)]).float()
    obs, actions, next_obs, angles, ret = [], [], [], [], 0.0
    for _ in range(cfg.episode_steps):
        o = td["observation"].to(F64)
        a = policy(o).clamp(-2.0, 2.0)
        for _ in range(cfg.action_repeat):
            td["action"] = a.float()
            td = env.step(td)
            ret += td["next", "reward"].item()
            td = step_mdp(td)
        obs.append(o)
        actions.append(a)
        next_obs.append(td["observation"].to(F64))
        angles.append(abs(math.remainder(td["th"].item(), 2 * math.pi)))
    data = TensorDict(
        observation=torch.stack(obs), action=torch.stack(actions), batch_size=[len(obs)]
    )
    data["next", "observation"] = torch.stack(next_obs)
    return data, ret, angles


def imagined_cost(model: GPWorldModel, policy: RBFController, cost, cfg: Config) -> torch.Tensor:
    """The summed expected cost of a ``horizon``-step rollout of the Gaussian state belief,
    from the bottom (PILCO's policy-search objective)."""
    belief = TensorDict(batch_size=[])
    belief["observation", "mean"] = torch.tensor([-1.0, 0.0, 0.0], dtype=F64)
    belief["observation", "var"] = torch.diag(torch.tensor([1e-4, 2.5e-3, 1e-4], dtype=F64))
    total = torch.zeros((), dtype=F64)
    for _ in range(cfg.horizon):
        u_mean, u_var, cross = policy(belief["observation", "mean"], belief["observation", "var"])
        belief["action", "mean"], belief["action", "var"] = u_mean, u_var
        belief["action", "cross_covariance"] = cross
        model(belief)
        nxt = TensorDict(batch_size=[])
        nxt["observation", "mean"] = belief["next", "observation", "mean"]
        nxt["observation", "var"] = belief["next", "observation", "var"]
        total = total + cost(nxt)["loss_cost"]
        belief = nxt
    return total


def improve_policy(model: GPWorldModel, policy: RBFController, cost, cfg: Config) -> float:
    """PILCO's policy search: L-BFGS on the imagined cost through the analytic moments.
    Returns the imagined cost of the improved policy."""
    optim = torch.optim.LBFGS(
        policy.parameters(), max_iter=cfg.policy_steps, line_search_fn="strong_wolfe"
    )

    def closure() -> torch.Tensor:
        optim.zero_grad()
        loss = imagined_cost(model, policy, cost, cfg)
        loss.backward()
        return loss

    optim.step(closure)
    with torch.no_grad():
        return imagined_cost(model, policy, cost, cfg).item()


def make_policy(cfg: Config) -> RBFController:
    """The RBF policy, its centres spread around the circle of ``[cos, sin]`` positions."""
    policy = RBFController(3, 1, max_action=2.0, n_basis=cfg.n_basis).double()
    with torch.no_grad():
        angle = torch.rand(cfg.n_basis, dtype=F64) * 2 * math.pi
        speed = torch.randn(cfg.n_basis, dtype=F64) * 2.0
        policy.centers.copy_(torch.stack([angle.cos(), angle.sin(), speed], -1))
        policy.lengthscales.copy_(torch.tensor([1.0, 1.0, 3.0], dtype=F64))
    return policy


def save_curve(returns: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(range(len(returns)), returns, marker="o")
    ax.set_xlabel("episode (0: random)")
    ax.set_ylabel("return")
    ax.set_title("PILCO Pendulum swing-up")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict:
    """Runs PILCO until an episode balances the pendulum or ``max_episodes`` have run; returns
    ``episodes_needed`` (``None`` if never solved), ``returns`` (index 0: the random episode),
    ``solved`` and ``seconds``."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small matrices: threads cost more than they give
    exp_name = cfg.exp_name or f"pilco_Pendulum_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    start = time.perf_counter()
    env = PendulumEnv(dtype=F64)
    env.set_seed(cfg.seed)
    data, ret, _ = run_episode(env, cfg, lambda o: torch.rand(1, dtype=F64) * 4 - 2)
    returns, solved_at = [ret], None
    logger.log_scalar("episode_return", ret, step=0)
    print(f"random episode: return {ret:.1f}")
    policy = make_policy(cfg)
    target = torch.tensor([1.0, 0.0, 0.0], dtype=F64)  # upright and at rest
    weights = torch.diag(torch.tensor([1.0, 1.0, cfg.velocity_weight], dtype=F64))
    weights = weights / cfg.cost_width**2
    cost = ExponentialQuadraticCost(target=target, weights=weights, reduction="sum")
    still = torch.zeros(3, 3, dtype=F64)  # a known state: the deterministic action
    for episode in range(1, cfg.max_episodes + 1):
        points = (
            data
            if data.shape[0] <= cfg.max_points
            else data[torch.randperm(data.shape[0])[: cfg.max_points]]
        )
        model = GPWorldModel(3, 1, fit_steps=cfg.fit_steps)
        model.fit(points)
        predicted = improve_policy(model, policy, cost, cfg)
        with torch.no_grad():
            new, ret, angles = run_episode(env, cfg, lambda o: policy(o, still)[0])
        data = torch.cat([data, new])
        returns.append(ret)
        balanced = max(angles[-cfg.hold_steps :]) < cfg.success_angle
        logger.log_scalar("episode_return", ret, step=episode)
        logger.log_scalar("predicted_cost", predicted, step=episode)
        print(
            f"episode {episode}: return {ret:.1f}, predicted cost {predicted:.2f}, final angle "
            f"{angles[-1]:.2f} rad{' (balanced)' if balanced else ''}"
        )
        if balanced:
            solved_at = episode
            break
    seconds = time.perf_counter() - start
    if cfg.plot:
        save_curve(returns, run_dir / "learning_curve.png")
    logger.close()
    verdict = f"solved after {solved_at} episode(s)" if solved_at else "not solved"
    print(f"done: {verdict} (plus the random one) in {seconds:.1f} s; outputs in {run_dir}")
    return {
        "episodes_needed": solved_at,
        "solved": solved_at is not None,
        "returns": returns,
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
