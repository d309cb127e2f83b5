"""ACT (action chunking with transformers, Zhao et al. 2023) cloning a Pendulum-v1 swing-up
controller from a D4RL-layout dataset.

One file, top to bottom: the config, the expert and its dataset, the model, the loss, then the
training loop and the evaluation. A scripted expert (energy pumping far from the top, a PD
controller near it, torque noise of std ``noise``) plays ``episodes`` episodes of gymnasium's
Pendulum-v1; the steps are written with h5py in D4RL's layout to
``runs/<exp-name>/d4rl/pendulum-expert-v0.hdf5`` (or ``--dataset FILE`` loads a D4RL-layout
file you have) and read back through ``D4RLExperienceReplay(root=...)``.
``ActionChunkTransform`` cuts each step's next ``chunk_size`` actions (padded at episode
ends); ``ACTModel`` (a transformer CVAE) learns them with ``ACTLoss`` (chunk reconstruction
plus ``kl_weight`` times the KL to the prior). The policy plays the first action of the chunk
it predicts from the prior's mean (``z = 0``) at each step, over ``eval_episodes`` episodes on
other seeds; the expert's and a random policy's returns are printed beside it.

Run:  ``uv run --group dev python examples/act_pendulum.py``; ``--help`` lists every flag.
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
    chunk_size: int = 4  # actions predicted per step
    hidden: int = 32  # transformer width
    kl_weight: float = 10.0  # beta of the CVAE's KL term
    updates: int = 1500  # Adam updates
    batch_size: int = 256
    lr: float = 2e-3
    eval_episodes: int = 10  # Pendulum-v1 episodes played by the cloned policy
    exp_name: str | None = None  # defaults to act_pendulum_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {"noise": _recipe.at_least(0), "kl_weight": _recipe.at_least(0), "lr": _recipe.above(0)}


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
from tensordict.nn import TensorDictModule
from tqdm import tqdm

from rl_envs.transforms import ActionChunkTransform
from rl_objectives import ACTLoss
from rl_objectives.modules import ACTModel


def train(cfg: Config) -> dict[str, float]:
    """Records (or loads) the dataset, trains ACT on it and plays the cloned policy; returns
    ``expert_return``, ``random_return``, ``act_return`` and ``seconds``."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # a small model: threads cost more than they give
    exp_name = cfg.exp_name or f"act_pendulum_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        _recipe.save_config(cfg, run_dir)
        root = run_dir / "d4rl"
        root.mkdir()
        start = time.perf_counter()
        rows, expert_return = expert_rows(root, cfg.dataset, cfg.episodes, cfg.seed, cfg.noise)
    print(f"dataset: {len(rows)} steps, expert return {expert_return:.1f}")

    chunks = ActionChunkTransform(cfg.chunk_size)(rows.unsqueeze(0)).squeeze(0)
    observation = rows["observation"] * OBS_SCALE
    targets = chunks["vla_action", "chunk"] / MAX_TORQUE
    model = ACTModel(
        3, 1, cfg.chunk_size, hidden_dim=cfg.hidden, nheads=2, num_encoder_layers=1,
        num_decoder_layers=1, latent_dim=4, dropout=0.0, dim_feedforward=2 * cfg.hidden,
    )  # fmt: skip
    actor = TensorDictModule(
        model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"]
    )
    loss_fn = ACTLoss(actor, kl_weight=cfg.kl_weight)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=cfg.lr)
    losses: list[float] = []
    for _ in tqdm(range(cfg.updates), unit="updates", dynamic_ncols=True):
        index = torch.randint(len(rows), (cfg.batch_size,))
        batch = TensorDict(observation=observation[index], batch_size=[cfg.batch_size])
        batch["vla_action", "chunk"] = targets[index]
        loss = loss_fn(batch)["loss_act"]
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
    model.eval()

    def first_action(obs: torch.Tensor) -> torch.Tensor:
        return MAX_TORQUE * model(obs * OBS_SCALE)[0][..., 0, :]  # z = 0: the prior's mean

    policy = TensorDictModule(first_action, ["observation"], ["action"])
    act_return = play(policy, cfg.eval_episodes, seed=1000 + cfg.seed)
    baseline = random_return(cfg.eval_episodes, seed=1000 + cfg.seed)
    seconds = time.perf_counter() - start
    torch.save(
        {"model": model.state_dict(), "optimizer": optim.state_dict(),
         "config": dataclasses.asdict(cfg)},
        run_dir / "checkpoint.pt",
    )  # fmt: skip
    if cfg.plot:
        save_curve(losses, run_dir / "learning_curve.png", "ACT")
    print(
        f"ACT: return {act_return:.1f} over {cfg.eval_episodes} episodes (expert "
        f"{expert_return:.1f}, random {baseline:.1f}); {cfg.updates} updates, "
        f"{seconds:.1f} s in all; outputs in {run_dir}"
    )
    return {
        "expert_return": expert_return,
        "random_return": baseline,
        "act_return": act_return,
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
