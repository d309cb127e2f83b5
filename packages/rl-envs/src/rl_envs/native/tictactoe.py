"""TicTacToeEnv: two-player tic-tac-toe, batched and stateless (the board travels in the TensorDict)."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core._accel.td_access import build_tensordict
from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, TERMINATED, TRUNCATED
from rl_core.specs import Categorical, Composite, Unbounded

BOARD = "board"
TURN = "turn"
MASK = "mask"
PLAYER_REWARDS = (("player0", "reward"), ("player1", "reward"))

# the eight lines of three cells, as flat cell indices
LINES = torch.tensor(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]]
)


def tictactoe_step(
    board: torch.Tensor, action: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One move on boards seen by the player to move.

    A board holds ``1`` for the stones of the player to move, ``0`` for the opponent's and
    ``-1`` for an empty cell; after the move the board is turned to the next player's view.

    Args:
        board: ``(..., 3, 3)`` int boards.
        action: ``(...)`` cell indices in ``[0, 9)`` (row-major), each on an empty cell.

    Returns:
        ``(next_board, won, full)``: the next player's view ``(..., 3, 3)``, and ``(..., 1)``
        bools: the mover completed a line; the board is full.

    Examples:
        >>> import torch
        >>> board = torch.tensor([[1, 1, -1], [0, 0, -1], [-1, -1, -1]])
        >>> nxt, won, full = tictactoe_step(board, torch.tensor(2))
        >>> nxt[0].tolist(), bool(won), bool(full)
        ([0, 0, 0], True, False)
    """
    flat = board.flatten(-2).clone()
    flat.scatter_(-1, action.unsqueeze(-1).long(), 1)
    lines = flat[..., LINES.to(flat.device)]  # (..., 8, 3)
    won = (lines == 1).all(-1).any(-1, keepdim=True)
    full = (flat != -1).all(-1, keepdim=True)
    turned = torch.where(flat == -1, flat, 1 - flat)
    return turned.unflatten(-1, (3, 3)), won, full


def _outcome(
    board: torch.Tensor, turn: torch.Tensor, action: torch.Tensor
) -> dict[object, torch.Tensor]:
    """The entries of the step that plays ``action`` for player ``turn`` on ``board``."""
    nxt, won, full = tictactoe_step(board, action)
    done = won | full
    return {
        BOARD: nxt.to(torch.int32),
        TURN: 1 - turn,
        MASK: nxt.flatten(-2) == -1,
        PLAYER_REWARDS[0]: (won & (turn == 0)).float(),
        PLAYER_REWARDS[1]: (won & (turn == 1)).float(),
        DONE: done,
        TERMINATED: done.clone(),
        TRUNCATED: torch.zeros_like(done),
    }


