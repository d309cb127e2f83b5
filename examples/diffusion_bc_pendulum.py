"""Diffusion behaviour cloning (diffusion policy, Chi et al. 2023) of a Pendulum-v1 swing-up
controller from a D4RL-layout dataset.

One file, top to bottom: the config, the expert and its dataset, the model, the loss, then the
training loop and the evaluation. A scripted expert (energy pumping far from the top, a PD
controller near it, torque noise of std ``noise``) plays ``episodes`` episodes of gymnasium's
Pendulum-v1; the steps are written with h5py in D4RL's layout to
``runs/<exp-name>/d4rl/pendulum-expert-v0.hdf5`` (or ``--dataset FILE`` loads a D4RL-layout
file you have) and read back through ``D4RLExperienceReplay(root=...)``. A
``DiffusionActor`` (a noise-prediction MLP over ``num_steps`` DDPM steps) learns the expert's
actions with ``DiffusionBCLoss`` (the mean squared error between the noise added to an action
and the noise predicted); the policy samples its action with ``sampling_steps``
deterministic DDIM steps, over ``eval_episodes`` episodes on other seeds; the expert's and a
random policy's returns are printed beside it.

Run:  ``uv run --group dev python examples/diffusion_bc_pendulum.py``; ``--help`` lists every
flag.
Writes to ``runs/<exp-name>/``: the dataset, ``config.json``, ``checkpoint.pt`` and
``learning_curve.png`` (the loss against updates).
"""

from __future__ import annotations

from dataclasses import dataclass

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--updates 3000``)."""

    seed: int = 0
    episodes: int = 30  # expert episodes of 200 steps recorded into the dataset
    noise: float = 0.2  # std of the torque noise added to the expert's actions
    dataset: str | None = None  # a D4RL-layout HDF5 file to load instead of recording one
    num_steps: int = 50  # DDPM noise steps (beta from 1e-4 to beta_end)
    beta_end: float = 0.2
    sampling_steps: int = 10  # DDIM steps when acting
    updates: int = 6000  # Adam updates
    batch_size: int = 256
    lr: float = 2e-3
    eval_episodes: int = 10  # Pendulum-v1 episodes played by the cloned policy
    exp_name: str | None = None  # defaults to diffusion_bc_pendulum_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "noise": _recipe.at_least(0),
    "beta_end": _recipe.between(0, 1, open_low=True, open_high=True),
    "sampling_steps": _recipe.count_at_most("num_steps"),
    "lr": _recipe.above(0),
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

import torch
from _pendulum_expert import MAX_TORQUE, OBS_SCALE, expert_rows, play, random_return, save_curve
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from tqdm import tqdm

from rl_objectives import DiffusionBCLoss
from rl_objectives.modules import DiffusionActor


def train(cfg: Config) -> dict[str, float]:
    """Records (or loads) the dataset, trains diffusion BC on it and plays the cloned policy;
    returns ``expert_return``, ``random_return``, ``diffusion_return`` and ``seconds``."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # a small model: threads cost more than they give
    exp_name = cfg.exp_name or f"diffusion_bc_pendulum_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        _recipe.save_config(cfg, run_dir)
        root = run_dir / "d4rl"
        root.mkdir()
        start = time.perf_counter()
        rows, expert_return = expert_rows(root, cfg.dataset, cfg.episodes, cfg.seed, cfg.noise)
    print(f"dataset: {len(rows)} steps, expert return {expert_return:.1f}")

    observation = rows["observation"] * OBS_SCALE
    action = rows["action"] / MAX_TORQUE
    actor = DiffusionActor(
        1, 3, num_steps=cfg.num_steps, beta_end=cfg.beta_end, sampler="ddim",
        sampling_steps=cfg.sampling_steps, in_keys=["obs_scaled"], out_keys=["action_scaled"],
    )  # fmt: skip
    loss_fn = DiffusionBCLoss(actor).set_keys(observation="obs_scaled", action="action_scaled")
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr)
    losses: list[float] = []
    for _ in tqdm(range(cfg.updates), unit="updates", dynamic_ncols=True):
        index = torch.randint(len(rows), (cfg.batch_size,))
        batch = TensorDict(
            obs_scaled=observation[index], action_scaled=action[index],
            batch_size=[cfg.batch_size],
        )  # fmt: skip
        loss = loss_fn(batch)["loss_diffusion_bc"]
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
    policy = TensorDictSequential(
        TensorDictModule(lambda obs: obs * OBS_SCALE, ["observation"], ["obs_scaled"]),
        actor,
        TensorDictModule(
            lambda a: (MAX_TORQUE * a).clamp(-MAX_TORQUE, MAX_TORQUE), ["action_scaled"],
            ["action"],
        ),
    )  # fmt: skip
    diffusion_return = play(policy, cfg.eval_episodes, seed=1000 + cfg.seed)
    baseline = random_return(cfg.eval_episodes, seed=1000 + cfg.seed)
    seconds = time.perf_counter() - start
    torch.save(
        {"actor": actor.state_dict(), "optimizer": optim.state_dict(),
         "config": dataclasses.asdict(cfg)},
        run_dir / "checkpoint.pt",
    )  # fmt: skip
    if cfg.plot:
        save_curve(losses, run_dir / "learning_curve.png", "Diffusion BC")
    print(
        f"diffusion BC: return {diffusion_return:.1f} over {cfg.eval_episodes} episodes (expert "
        f"{expert_return:.1f}, random {baseline:.1f}); {cfg.updates} updates, "
        f"{seconds:.1f} s in all; outputs in {run_dir}"
    )
    return {
        "expert_return": expert_return,
        "random_return": baseline,
        "diffusion_return": diffusion_return,
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
