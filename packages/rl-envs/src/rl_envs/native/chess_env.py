"""ChessEnv: chess through python-chess, with TorchRL's keys (turn, action mask, fen/san/pgn)."""

from __future__ import annotations

import io
from functools import cache
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, REWARD, TERMINATED
from rl_core.specs import Binary, Bounded, Categorical, Composite, NonTensor, Unbounded

ACTION_MASK = "action_mask"
MAX_LEGAL_MOVES = 218  # the most legal moves of any chess position
PROMOTIONS = "nbrq"


def _chess() -> Any:
    try:
        import chess
        import chess.pgn
    except ImportError as err:
        raise ImportError('ChessEnv needs python-chess: pip install "rl-envs[chess]"') from err
    return chess


@cache
def uci_moves() -> tuple[str, ...]:
    """Every move a chess piece can ever make, in UCI (the action space, 1968 moves).

    Queen-line and knight moves between squares (a queen's line covers the king's, rooks',
    bishops' and pawns' plain moves), then the promotions from the seventh rank to the eighth
    and from the second to the first (``e7e8q``, ``d2c1n``, ...).

    Examples:
        >>> moves = uci_moves()
        >>> len(moves), moves.index("e2e4") >= 0, "e7e8q" in moves
        (1968, True, True)
    """
    files = "abcdefgh"
    moves = []
    for frm in range(64):
        f0, r0 = frm % 8, frm // 8
        for to in range(64):
            if to == frm:
                continue
            df, dr = to % 8 - f0, to // 8 - r0
            line = df == 0 or dr == 0 or abs(df) == abs(dr)
            knight = {abs(df), abs(dr)} == {1, 2}
            if line or knight:
                moves.append(f"{files[f0]}{r0 + 1}{files[to % 8]}{to // 8 + 1}")
    for src, dst in (("7", "8"), ("2", "1")):
        for f0 in range(8):
            for df in (-1, 0, 1):
                if 0 <= f0 + df < 8:
                    for piece in PROMOTIONS:
                        moves.append(f"{files[f0]}{src}{files[f0 + df]}{dst}{piece}")
    return tuple(moves)


@cache
def _move_index() -> dict[str, int]:
    return {move: i for i, move in enumerate(uci_moves())}


def _uci(move: Any) -> str:
    # a queen promotion is a move of its own ("e7e8q"): the plain "e7e8" is a queen-line move
    return move.uci()


