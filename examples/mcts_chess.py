"""AlphaZero-style self-play on chess with a tiny net: a few minutes on a CPU, honestly weak.

One file, top to bottom: the config, a batched stateless chess env (``BatchedChess``: each
row's position travels in the TensorDict as its FEN's bytes, and each row's move is played by
``rl_envs.ChessEnv(stateful=False)``, so ``rl_buffers.map.MCTS`` can expand the leaves of all
games in one ``step``), the policy-value net (a one-hidden-layer MLP on the 12 piece planes seen
from the side to move, 1968 UCI-move logits and a value), self-play (``games_per_iteration``
games side by side, ``simulations`` PUCT simulations per move, root Dirichlet noise, the first
``temperature_plies`` plies sampled from the visits), AlphaZero's loss (value MSE against the
outcome plus cross-entropy against the visits) and the evaluation: ``eval_games`` games as
White and as Black against a uniformly random mover, for the untrained net and the trained one
under the same search.

What to expect (examples/README.md has the figures): chess is far beyond a few minutes of CPU
self-play. Games are cut at ``max_plies`` plies and count as draws then, so most games against
the random mover are draws; the search finds the mates its shallow tree sees, and the wins are
mostly the search's, with little added by the net's training at this scale.

Run:  ``uv run python examples/mcts_chess.py`` (needs python-chess:
``pip install "rl-envs[chess]"``). Every config field is a flag: ``--help`` lists them.

Writes to ``runs/<exp-name>/``: the logs (CSV by default), ``config.json`` and
``policy_value.pt`` (the net's state dict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--simulations 32``)."""

    seed: int = 0
    iterations: int = 4  # rounds of self-play then training
    games_per_iteration: int = 16  # self-play games played side by side (the search's batch)
    simulations: int = 16  # MCTS simulations per move
    max_plies: int = 60  # a game still going after this many plies is a draw
    eval_games: int = 16  # games against the random mover, as White and as Black
    c_puct: float = 1.5  # PUCT's exploration constant
    dirichlet_alpha: float = 0.3  # root noise of self-play moves
    exploration_fraction: float = 0.25  # the noise's share of the root priors
    temperature_plies: int = 8  # self-play samples its first plies from the visits
    train_steps: int = 40  # Adam steps per iteration
    batch_size: int = 128  # positions per Adam step
    hidden: int = 64  # width of the net's hidden layer
    lr: float = 1e-3
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to mcts_chess_<seed>_<unix time>
    out_dir: str = "runs"


