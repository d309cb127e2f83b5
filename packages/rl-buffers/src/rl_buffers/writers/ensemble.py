"""WriterEnsemble: the writers of a replay-buffer ensemble."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from rl_buffers.writers.writer import Writer

__all__ = ["WriterEnsemble"]


class WriterEnsemble(Writer):
    """The writers of a :class:`~rl_buffers.ReplayBufferEnsemble`, one per buffer.

    Writing through the ensemble is refused (each buffer writes its own items:
    ``ensemble[i].extend(data)``); ``writer_ensemble[i]`` is writer ``i``.

    Args:
        *writers: the writers, in buffer-id order.

    Raises:
        ValueError: no writer.
        TypeError: an argument is not a :class:`Writer`.
    """

    def __init__(self, *writers: Writer) -> None:
        super().__init__()
        if not writers:
            raise ValueError("WriterEnsemble: expected at least one writer, got none.")
        for i, writer in enumerate(writers):
            if not isinstance(writer, Writer):
                raise TypeError(
                    f"WriterEnsemble: expected Writer instances, got {type(writer).__name__} "
                    f"at position {i}."
                )
        self._writers = list(writers)

    def __getitem__(self, index: int) -> Writer:
        return self._writers[index]

    def __len__(self) -> int:
        return len(self._writers)

    def register_storage(self, storage: Any) -> None:
        """Keeps the ensemble storage; each writer keeps its own storage."""
        self._storage = storage

    def add(self, data: Any) -> int:
        raise RuntimeError(self._refusal())

    def extend(self, data: Any) -> Tensor:
        raise RuntimeError(self._refusal())

    @staticmethod
    def _refusal() -> str:
        return (
            "writing to a replay-buffer ensemble is not supported: write into one of its "
            "buffers (ensemble[i].extend(data))."
        )

    def state_dict(self) -> dict[str, Any]:
        return {"writers": [writer.state_dict() for writer in self._writers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for writer, state in zip(self._writers, state_dict["writers"], strict=True):
            writer.load_state_dict(state)

    def _empty(self) -> None:
        for writer in self._writers:
            writer._empty()

    def __repr__(self) -> str:
        return f"WriterEnsemble({', '.join(repr(w) for w in self._writers)})"