class ChessEnv(EnvBase):
    """Chess for two players through python-chess, with TorchRL's ``ChessEnv`` keys.

    The action is one of the 1968 UCI moves of :func:`uci_moves` (``Categorical(1968)``, shape
    ``()``); ``"action_mask"`` marks the legal ones (a move outside it raises). ``"turn"`` is True
    when White moves. The reward is the mover's: 1 for a checkmate, 0.5 when the game ends
    drawn (stalemate, insufficient material, the fifty-move rule, repetition), 0 otherwise.
    ``include_fen``/``include_san``/``include_pgn`` add the position's FEN, the last move's SAN
    (``"<start>"`` at the start) and the game's PGN as non-tensor entries,
    ``include_legal_moves`` the legal moves' indices padded to 218 with 1968. With
    ``stateful=False`` each step reads the board from the input's ``"fen"`` (or ``"pgn"``), so a
    search can step any position; ``reset(td)`` with a ``"fen"`` entry starts from it.

    Differences with TorchRL's: the action space is UCI moves (TorchRL's indexes 29275 SAN
    strings); ``include_hash`` is refused (append ``rl_envs.Hash`` to the env instead: an env
    here does not turn itself into a ``TransformedEnv``); ``pixels`` is not built.

    Keyword Args:
        stateful: keep the board in the env (True) or in the TensorDict (``"fen"``/``"pgn"``).
        include_san, include_fen, include_pgn, include_legal_moves: the entries above.
        include_hash, include_hash_inv: TorchRL's; only False.
        mask_actions: write ``"action_mask"`` and keep the action spec's mask up to date.
        pixels: TorchRL's board image; only False.

    Raises:
        ImportError: python-chess is not installed.
        ValueError: ``stateful=False`` without ``include_fen`` or ``include_pgn``, or
            ``include_hash``/``pixels`` set.

    Examples:
        >>> import torch
        >>> env = ChessEnv(include_fen=True, include_san=True)
        >>> td = env.reset()
        >>> int(td["action_mask"].sum()), bool(td["turn"])
        (20, True)
        >>> td = env.step(td.set("action", torch.tensor(uci_moves().index("e2e4"))))["next"]
        >>> td["san"], td["fen"].split()[0]
        ('e4', 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR')
    """

    def __init__(
        self,
        *,
        stateful: bool = True,
        include_san: bool = False,
        include_fen: bool = False,
        include_pgn: bool = False,
        include_legal_moves: bool = False,
        include_hash: bool = False,
        include_hash_inv: bool = False,
        mask_actions: bool = True,
        pixels: bool = False,
    ) -> None:
        chess = _chess()
        if include_hash or include_hash_inv:
            raise ValueError(
                "ChessEnv: include_hash is not supported: append the transform yourself, e.g. "
                "ChessEnv(include_fen=True).append_transform(Hash(in_keys=['fen'], "
                "out_keys=['fen_hash']))."
            )
        if pixels:
            raise ValueError("ChessEnv: pixels=True (board images) is not built; pass False.")
        if not stateful and not (include_fen or include_pgn):
            raise ValueError(
                "ChessEnv: stateful=False reads the board from the TensorDict: set "
                "include_fen=True or include_pgn=True."
            )
        super().__init__()
        self.stateful = stateful
        self.include_san = include_san
        self.include_fen = include_fen
        self.include_pgn = include_pgn
        self.include_legal_moves = include_legal_moves
        self.mask_actions = mask_actions
        n = len(uci_moves())
        observation = Composite(turn=Categorical(2, shape=(), dtype=torch.bool))
        if include_fen:
            observation["fen"] = NonTensor(example_data=chess.STARTING_FEN)
        if include_san:
            observation["san"] = NonTensor(example_data="<start>")
        if include_pgn:
            observation["pgn"] = NonTensor(example_data="*")
        if include_legal_moves:
            observation["legal_moves"] = Bounded(0, n, shape=(MAX_LEGAL_MOVES,), dtype=torch.int64)
        self.state_spec = observation.clone()
        if mask_actions:
            observation[ACTION_MASK] = Binary(n, dtype=torch.bool)
        self.observation_spec = observation
        self.action_spec = Categorical(n, shape=())
        self.reward_spec = Unbounded(shape=(1,))
        self.__dict__["board"] = chess.Board()

    # ------------------------------------------------------------------ board <-> entries
    def _board_from(self, tensordict: TensorDictBase | None) -> Any:
        chess = _chess()
        if self.stateful or tensordict is None:
            return self.board
        if self.include_fen and tensordict.get("fen", None) is not None:
            return chess.Board(_text(tensordict.get("fen")))
        pgn = tensordict.get("pgn", None) if self.include_pgn else None
        if pgn is None:
            raise KeyError(
                "ChessEnv.step: stateful=False reads the board from the 'fen' (or 'pgn') "
                f"entry, got keys {sorted(map(str, tensordict.keys()))}."
            )
        game = chess.pgn.read_game(io.StringIO(_text(pgn)))
        board = game.board()
        for move in game.mainline_moves():
            board.push(move)
        return board

    def legal_mask(self, board: Any) -> torch.Tensor:
        """The ``(1968,)`` bool mask of ``board``'s legal moves."""
        index = _move_index()
        mask = torch.zeros(len(index), dtype=torch.bool)
        mask[[index[_uci(m)] for m in board.legal_moves]] = True
        return mask

    def _entries(self, board: Any, san: str | None) -> dict[str, Any]:
        chess = _chess()
        out: dict[str, Any] = {"turn": torch.tensor(board.turn == chess.WHITE)}
        mask = self.legal_mask(board)
        if self.include_fen:
            out["fen"] = board.fen()
        if self.include_san:
            out["san"] = san if san is not None else "<start>"
        if self.include_pgn:
            out["pgn"] = str(chess.pgn.Game.from_board(board))
        if self.include_legal_moves:
            legal = torch.nonzero(mask).flatten()
            padded = torch.full((MAX_LEGAL_MOVES,), len(mask), dtype=torch.int64)
            padded[: legal.numel()] = legal
            out["legal_moves"] = padded
        if self.mask_actions:
            out[ACTION_MASK] = mask
            if self.stateful:  # (a finished game has no legal move: no mask then)
                self.action_spec.update_mask(mask if bool(mask.any()) else None)
        return out

    @staticmethod
    def _done(board: Any) -> bool:
        return board.is_game_over() or board.can_claim_fifty_moves()

    # ------------------------------------------------------------------ contract
    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        chess = _chess()
        fen = None
        if tensordict is not None and self.include_fen:
            fen = tensordict.get("fen", None)
        board = chess.Board(_text(fen)) if fen is not None else chess.Board()
        if self._done(board):
            raise ValueError(f"ChessEnv.reset: the position {board.fen()!r} is already over.")
        if self.stateful:
            self.__dict__["board"] = board
        return TensorDict(self._entries(board, None))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        board = self._board_from(tensordict)
        if not self.stateful:
            board = board.copy()
        action = int(tensordict.get(ACTION))
        moves = uci_moves()
        if not 0 <= action < len(moves):
            raise ValueError(
                f"ChessEnv.step: expected an action in [0, {len(moves)}), got {action}."
            )
        move = _chess().Move.from_uci(moves[action])
        if move not in board.legal_moves:
            raise ValueError(
                f"ChessEnv.step: the move {moves[action]} (action {action}) is illegal in "
                f"{board.fen()!r}. Pick an action whose 'action_mask' entry is True."
            )
        san = board.san(move)
        board.push(move)
        done = self._done(board)
        reward = 1.0 if board.is_checkmate() else (0.5 if done else 0.0)
        out = self._entries(board, san)
        out[REWARD] = torch.tensor([reward])
        out[DONE] = torch.tensor([done])
        out[TERMINATED] = torch.tensor([done])
        return TensorDict(out)

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A uniformly random legal move (from the input's ``"action_mask"`` or the board)."""
        if tensordict is None:
            tensordict = TensorDict()
        mask = tensordict.get(ACTION_MASK, None)
        if mask is None:
            mask = self.legal_mask(self._board_from(tensordict))
        legal = torch.nonzero(mask).flatten()
        pick = legal[torch.randint(legal.numel(), (), generator=self._generator)]
        return tensordict.set(ACTION, pick)

    @property
    def _generator(self) -> torch.Generator:
        gen = self.__dict__.get("_gen")
        if gen is None:
            gen = self.__dict__["_gen"] = torch.Generator()
        return gen

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._generator.manual_seed(seed)

    def get_legal_moves(self, tensordict: TensorDictBase | None = None, uci: bool = False) -> list:
        """The legal moves of the position (the env's, or the input's with ``stateful=False``),
        in SAN, or UCI with ``uci=True``."""
        board = self._board_from(tensordict)
        return [m.uci() if uci else board.san(m) for m in board.legal_moves]


def _text(value: Any) -> str:
    data = getattr(value, "data", value)
    if isinstance(data, list):  # a one-element NonTensorStack
        data = data[0]
    return str(data)


__all__ = ["ChessEnv", "uci_moves"]
