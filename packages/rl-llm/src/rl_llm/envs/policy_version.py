"""PolicyVersion: tags each env step with the version of the policy weights that acted."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import torch
from tensordict import NonTensorStack, TensorDictBase

from rl_core import Composite, NonTensor, Transform, Unbounded

POLICY_VERSION = "policy_version"
_KINDS = {int: "int", "int": "int", str: "uuid", "uuid": "uuid"}


@dataclass
class VersionChange:
    """One increment: when, from which version, to which."""

    timestamp: datetime
    old_version: int | str | None
    new_version: int | str


class PolicyVersion(Transform):
    """Writes the current policy version at ``"policy_version"`` on every reset and step.

    The version is an integer counter (``version_type=int``, from 0, ``[*batch, 1]`` int64) or
    a fresh UUID string per version (``version_type="uuid"``, one string per dialog).
    :meth:`increment_version` moves to the next one; hand the transform to
    :class:`~rl_llm.collectors.LLMCollector` (``track_policy_version=policy_version``) and
    each weight update increments it, so every step's data carries the version that produced
    it. ``version_history`` records the changes.

    Args:
        version_type: ``int``/``"int"`` or ``str``/``"uuid"``.

    Raises:
        ValueError: another ``version_type``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_core import TransformedEnv
        >>> from rl_llm.envs import ChatEnv, PolicyVersion
        >>> version = PolicyVersion()
        >>> env = TransformedEnv(ChatEnv(batch_size=(2,)), version)
        >>> env.reset(TensorDict(query=["a", "b"], batch_size=[2]))["policy_version"].squeeze(-1).tolist()
        [0, 0]
        >>> version.increment_version()
        1
    """

    def __init__(self, version_type: type | str = int) -> None:
        super().__init__()
        kind = _KINDS.get(version_type) if isinstance(version_type, (type, str)) else None
        if kind is None:
            raise ValueError(
                f"PolicyVersion: expected version_type int, 'int', str or 'uuid', got "
                f"{version_type!r}."
            )
        self.version_type = version_type
        self._kind = kind
        self._version: int | str = 0 if kind == "int" else str(uuid.uuid4())
        self.version_history: list[VersionChange] = [
            VersionChange(datetime.now(UTC), None, self._version)
        ]

    @property
    def version(self) -> int | str:
        """The current version."""
        return self._version

    def increment_version(self) -> int | str:
        """Moves to the next version (``+1``, or a new UUID) and returns it."""
        old = self._version
        self._version = old + 1 if isinstance(old, int) else str(uuid.uuid4())
        self.version_history.append(VersionChange(datetime.now(UTC), old, self._version))
        return self._version

    def value_for(self, batch_size: torch.Size | tuple[int, ...]) -> Any:
        """The entry written for a batch: ``[*batch, 1]`` int64, or one string per element."""
        if self._kind == "int":
            return torch.full((*batch_size, 1), int(self._version), dtype=torch.long)
        n = 1
        for d in batch_size:
            n *= d
        stack = NonTensorStack(*([self._version] * n)) if n else NonTensorStack()
        return stack.reshape(tuple(batch_size)) if len(batch_size) != 1 else stack

    def _write(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict.set(POLICY_VERSION, self.value_for(tensordict.batch_size))
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._write(tensordict)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._write(next_tensordict)

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._write(tensordict_reset)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        shape = observation_spec.shape
        if self._kind == "int":
            observation_spec[POLICY_VERSION] = Unbounded(shape=(*shape, 1), dtype=torch.long)
        else:
            observation_spec[POLICY_VERSION] = NonTensor(shape=shape)
        return observation_spec