RULES = {
    "c_puct": _recipe.above(0),
    "dirichlet_alpha": _recipe.above(0),
    "exploration_fraction": _recipe.between(0, 1),
    "max_plies": _recipe.above(0),
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
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase

from rl_buffers.map import MCTS, PUCTScore
from rl_core.envs import EnvBase
from rl_core.specs import Categorical, Composite, Unbounded
from rl_envs.native.chess_env import ChessEnv, uci_moves
from rl_objectives.loggers import get_logger

MOVES = uci_moves()
N_MOVES = len(MOVES)  # 1968
FEN_BYTES = 96  # a FEN is at most about 90 characters
PIECES = "PNBRQKpnbrqk"
VALUES = {"p": 1, "n": 3, "b": 3, "r": 5, "q": 9, "k": 0}


def _mirror_move(move: str) -> str:
    """The move seen from the other side of the board (ranks reversed)."""
    flip = {str(r): str(9 - r) for r in range(1, 9)}
    return "".join(flip.get(c, c) for c in move)


# a permutation (its own inverse): move i from White's side is MIRROR[i] from Black's
MIRROR = torch.tensor([MOVES.index(_mirror_move(m)) for m in MOVES])


def fen_to_bytes(fen: str) -> torch.Tensor:
    data = fen.encode()
    out = torch.zeros(FEN_BYTES, dtype=torch.uint8)
    out[: len(data)] = torch.tensor(list(data), dtype=torch.uint8)
    return out


def bytes_to_fen(row: torch.Tensor) -> str:
    return bytes(row[row > 0].tolist()).decode()


class BatchedChess(EnvBase):
    """``B`` chess games as one stateless batched env for the search: the state entries are
    ``"fen"`` (the position's FEN as bytes), ``"turn"`` (0 White, 1 Black), ``"mask"`` (the
    legal UCI moves) and ``"plies"``; each row's move is played by a ``ChessEnv`` with
    ``stateful=False``. ``"reward"`` is the mover's: 1 for a mate, 0 otherwise (draws, and
    games reaching ``max_plies``, end at 0: a zero-sum game for the search)."""

    def __init__(self, batch: int, max_plies: int) -> None:
        super().__init__(batch_size=[batch])
        self.max_plies = max_plies
        self.chess = ChessEnv(stateful=False, include_fen=True)
        state = Composite(
            fen=Unbounded(shape=(batch, FEN_BYTES), dtype=torch.uint8),
            turn=Categorical(2, shape=(batch, 1), dtype=torch.int64),
            mask=Categorical(2, shape=(batch, N_MOVES), dtype=torch.bool),
            plies=Unbounded(shape=(batch, 1), dtype=torch.int64),
            shape=(batch,),
        )
        self.observation_spec = state.clone()
        self.state_spec = state
        self.action_spec = Categorical(N_MOVES, shape=(batch,))
        self.reward_spec = Unbounded(shape=(batch, 1))

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        start = self.chess.reset()
        b = self.batch_size[0]
        return TensorDict(
            fen=fen_to_bytes(start["fen"]).expand(b, -1).clone(),
            turn=torch.zeros(b, 1, dtype=torch.int64),
            mask=start["action_mask"].expand(b, -1).clone(),
            plies=torch.zeros(b, 1, dtype=torch.int64),
            batch_size=self.batch_size,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        rows = []
        for fen, action in zip(tensordict["fen"], tensordict["action"].tolist(), strict=True):
            step = TensorDict(fen=bytes_to_fen(fen), action=torch.tensor(action))
            rows.append(self.chess.step(step)["next"])
        plies = tensordict["plies"] + 1
        cut = (plies >= self.max_plies).flatten()
        done = torch.stack([r["done"] for r in rows]).flatten() | cut
        # a mate is 1 for the mover; ChessEnv's 0.5 for a drawn end becomes 0 (zero-sum)
        reward = torch.stack([r["reward"] for r in rows]).flatten()
        reward = torch.where(reward == 1.0, 1.0, 0.0)
        mask = torch.stack([r["action_mask"] for r in rows])
        return TensorDict(
            fen=torch.stack([fen_to_bytes(r["fen"]) for r in rows]),
            turn=1 - tensordict["turn"],
            mask=mask,
            plies=plies,
            reward=reward.unsqueeze(-1),
            done=done.unsqueeze(-1),
            terminated=done.unsqueeze(-1).clone(),
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed: int | None) -> None:
        pass


def board_planes(fen: str) -> torch.Tensor:
    """The 12 piece planes ``[12 * 64]`` seen by the side to move: its pieces first, its home
    rank first (the board mirrored when Black moves)."""
    placement, side = fen.split()[:2]
    planes = torch.zeros(12, 8, 8)
    for rank_from_top, row in enumerate(placement.split("/")):
        file = 0
        for ch in row:
            if ch.isdigit():
                file += int(ch)
                continue
            rank = 7 - rank_from_top
            piece = PIECES.index(ch)
            if side == "b":  # mirror the ranks and swap the colours
                rank, piece = 7 - rank, (piece + 6) % 12
            planes[piece, rank, file] = 1.0
            file += 1
    return planes.flatten()


def material(fen: str, white: bool) -> int:
    """The material balance (pawn 1, knight and bishop 3, rook 5, queen 9) for one side."""
    total = 0
    for ch in fen.split()[0]:
        if ch.isalpha():
            sign = 1 if ch.isupper() == white else -1
            total += sign * VALUES[ch.lower()]
    return total


class PolicyValueNet(torch.nn.Module):
    """Piece planes (mover's view) -> 1968 move logits (mover's view) and a value in
    ``[-1, 1]`` for the side to move."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(12 * 64, hidden), torch.nn.ReLU())
        self.policy = torch.nn.Linear(hidden, N_MOVES)
        self.value = torch.nn.Linear(hidden, 1)

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(planes)
        return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)


def to_board_frame(policy: torch.Tensor, turn: torch.Tensor) -> torch.Tensor:
    """Move-indexed rows from the mover's frame to the board's (and back: MIRROR is an
    involution); ``turn`` ``[B]``, 1 where Black moves."""
    return torch.where(turn.bool().unsqueeze(-1), policy[:, MIRROR], policy)


def make_evaluator(net: PolicyValueNet):
    def evaluate(states: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        planes = torch.stack([board_planes(bytes_to_fen(f)) for f in states["fen"]])
        with torch.no_grad():
            logits, value = net(planes)
        return to_board_frame(logits, states["turn"].flatten()), value

    return evaluate


def restart_finished(env: BatchedChess, td: TensorDictBase, done: torch.Tensor) -> TensorDictBase:
    """The positions to search: finished games get a fresh board (their moves are discarded)."""
    state = td.select("fen", "turn", "mask", "plies")
    if not bool(done.any()):
        return state
    return torch.where(done, env.reset().select("fen", "turn", "mask", "plies"), state)


def self_play(cfg: Config, net: PolicyValueNet, gen: torch.Generator):
    """Plays ``games_per_iteration`` games; returns the planes, the visit distributions (mover's
    frame) and the outcomes (+1 / 0 / -1 for the side to move) of every position, and the
    results (``winner``: 0 White, 1 Black, -1 draw)."""
    n = cfg.games_per_iteration
    env = BatchedChess(n, cfg.max_plies)
    search = MCTS(
        env,
        make_evaluator(net),
        num_simulations=cfg.simulations,
        score=PUCTScore(c=cfg.c_puct),
        dirichlet_alpha=cfg.dirichlet_alpha,
        exploration_fraction=cfg.exploration_fraction,
        generator=gen,
    )
    td = env.reset()
    done = torch.zeros(n, dtype=torch.bool)
    winner = torch.full((n,), -1)
    planes, policies, turns, alive = [], [], [], []
    for ply in range(cfg.max_plies):
        # finished games play on from a fresh board (a mated side has no legal move); their
        # moves are discarded
        state = restart_finished(env, td, done)
        policy = search(state)["policy"]
        if ply < cfg.temperature_plies:
            action = torch.multinomial(policy, 1, generator=gen).squeeze(-1)
        else:
            action = policy.argmax(-1)
        turn = td["turn"].flatten().clone()
        planes.append(torch.stack([board_planes(bytes_to_fen(f)) for f in td["fen"]]))
        policies.append(to_board_frame(policy, turn))
        turns.append(turn)
        alive.append(~done)
        nxt = env.step(state.set("action", action))["next"]
        mated = ~done & (nxt["reward"].flatten() > 0)
        winner = torch.where(mated, turn, winner)
        done = done | nxt["done"].flatten()
        td = nxt.select("fen", "turn", "mask", "plies").clone()
        if bool(done.all()):
            break
    turns = torch.stack(turns)
    outcome = torch.where(turns == winner, 1.0, -1.0).masked_fill(winner < 0, 0.0)
    keep = torch.stack(alive)
    return torch.stack(planes)[keep], torch.stack(policies)[keep], outcome[keep], winner


def play_random(cfg: Config, net: PolicyValueNet, white: bool) -> dict[str, float]:
    """``eval_games`` games of the search (greedy on its visits) against uniformly random legal
    moves; returns the search's wins, draws (including games cut at ``max_plies``) and
    losses, and its mean material balance at the end of the games."""
    n = cfg.eval_games
    env = BatchedChess(n, cfg.max_plies)
    search = MCTS(
        env, make_evaluator(net), num_simulations=cfg.simulations, score=PUCTScore(c=cfg.c_puct)
    )
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    me = 0 if white else 1
    td = env.reset()
    done = torch.zeros(n, dtype=torch.bool)
    result = torch.zeros(n)
    final = [""] * n
    for ply in range(cfg.max_plies):
        state = restart_finished(env, td, done)  # finished games play on, discarded
        mover = ply % 2  # the games in play move in step, White first
        if mover == me:
            action = search(state)["visits"].argmax(-1)
        else:
            noise = torch.rand(state["mask"].shape, generator=gen)
            action = noise.masked_fill(~state["mask"], -1.0).argmax(-1)
        nxt = env.step(state.set("action", action))["next"]
        mated = ~done & (nxt["reward"].flatten() > 0)
        result = torch.where(mated, 1.0 if mover == me else -1.0, result)
        for i in torch.nonzero(~done & nxt["done"].flatten()).flatten().tolist():
            final[i] = bytes_to_fen(nxt["fen"][i])
        done = done | nxt["done"].flatten()
        td = nxt.select("fen", "turn", "mask", "plies").clone()
        if bool(done.all()):
            break
    return {
        "wins": int((result == 1).sum()),
        "draws": int((result == 0).sum()),
        "losses": int((result == -1).sum()),
        "material": sum(material(f, white) for f in final) / n,
    }


def evaluate_against_random(cfg: Config, net: PolicyValueNet) -> dict[str, dict[str, float]]:
    return {"white": play_random(cfg, net, True), "black": play_random(cfg, net, False)}


def train(cfg: Config) -> dict[str, object]:
    """The untrained net's games against the random mover, self-play and training, then the
    trained net's; returns the figures (``before``/``after``: wins/draws/losses as White and
    as Black, ``positions``, ``seconds``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small batches: threads cost more than they give
    exp_name = cfg.exp_name or f"mcts_chess_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    start = time.perf_counter()
    gen = torch.Generator().manual_seed(cfg.seed)
    net = PolicyValueNet(cfg.hidden)
    before = evaluate_against_random(cfg, net)
    print(f"untrained net under the search, against the random mover: {before}")
    optim = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    replay, positions = [], 0
    for it in range(cfg.iterations):
        planes, policies, outcomes, winner = self_play(cfg, net, gen)
        positions += len(planes)
        replay = [*replay, (planes, policies, outcomes)][-2:]
        planes, policies, outcomes = (torch.cat(parts) for parts in zip(*replay, strict=True))
        for _ in range(cfg.train_steps):
            idx = torch.randint(len(planes), (cfg.batch_size,), generator=gen)
            logits, value = net(planes[idx])
            value_loss = F.mse_loss(value, outcomes[idx])
            policy_loss = -(policies[idx] * F.log_softmax(logits, -1)).sum(-1).mean()
            loss = value_loss + policy_loss
            optim.zero_grad()
            loss.backward()
            optim.step()
        logger.log_scalar("train/loss", loss.item(), step=it)
        decisive = int((winner >= 0).sum())
        logger.log_scalar("selfplay/decisive_games", decisive, step=it)
        print(
            f"iteration {it}: {len(planes)} positions in replay, loss {loss.item():.3f} (value "
            f"{value_loss.item():.3f}); self-play: {decisive} of {len(winner)} games decisive"
        )
    after = evaluate_against_random(cfg, net)
    seconds = time.perf_counter() - start
    for name, figures in (("before", before), ("after", after)):
        for colour, wdl in figures.items():
            for key, value in wdl.items():
                logger.log_scalar(f"eval/{name}_{colour}_{key}", value, step=cfg.iterations)
    torch.save(net.state_dict(), run_dir / "policy_value.pt")
    logger.close()
    print(
        f"done: {positions} self-play positions; against a random mover over {cfg.eval_games} "
        f"games per colour (cut at {cfg.max_plies} plies): untrained {before}, trained {after}; "
        f"{seconds:.1f} s in all; outputs in {run_dir}"
    )
    return {"before": before, "after": after, "positions": positions, "seconds": seconds}


if __name__ == "__main__":
    train(CONFIG)
