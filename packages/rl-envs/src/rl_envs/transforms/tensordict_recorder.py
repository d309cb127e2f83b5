"""TensorDictRecorder: every ``skip``-th output of an env kept and saved as one stacked file."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey


class TensorDictRecorder(Transform):
    """Keeps every ``skip``-th TensorDict the env outputs (resets and steps, counted together)
    and saves them stacked along a new first dim with :meth:`dump` (TorchRL's
    ``TensorDictRecorder``, ``torchrl.record``).

    The outputs are copied when kept (``in_keys`` selects entries; empty keeps them all), so
    later steps do not change them. :meth:`dump` writes
    ``f"{out_file_base}[_{suffix}]_tensordict.t"`` with ``torch.save`` (read it back with
    ``torch.load(path, weights_only=False)``), drops the first kept output with ``skip_reset``
    (with ``skip=1`` that is the reset's), and starts a new recording.

    Args:
        out_file_base: the path prefix of the files.
        skip_reset: drop the first kept output when dumping. Defaults to True.
        skip: keep one output in ``skip``, the ``skip``-th, ``2 * skip``-th, ... counted from
            the first reset of a recording. Defaults to 4.
        in_keys: the entries kept. Defaults to all.

    Raises:
        ValueError: ``skip`` is not a positive integer; :meth:`dump` has nothing to write.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> rec = TensorDictRecorder("unused", skip=1)
        >>> for t in range(3):
        ...     _ = rec(TensorDict(observation=torch.full((2,), float(t))))
        >>> len(rec.td)
        3
    """

    def __init__(
        self,
        out_file_base: str | os.PathLike,
        skip_reset: bool = True,
        skip: int = 4,
        in_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        if isinstance(skip, bool) or not isinstance(skip, int) or skip < 1:
            raise ValueError(f"TensorDictRecorder: skip must be an integer >= 1, got {skip!r}.")
        super().__init__(in_keys=[] if in_keys is None else in_keys)
        self.out_file_base = os.fspath(out_file_base)
        self.skip_reset = bool(skip_reset)
        self.skip = skip
        self.iter = 0
        self.count = 0
        self.td: list[TensorDictBase] = []

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.count += 1
        if self.count % self.skip == 0:
            kept = tensordict.select(*self.in_keys) if self.in_keys else tensordict
            self.td.append(kept.to_tensordict().clone())
        return tensordict

    def dump(self, suffix: str | None = None) -> str:
        """Writes the kept outputs stacked (``[n, *batch]``) and starts a new recording.

        Args:
            suffix: appended to ``out_file_base`` after an underscore.

        Returns:
            The path written.
        """
        kept = self.td[1:] if self.skip_reset else self.td
        if not kept:
            raise ValueError(
                f"TensorDictRecorder.dump: nothing to write ({len(self.td)} output(s) kept, "
                f"skip={self.skip}, skip_reset={self.skip_reset}); step the env first."
            )
        base = self.out_file_base if suffix is None else f"{self.out_file_base}_{suffix}"
        path = f"{base}_tensordict.t"
        torch.save(torch.stack(kept, 0).contiguous(), path)
        self.iter += 1
        self.count = 0
        self.td = []
        return path


__all__ = ["TensorDictRecorder"]
