"""AlphaZero on tic-tac-toe: MCTS with PUCT over a small policy-value net, trained by self-play.

One file, top to bottom: the config, the policy-value net, self-play (``games_per_iteration``
games side by side, every move chosen by ``rl_buffers.map.MCTS`` with ``simulations``
simulations per move, all games' leaves expanded in one batched ``TicTacToeEnv.step`` per
simulation), the training step (AlphaZero's loss: value MSE against the game's outcome plus
cross-entropy against the search's visit distribution) and the evaluation: ``eval_games``
games against a uniformly random player, as first and as second player.

Run:  ``uv run python examples/mcts_tictactoe.py`` (8 iterations of 64 games; about 40 s on a
2-core CPU; examples/README.md has the figures). Every config field is a flag: ``--help``
lists them.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``config.json``, ``policy_value.pt`` (the net's state dict) and ``learning_curve.png`` (the loss
per iteration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--simulations 64``)."""

    seed: int = 0
    iterations: int = 8  # rounds of self-play then training
    games_per_iteration: int = 64  # self-play games played side by side (the search's batch)
    simulations: int = 32  # MCTS simulations per self-play move
    eval_simulations: int = 64  # MCTS simulations per move against the random player
    eval_games: int = 100  # games against the random player, as first and as second player
    c_puct: float = 1.5  # PUCT's exploration constant
    dirichlet_alpha: float = 0.5  # root noise of self-play moves
    exploration_fraction: float = 0.25  # the noise's share of the root priors
    temperature_moves: int = 3  # self-play samples its first moves from the visits, then argmax
    train_steps: int = 60  # Adam steps per iteration
    batch_size: int = 256  # positions per Adam step
    replay_iterations: int = 4  # training draws from the positions of the last iterations
    hidden: int = 64  # width of the net's two hidden layers
    lr: float = 3e-3
    weight_decay: float = 1e-4
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to mcts_tictactoe_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "c_puct": _recipe.above(0),
    "dirichlet_alpha": _recipe.above(0),
    "exploration_fraction": _recipe.between(0, 1),
    "weight_decay": _recipe.at_least(0),
    "temperature_moves": _recipe.Rule("an integer from 0 to 9", lambda v, _: 0 <= v <= 9),
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
import torch.nn.functional as F
from tensordict import TensorDictBase

from rl_buffers.map import MCTS, PUCTScore
from rl_envs.native import TicTacToeEnv
from rl_objectives.loggers import get_logger

STATE_KEYS = ("board", "turn", "mask")


