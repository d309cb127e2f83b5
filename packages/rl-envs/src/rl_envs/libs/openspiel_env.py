"""OpenSpielEnv: an OpenSpiel game loaded by name and wrapped."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from rl_envs.libs.group_map import MarlGroupMapType
from rl_envs.libs.openspiel import OpenSpielWrapper, import_pyspiel


class OpenSpielEnv(OpenSpielWrapper):
    """Loads an OpenSpiel game (``pyspiel.load_game``) and wraps its initial state.

    See :class:`OpenSpielWrapper` for the groups, keys, chance nodes and action masks.

    Args:
        game_string: the game, with optional parameters (``"tic_tac_toe"``,
            ``"kuhn_poker(players=3)"``).

    Keyword Args:
        group_map, categorical_actions, return_state, chance_sampler, device: as in
            :class:`OpenSpielWrapper`.
        parameters: game parameters as a dict (``{"players": 3}``), instead of in the string.

    Raises:
        ImportError: OpenSpiel is not installed.
        ValueError: an unknown game.

    Examples:
        >>> from rl_envs.libs import OpenSpielEnv
        >>> env = OpenSpielEnv("kuhn_poker", categorical_actions=True)
        >>> env.set_seed(0)
        1
        >>> traj = env.rollout(10)
        >>> bool(traj["next", "done"][-1]), traj["next", "agents", "reward"][-1].sum().item()
        (True, 0.0)
    """

    def __init__(
        self,
        game_string: str,
        *,
        group_map: MarlGroupMapType
        | Mapping[str, Sequence[str]] = MarlGroupMapType.ALL_IN_ONE_GROUP,
        categorical_actions: bool = False,
        return_state: bool = False,
        chance_sampler: Callable[[list[int], list[float]], int] | None = None,
        device: torch.device | str | int | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        who = type(self).__name__
        pyspiel = import_pyspiel(who)
        if not isinstance(game_string, str) or not game_string:
            raise TypeError(
                f"{who}: expected a game name such as 'tic_tac_toe', got {game_string!r}."
            )
        name = game_string.split("(", 1)[0]
        if name not in pyspiel.registered_names():
            raise ValueError(
                f"{who}: unknown game {name!r}; OpenSpielEnv.available_envs() lists the "
                f"{len(pyspiel.registered_names())} registered games (e.g. 'tic_tac_toe', "
                f"'kuhn_poker', 'leduc_poker')."
            )
        if parameters:
            game = pyspiel.load_game(game_string, dict(parameters))
        else:
            game = pyspiel.load_game(game_string)
        super().__init__(
            game.new_initial_state(),
            group_map=group_map,
            categorical_actions=categorical_actions,
            return_state=return_state,
            chance_sampler=chance_sampler,
            device=device,
        )
        self.game_string = game_string

    @staticmethod
    def available_envs() -> list[str]:
        """The names of OpenSpiel's registered games."""
        return list(import_pyspiel("OpenSpielEnv").registered_names())


__all__ = ["OpenSpielEnv"]
