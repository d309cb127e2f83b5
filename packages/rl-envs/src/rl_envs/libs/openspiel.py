"""OpenSpielWrapper: an OpenSpiel game (turn-based or simultaneous) as a multi-agent EnvBase."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, ACTION_MASK, DONE, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Categorical, Composite, NonTensor, OneHot, Unbounded
from rl_envs.libs.group_map import MarlGroupMapType, check_marl_grouping

INFORMATION_STATE = "information_state"
CURRENT_PLAYER = "current_player"
STATE = "state"
_INSTALL = 'pip install "rl-envs[open-spiel]"'


def import_pyspiel(who: str) -> Any:
    try:
        import pyspiel
    except ImportError as err:
        raise ImportError(f"{who} needs OpenSpiel: {_INSTALL}") from err
    return pyspiel


class _PyspielModule:
    """``OpenSpielWrapper.lib``: the ``pyspiel`` module, imported when read (TorchRL's
    wrappers expose their library as ``lib``)."""

    def __get__(self, instance: Any, owner: type) -> Any:
        return import_pyspiel(f"{owner.__name__}.lib")


class OpenSpielWrapper(EnvBase):
    """Wraps an OpenSpiel game state (``pyspiel.State``) as a multi-agent env.

    Players are named ``player_0``, ``player_1``, ... and grouped by ``group_map``
    (default: all under ``"agents"``). Each group is a TensorDict ``[n_agents]`` with, per
    player, ``"observation"`` (the game's observation tensor, float32, in its shape) and/or
    ``"information_state"`` (whichever the game provides), ``"action_mask"`` ``[n, A]`` (the
    legal moves of the acting players; players not acting now have only action 0 legal, the
    move OpenSpiel expects from them in simultaneous games), ``"action"`` and ``"reward"``
    ``[n, 1]``. The root holds ``"current_player"`` (OpenSpiel's id: the player to move, or
    a negative id for simultaneous and terminal states), the done flags ``[1]`` (the game is
    over; ``terminated``, never ``truncated``) and, with ``return_state``, ``"state"`` (the
    serialized game state; ``reset`` with a ``"state"`` entry restores it).

    Turn-based games read only the acting player's action; simultaneous games read every
    player's. Chance nodes (card deals, dice) are resolved inside ``reset`` and ``step`` by
    drawing outcomes with their probabilities from the env's generator (``set_seed``), or
    by ``chance_sampler(outcomes, probabilities) -> outcome``: the agents only see states
    where someone acts. The reward of a step is what every player's return changed by over
    the step (the move and the chance outcomes after it).

    :meth:`rand_action` draws legal moves from the ``"action_mask"`` entries. ``lib`` (on the
    class or an env) is the ``pyspiel`` module, as TorchRL's ``OpenSpielWrapper.lib``.

    Args:
        env: a ``pyspiel.State`` (``pyspiel.load_game(name).new_initial_state()``).

    Keyword Args:
        group_map: a :class:`MarlGroupMapType` or ``{group: [player names]}``. Defaults to
            ``MarlGroupMapType.ALL_IN_ONE_GROUP``.
        categorical_actions: actions as indices (``Categorical``) instead of one-hot vectors
            (``OneHot``). Defaults to ``False``.
        return_state: add the serialized state under ``"state"``. Defaults to ``False``.
        chance_sampler: picks chance outcomes; ``None`` samples with the probabilities.
        device: where the TensorDicts live.

    Raises:
        ImportError: OpenSpiel is not installed.
        TypeError: ``env`` is not a ``pyspiel.State``.
        ValueError: a mean-field game, or a bad ``group_map``.

    Examples:
        >>> import pyspiel
        >>> from rl_envs.libs import OpenSpielWrapper
        >>> env = OpenSpielWrapper(pyspiel.load_game("tic_tac_toe").new_initial_state())
        >>> td = env.reset()
        >>> td["agents", "observation"].shape, td["agents", "action_mask"].sum(-1).tolist()
        (torch.Size([2, 3, 3, 3]), [9, 1])
        >>> td["current_player"].item()
        0
    """

    lib = _PyspielModule()

    def __init__(
        self,
        env: Any,
        *,
        group_map: MarlGroupMapType
        | Mapping[str, Sequence[str]] = MarlGroupMapType.ALL_IN_ONE_GROUP,
        categorical_actions: bool = False,
        return_state: bool = False,
        chance_sampler: Callable[[list[int], list[float]], int] | None = None,
        device: torch.device | str | int | None = None,
    ) -> None:
        who = type(self).__name__
        pyspiel = import_pyspiel(who)
        if not isinstance(env, pyspiel.State):
            raise TypeError(
                f"{who}: expected a pyspiel.State, got {type(env).__name__}. Build one with "
                f"pyspiel.load_game(name).new_initial_state(), or use OpenSpielEnv(name)."
            )
        game = env.get_game()
        game_type = game.get_type()
        if game_type.dynamics == pyspiel.GameType.Dynamics.MEAN_FIELD:
            raise ValueError(f"{who}: mean-field games ({game_type.short_name}) are not supported.")
        super().__init__(batch_size=(), device=device)
        self._pyspiel = pyspiel
        self._game = game
        self._env = env
        # A pyspiel clone may read memory of the state it came from (morpion_solitaire's
        # clones crash once the original is freed): the state given is kept for the env's life.
        self._source = env
        self._initial = env.clone()
        self.parallel = game_type.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
        self.categorical_actions = bool(categorical_actions)
        self.return_state = bool(return_state)
        self._rng = np.random.default_rng()
        self._chance_sampler = chance_sampler
        self.has_observation = bool(game_type.provides_observation_tensor)
        self.has_information_state = bool(game_type.provides_information_state_tensor)
        self.agent_names = [f"player_{i}" for i in range(game.num_players())]
        if isinstance(group_map, MarlGroupMapType):
            group_map = group_map.get_group_map(self.agent_names)
        check_marl_grouping(group_map, self.agent_names)
        self.group_map = {group: list(agents) for group, agents in group_map.items()}
        self._index = {name: i for i, name in enumerate(self.agent_names)}
        self._num_actions = game.num_distinct_actions()
        self._masks: dict[str, torch.Tensor] = {}
        self._make_specs()

    @property
    def env(self) -> Any:
        """The current ``pyspiel.State``."""
        return self._env

    # ------------------------------------------------------------------ specs
    def _make_specs(self) -> None:
        game, n_actions = self._game, self._num_actions
        observation: dict[str, Any] = {}
        action: dict[str, Any] = {}
        reward: dict[str, Any] = {}
        for group, agents in self.group_map.items():
            n = len(agents)
            entries: dict[str, Any] = {}
            if self.has_observation:
                entries[OBSERVATION] = Unbounded(shape=(n, *game.observation_tensor_shape()))
            if self.has_information_state:
                shape = (n, *game.information_state_tensor_shape())
                entries[INFORMATION_STATE] = Unbounded(shape=shape)
            entries[ACTION_MASK] = Categorical(2, shape=(n, n_actions), dtype=torch.bool)
            observation[group] = Composite(entries, shape=(n,))
            if self.categorical_actions:
                spec = Categorical(n_actions, shape=(n,), dtype=torch.int64)
            else:
                spec = OneHot(n_actions, shape=(n, n_actions), dtype=torch.int64)
            action[group] = Composite({ACTION: spec}, shape=(n,))
            reward[group] = Composite({REWARD: Unbounded(shape=(n, 1))}, shape=(n,))
        observation[CURRENT_PLAYER] = Unbounded(shape=(), dtype=torch.int32)
        if self.return_state:
            observation[STATE] = NonTensor(shape=())
        self.observation_spec = Composite(observation)
        self.action_spec = Composite(action)
        self.reward_spec = Composite(reward)
        flag = Categorical(2, shape=(1,), dtype=torch.bool)
        self.done_spec = Composite({DONE: flag, TERMINATED: flag.clone(), TRUNCATED: flag.clone()})
        self._sampling_specs = {g: action[g][ACTION].clone() for g in self.group_map}

    # ------------------------------------------------------------------ EnvBase contract
    def _set_seed(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        state = None if tensordict is None else tensordict.get(STATE, None)
        if state is not None:
            self._env = self._game.deserialize_state(_as_str(state))
        else:
            self._env = self._initial.clone()
        self._resolve_chance()
        return self._output(None)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        env = self._env
        if env.is_terminal():
            raise RuntimeError(f"{type(self).__name__}.step: the game is over; call reset() first.")
        before = np.asarray(env.returns(), dtype=np.float64)
        if self.parallel:
            actions = [0] * len(self.agent_names)
            for player in range(len(self.agent_names)):
                actions[player] = self._read_action(tensordict, player)
            env.apply_actions(actions)
        else:
            player = env.current_player()
            env.apply_action(self._read_action(tensordict, player))
        self._resolve_chance()
        return self._output(np.asarray(self._env.returns(), dtype=np.float64) - before)

    # ------------------------------------------------------------------ helpers
    def _group_of(self, player: int) -> tuple[str, int]:
        name = self.agent_names[player]
        for group, agents in self.group_map.items():
            if name in agents:
                return group, agents.index(name)
        raise KeyError(name)  # unreachable: check_marl_grouping placed every player

    def _read_action(self, tensordict: TensorDictBase, player: int) -> int:
        group, row = self._group_of(player)
        value = tensordict.get((group, ACTION))[row]
        move = int(value.item()) if self.categorical_actions else int(value.argmax(-1).item())
        legal = self._env.legal_actions(player)
        if move not in legal:
            raise ValueError(
                f"{type(self).__name__}.step: {self.agent_names[player]} (group {group!r}, row "
                f"{row}) played {move}, which is not a legal move; legal moves: {legal}. Read "
                f"them from ({group!r}, 'action_mask')."
            )
        return move

    def _resolve_chance(self) -> None:
        env = self._env
        while env.is_chance_node():
            outcomes, probabilities = zip(*env.chance_outcomes())
            if self._chance_sampler is not None:
                outcome = int(self._chance_sampler(list(outcomes), list(probabilities)))
            else:
                p = np.asarray(probabilities, dtype=np.float64)
                outcome = int(outcomes[self._rng.choice(len(outcomes), p=p / p.sum())])
            env.apply_action(outcome)

    def _acting(self) -> list[int]:
        env = self._env
        if env.is_terminal():
            return []
        if self.parallel:
            return list(range(len(self.agent_names)))
        return [env.current_player()]

    def _output(self, rewards: np.ndarray | None) -> TensorDictBase:
        env, game = self._env, self._game
        acting = set(self._acting())
        out: dict[str, Any] = {}
        for group, agents in self.group_map.items():
            entries: dict[str, Any] = {}
            players = [self._index[a] for a in agents]
            if self.has_observation:
                shape = game.observation_tensor_shape()
                entries[OBSERVATION] = torch.tensor(
                    np.stack([np.reshape(env.observation_tensor(p), shape) for p in players]),
                    dtype=torch.float32,
                )
            if self.has_information_state:
                shape = game.information_state_tensor_shape()
                entries[INFORMATION_STATE] = torch.tensor(
                    np.stack([np.reshape(env.information_state_tensor(p), shape) for p in players]),
                    dtype=torch.float32,
                )
            mask = torch.zeros(len(players), self._num_actions, dtype=torch.bool)
            for row, p in enumerate(players):
                if p in acting:
                    mask[row, env.legal_actions(p)] = True
                else:
                    mask[row, 0] = True
            entries[ACTION_MASK] = mask
            self._masks[group] = mask
            if rewards is not None:
                entries[REWARD] = torch.tensor([[rewards[p]] for p in players], dtype=torch.float32)
            out[group] = TensorDict(entries, batch_size=(len(players),))
        over = env.is_terminal()
        out[CURRENT_PLAYER] = torch.tensor(env.current_player(), dtype=torch.int32)
        out[DONE] = torch.tensor([over])
        out[TERMINATED] = torch.tensor([over])
        out[TRUNCATED] = torch.tensor([False])
        if self.return_state:
            out[STATE] = env.serialize()
        return TensorDict(out, batch_size=(), device=self.device)

    # ------------------------------------------------------------------ public API
    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes random legal moves: each row of ``(group, "action")`` is drawn uniformly
        from the ``(group, "action_mask")`` row in ``tensordict`` (else the last one the env
        returned)."""
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size, device=self.device)
        for group in self.group_map:
            spec = self._sampling_specs[group]
            mask = tensordict.get((group, ACTION_MASK), None)
            if mask is None:
                mask = self._masks.get(group)
            if mask is not None:
                spec.update_mask(mask.to(torch.bool).cpu())
            try:
                value = spec.rand()
            finally:
                spec.update_mask(None)
            tensordict.set((group, ACTION), value.to(self.device) if self.device else value)
        return tensordict


def _as_str(state: Any) -> str:
    """A ``"state"`` entry (a str, or non-tensor data holding one) as the serialized str."""
    data = getattr(state, "data", state)
    if isinstance(data, (list, tuple)) and len(data) == 1:
        data = data[0]
    if not isinstance(data, str):
        raise TypeError(
            f"OpenSpielWrapper.reset: expected the 'state' entry to hold a serialized game "
            f"state (str), got {type(data).__name__}."
        )
    return data


__all__ = ["OpenSpielWrapper"]
