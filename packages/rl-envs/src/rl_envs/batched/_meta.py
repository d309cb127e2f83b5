"""What SerialEnv and ParallelEnv share about their sub-envs: metadata and entry paths."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rl_core.envs import EnvBase
from rl_core.keys import key_path
from rl_core.specs import Composite

Path = tuple[str, ...]


@dataclass(frozen=True)
class EnvMetadata:
    """What a batched env needs to know about its sub-envs without holding one.

    Attributes:
        batch_size: the sub-env batch size.
        device: the sub-env device.
        output_spec: the sub-env ``output_spec`` (observations, reward, done flags).
        input_spec: the sub-env ``input_spec`` (actions, states).
        env_type: the sub-env class name, for messages.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_envs.batched import EnvMetadata
        >>> meta = EnvMetadata.from_env(CountingEnv(batch_size=[2]))
        >>> meta.env_type, tuple(meta.batch_size)
        ('CountingEnv', (2,))
        >>> meta.difference(EnvMetadata.from_env(CountingEnv()))
        'batch_size () instead of (2,)'
    """

    batch_size: torch.Size
    device: torch.device | None
    output_spec: Composite
    input_spec: Composite
    env_type: str

    @classmethod
    def from_env(cls, env: EnvBase) -> EnvMetadata:
        """Reads (copies of) the metadata of ``env``."""
        return cls(
            batch_size=torch.Size(env.batch_size),
            device=env.device,
            output_spec=env.output_spec.clone(),
            input_spec=env.input_spec.clone(),
            env_type=type(env).__name__,
        )

    def difference(self, other: EnvMetadata) -> str | None:
        """Names the first thing that differs from ``other``; ``None`` when they agree."""
        if self.batch_size != other.batch_size:
            return f"batch_size {tuple(other.batch_size)} instead of {tuple(self.batch_size)}"
        if self.device != other.device:
            return f"device {other.device} instead of {self.device}"
        for name in ("output_spec", "input_spec"):
            mine, theirs = getattr(self, name), getattr(other, name)
            for group in mine.keys():
                if group not in theirs.keys() or mine[group] != theirs[group]:
                    return f"a different {group}: {theirs[group] if group in theirs.keys() else None!r}"
        return None


def spec_leaf_paths(spec: Composite) -> list[Path]:
    """The leaf paths of ``spec`` as tuples of strings."""
    return [key_path(key) for key in spec.keys(include_nested=True, leaves_only=True)]


def unique(paths: Sequence[Path]) -> list[Path]:
    """``paths`` without repeats, in order."""
    return list(dict.fromkeys(paths))


def rows_to_reset(masks: Sequence[torch.Tensor | None], num_workers: int) -> torch.Tensor | None:
    """One bool per sub-env: any ``"_reset"`` mask of ``masks`` (at any level) is set in its
    row; ``None`` when no mask is given (``None`` entries are absent masks)."""
    rows = None
    for mask in masks:
        if mask is not None:
            flags = mask.reshape(num_workers, -1).any(-1)
            rows = flags if rows is None else rows | flags
    return rows


__all__ = [
    "EnvMetadata",
    "Path",
    "rows_to_reset",
    "spec_leaf_paths",
    "unique",
]