class TicTacToeEnv(EnvBase):
    """Tic-tac-toe for two players (TorchRL's ``TicTacToeEnv`` keys and specs), batched.

    The env is stateless: the entries ``"board"`` (``(*batch, 3, 3)`` int32: 1 = the stones of
    the player to move, 0 = the opponent's, -1 = empty), ``"turn"`` (``(*batch, 1)`` int32: the
    player to move, 0 or 1) and ``"mask"`` (``(*batch, 9)`` bool: the empty cells) are read
    from the input of every step, so a search can step any position. The action is the cell,
    ``Categorical(9)`` of shape ``batch`` (row-major). A completed line gives its player
    ``("playerK", "reward") = 1`` (the other player's reward is 0) and ends the game; a
    full board without a line ends it in a draw. Player 0 moves first.

    Differences with TorchRL's: the env has a fixed ``batch_size`` (TorchRL's takes any batch
    at reset); a move on an occupied cell raises instead of overwriting it.

    Keyword Args:
        single_player: player 1 plays uniformly random legal moves inside ``step`` (seeded by
            :meth:`set_seed`), so each step is one move of player 0 and its answer.
        batch_size: the batch shape.
        device: where tensors live.

    Examples:
        >>> import torch
        >>> env = TicTacToeEnv(batch_size=[2])
        >>> td = env.reset()
        >>> td["board"].shape, td["turn"].flatten().tolist()
        (torch.Size([2, 3, 3]), [0, 0])
        >>> for cell in (0, 3, 1, 4, 2):  # player 0 fills the top row
        ...     td = env.step(td.set("action", torch.tensor([cell, cell])))["next"]
        >>> td["player0", "reward"].flatten().tolist(), td["done"].flatten().tolist()
        ([1.0, 1.0], [True, True])
    """

    def __init__(
        self,
        *,
        single_player: bool = False,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        device: torch.device | str | int | None = None,
    ) -> None:
        if not isinstance(single_player, bool):
            raise TypeError(
                f"TicTacToeEnv: expected single_player to be a bool, got "
                f"{type(single_player).__name__}."
            )
        super().__init__(batch_size=batch_size, device=device)
        self.single_player = single_player
        batch = tuple(self.batch_size)
        dev = self.device
        state = Composite(
            {
                BOARD: Unbounded(shape=(*batch, 3, 3), dtype=torch.int32, device=dev),
                TURN: Categorical(2, shape=(*batch, 1), dtype=torch.int32, device=dev),
                MASK: Categorical(2, shape=(*batch, 9), dtype=torch.bool, device=dev),
            },
            shape=batch,
            device=dev,
        )
        self.observation_spec = state.clone()
        self.state_spec = state
        self.action_spec = Categorical(9, shape=batch, device=dev)
        self.reward_spec = Composite(
            {key: Unbounded(shape=(*batch, 1), device=dev) for key in PLAYER_REWARDS},
            shape=batch,
            device=dev,
        )
        self.__dict__["_generator"] = torch.Generator(device=dev or "cpu")

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        batch = tuple(self.batch_size)
        dev = self.device
        return build_tensordict(
            {
                BOARD: torch.full((*batch, 3, 3), -1, dtype=torch.int32, device=dev),
                TURN: torch.zeros((*batch, 1), dtype=torch.int32, device=dev),
                MASK: torch.ones((*batch, 9), dtype=torch.bool, device=dev),
            },
            self.batch_size,
            dev,
        )

    def _read_state(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        board, turn = tensordict.get(BOARD, None), tensordict.get(TURN, None)
        if board is None or turn is None:
            raise KeyError(
                f"TicTacToeEnv.step: expected the entries 'board' and 'turn' in the "
                f"TensorDict, got keys {sorted(map(str, tensordict.keys()))}. They come from "
                f"reset(); keep them in the TensorDict passed to step."
            )
        return board, turn

    def _move(
        self, board: torch.Tensor, turn: torch.Tensor, action: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        occupied = board.flatten(-2).gather(-1, action.long().unsqueeze(-1)).squeeze(-1) != -1
        if bool(occupied.any()):
            where = torch.nonzero(occupied).tolist()
            raise ValueError(
                f"TicTacToeEnv.step: the action's cell is occupied in sub-env(s) {where} "
                f"(actions {action[occupied].tolist()}). Pick a cell whose 'mask' entry is True."
            )
        return _outcome(board, turn, action)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        board, turn = self._read_state(tensordict)
        action = tensordict.get(ACTION)
        if action.is_floating_point() or bool(((action < 0) | (action > 8)).any()):
            raise ValueError(
                f"TicTacToeEnv.step: expected integer actions in [0, 9), got {action.tolist()}."
            )
        out = self._move(board, turn, action)
        if self.single_player:
            answer = (~out[DONE] & (out[TURN] == 1)).squeeze(-1)
            if bool(answer.any()):
                out = self._answer(out, answer)
        entries = {key: value for key, value in out.items() if key not in PLAYER_REWARDS}
        for player, reward in PLAYER_REWARDS:
            entries[player] = build_tensordict(
                {reward: out[player, reward]}, self.batch_size, self.device
            )
        return build_tensordict(entries, self.batch_size, self.device)

    def _answer(self, out: dict[str, torch.Tensor], answer: torch.Tensor) -> dict:
        """Player 1's random legal reply where ``answer``; the rewards of both moves add."""
        noise = torch.rand(out[MASK].shape, generator=self._generator, device=answer.device)
        action = torch.where(out[MASK], noise, -1.0).argmax(-1)
        # computed for every sub-env and kept where ``answer``: finished boards may pick an
        # occupied cell, so no occupancy check here
        reply = _outcome(out[BOARD], out[TURN], action)
        merged = {}
        for key, value in out.items():
            pick = answer.reshape(*answer.shape, *[1] * (value.dim() - answer.dim()))
            if key in PLAYER_REWARDS:
                merged[key] = value + torch.where(pick, reply[key], torch.zeros_like(value))
            else:
                merged[key] = torch.where(pick, reply[key], value)
        return merged

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A uniformly random legal cell (the input's ``"mask"``) for each sub-env."""
        if tensordict is None or tensordict.get(MASK, None) is None:
            return super().rand_action(tensordict)
        mask = tensordict.get(MASK)
        noise = torch.rand(mask.shape, generator=self._generator, device=mask.device)
        return tensordict.set(ACTION, torch.where(mask, noise, -1.0).argmax(-1))

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._generator.manual_seed(seed)


__all__ = ["TicTacToeEnv", "tictactoe_step"]