class PolicyValueNet(torch.nn.Module):
    """The board seen by the player to move (one-hot: empty, opponent, own) to the prior
    logits of the 9 cells and a value in ``[-1, 1]``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(27, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.ReLU(),
        )
        self.policy = torch.nn.Linear(hidden, 9)
        self.value = torch.nn.Linear(hidden, 1)

    def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cells = F.one_hot(board.flatten(-2).long() + 1, 3).flatten(-2).float()
        h = self.body(cells)
        return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)


def restart_finished(env: TicTacToeEnv, td: TensorDictBase, done: torch.Tensor) -> TensorDictBase:
    """The positions to search: finished games get a fresh board (their result is discarded)."""
    state = td.select(*STATE_KEYS)
    if not bool(done.any()):
        return state
    return torch.where(done, env.reset().select(*STATE_KEYS), state)


def self_play(cfg: Config, env: TicTacToeEnv, net: PolicyValueNet, gen: torch.Generator):
    """Plays ``games_per_iteration`` games; returns the boards, the visit distributions and
    the outcomes (+1 / 0 / -1 for the player to move) of every position played."""

    def evaluate(states: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            return net(states["board"])

    search = MCTS(
        env,
        evaluate,
        num_simulations=cfg.simulations,
        score=PUCTScore(c=cfg.c_puct),
        dirichlet_alpha=cfg.dirichlet_alpha,
        exploration_fraction=cfg.exploration_fraction,
        generator=gen,
    )
    n = cfg.games_per_iteration
    td = env.reset()
    done = torch.zeros(n, dtype=torch.bool)
    winner = torch.full((n,), -1)
    boards, policies, turns, alive = [], [], [], []
    for move in range(9):
        policy = search(restart_finished(env, td, done))["policy"]
        if move < cfg.temperature_moves:
            action = torch.multinomial(policy, 1, generator=gen).squeeze(-1)
        else:
            action = policy.argmax(-1)
        boards.append(td["board"].clone())
        policies.append(policy)
        turns.append(td["turn"].flatten().clone())
        alive.append(~done)
        action = torch.where(done, td["mask"].float().argmax(-1), action)
        nxt = env.step(td.set("action", action))["next"]
        for player in (0, 1):
            won = ~done & (nxt[f"player{player}", "reward"].flatten() > 0)
            winner = torch.where(won, player, winner)
        done = done | nxt["done"].flatten()
        td = nxt.clone()
        if bool(done.all()):
            break
    turns = torch.stack(turns)
    outcome = torch.where(turns == winner, 1.0, -1.0).masked_fill(winner < 0, 0.0)
    keep = torch.stack(alive)
    return torch.stack(boards)[keep], torch.stack(policies)[keep], outcome[keep], winner


def play_random(cfg: Config, net: PolicyValueNet, first: bool) -> dict[str, int]:
    """``eval_games`` games of the search (greedy on its visits) against uniformly random
    legal moves; returns the search's wins, draws and losses."""

    def evaluate(states: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            return net(states["board"])

    n = cfg.eval_games
    env = TicTacToeEnv(batch_size=[n])
    env.set_seed(cfg.seed + 1)
    search = MCTS(
        env, evaluate, num_simulations=cfg.eval_simulations, score=PUCTScore(c=cfg.c_puct)
    )
    me = 0 if first else 1
    td = env.reset()
    done = torch.zeros(n, dtype=torch.bool)
    result = torch.zeros(n)
    for _ in range(9):
        if int(td["turn"][0]) == me:
            action = search(restart_finished(env, td, done))["visits"].argmax(-1)
        else:
            action = env.rand_action(td.clone())["action"]
        action = torch.where(done, td["mask"].float().argmax(-1), action)
        nxt = env.step(td.set("action", action))["next"]
        result = torch.where(~done & (nxt[f"player{me}", "reward"].flatten() > 0), 1.0, result)
        result = torch.where(~done & (nxt[f"player{1 - me}", "reward"].flatten() > 0), -1.0, result)
        done = done | nxt["done"].flatten()
        td = nxt.clone()
        if bool(done.all()):
            break
    return {
        "wins": int((result == 1).sum()),
        "draws": int((result == 0).sum()),
        "losses": int((result == -1).sum()),
    }


def save_curve(losses: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(range(1, len(losses) + 1), losses, marker="o")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss (value MSE + policy cross-entropy)")
    ax.set_title("AlphaZero tic-tac-toe")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, object]:
    """Self-play and training, then the games against the random player; returns the figures
    (``first`` and ``second``: wins/draws/losses, ``positions``, ``seconds``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small batches: threads cost more than they give
    exp_name = cfg.exp_name or f"mcts_tictactoe_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    start = time.perf_counter()
    gen = torch.Generator().manual_seed(cfg.seed)
    net = PolicyValueNet(cfg.hidden)
    optim = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    env = TicTacToeEnv(batch_size=[cfg.games_per_iteration])
    replay, losses, positions = [], [], 0
    for it in range(cfg.iterations):
        boards, policies, outcomes, winner = self_play(cfg, env, net, gen)
        positions += len(boards)
        replay = [*replay, (boards, policies, outcomes)][-cfg.replay_iterations :]
        boards, policies, outcomes = (torch.cat(parts) for parts in zip(*replay, strict=True))
        for _ in range(cfg.train_steps):
            idx = torch.randint(len(boards), (cfg.batch_size,), generator=gen)
            logits, value = net(boards[idx])
            value_loss = F.mse_loss(value, outcomes[idx])
            policy_loss = -(policies[idx] * F.log_softmax(logits, -1)).sum(-1).mean()
            loss = value_loss + policy_loss
            optim.zero_grad()
            loss.backward()
            optim.step()
        losses.append(loss.item())
        logger.log_scalar("train/loss", loss.item(), step=it)
        logger.log_scalar("train/value_loss", value_loss.item(), step=it)
        logger.log_scalar("selfplay/draws", int((winner < 0).sum()), step=it)
        print(
            f"iteration {it}: {len(boards)} positions in replay, loss {loss.item():.3f}; "
            f"self-play wins p0/p1/draws {int((winner == 0).sum())}/{int((winner == 1).sum())}"
            f"/{int((winner < 0).sum())}"
        )
    train_seconds = time.perf_counter() - start
    first = play_random(cfg, net, first=True)
    second = play_random(cfg, net, first=False)
    seconds = time.perf_counter() - start
    for name, figures in (("first", first), ("second", second)):
        for key, value in figures.items():
            logger.log_scalar(f"eval/{name}_{key}", value, step=cfg.iterations)
    torch.save(net.state_dict(), run_dir / "policy_value.pt")
    if cfg.plot:
        save_curve(losses, run_dir / "learning_curve.png")
    logger.close()
    print(
        f"done: {positions} self-play positions in {train_seconds:.1f} s; against a random "
        f"player over {cfg.eval_games} games: as first player {first}, as second player "
        f"{second}; {seconds:.1f} s in all; outputs in {run_dir}"
    )
    return {
        "first": first,
        "second": second,
        "positions": positions,
        "train_seconds": train_seconds,
        "seconds": seconds,
    }


if __name__ == "__main__":
    train(CONFIG)
