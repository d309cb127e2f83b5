"""EndOfLifeTransform: a flag set when an Atari game loses a life."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Categorical, Composite, Transform
from rl_core.keys import NestedKey


class EndOfLifeTransform(Transform):
    """Writes ``end-of-life``: True on the steps where the number of lives went down.

    Games with several lives end an episode only with the last one; many Atari recipes treat
    each lost life as the end of a trajectory for the value targets. The flag is written
    beside the done flags (shaped like them) and leaves ``done`` untouched: pass it as the
    done key of a loss or value estimator to use it. The lives come from the ``lives`` entry
    of the env, which a ``GymEnv`` exposes through its info dict:
    ``env.set_info_dict_reader(default_info_dict_reader(["lives"]))``.

    Args:
        eol_key: the flag. Defaults to ``"end-of-life"``.
        lives_key: the observed number of lives. Defaults to ``"lives"``.

    Raises:
        KeyError: (on the specs) the env shows no lives.

    Examples:
        >>> EndOfLifeTransform().out_keys
        ['end-of-life']
    """

    def __init__(self, eol_key: NestedKey = "end-of-life", lives_key: NestedKey = "lives") -> None:
        super().__init__(in_keys=[lives_key], out_keys=[eol_key])
        self.eol_key = eol_key
        self.lives_key = lives_key

    def _flag_shape(self, batch: torch.Size) -> tuple[int, ...]:
        return (*batch, 1)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = self._flag_shape(tensordict_reset.batch_size)
        flag = torch.zeros(shape, dtype=torch.bool, device=tensordict_reset.device)
        return tensordict_reset.set(self.eol_key, flag)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        before = tensordict.get(self.lives_key, None)
        if before is None:
            raise KeyError(
                f"EndOfLifeTransform: expected {self.lives_key!r} in the TensorDict given to "
                f"step (reset writes it)."
            )
        after = next_tensordict.get(self.lives_key)
        lost = (after < before).reshape(self._flag_shape(next_tensordict.batch_size))
        return next_tensordict.set(self.eol_key, lost)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        known = observation_spec.keys(include_nested=True, leaves_only=True)
        if self.lives_key not in known:
            raise KeyError(
                f"EndOfLifeTransform: the env shows no {self.lives_key!r} entry (it has "
                f"{known}); for a GymEnv, add it with "
                f"env.set_info_dict_reader(default_info_dict_reader(['lives']))."
            )
        shape = self._flag_shape(observation_spec.shape)
        observation_spec[self.eol_key] = Categorical(
            2, shape=shape, device=observation_spec.device, dtype=torch.bool
        )
        return observation_spec

    def extra_repr(self) -> str:
        return f"eol_key={self.eol_key!r}, lives_key={self.lives_key!r}"


__all__ = ["EndOfLifeTransform"]
