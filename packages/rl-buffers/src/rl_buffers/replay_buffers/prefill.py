"""prefill_replay_buffer: seed a replay buffer with samples of an offline dataset."""

from __future__ import annotations

from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer

__all__ = ["prefill_replay_buffer"]


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"prefill_replay_buffer: expected {name} to be a positive int, got {value!r}."
        )


def prefill_replay_buffer(
    rb: ReplayBuffer,
    dataset: ReplayBuffer,
    n_samples: int | None = None,
    chunk_size: int = 1000,
) -> ReplayBuffer:
    """Extends ``rb`` with ``min(n_samples, len(dataset))`` items sampled from ``dataset``.

    Items are drawn by ``dataset``'s own sampler, ``chunk_size`` at a time (with a
    :class:`~rl_buffers.SamplerWithoutReplacement` each item at most once; with the default
    ``RandomSampler`` with replacement), as TorchRL's function does. Any offline
    buffer works, ``rl_buffers.datasets.MinariExperienceReplay`` included; TorchRL's
    ``"minari:<id>"`` strings are not accepted here (build the dataset and pass it).

    Args:
        rb: the buffer to fill.
        dataset: the buffer to draw from.
        n_samples: how many items to copy; None (the default) for ``len(dataset)``.
        chunk_size: items per ``sample``/``extend`` round. Defaults to 1000.

    Returns:
        ``rb``, filled in place.

    Raises:
        TypeError: ``rb`` or ``dataset`` is not a :class:`ReplayBuffer`.
        ValueError: ``n_samples`` or ``chunk_size`` is not a positive int.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, ReplayBuffer, prefill_replay_buffer
        >>> dataset = ReplayBuffer(storage=LazyTensorStorage(500))
        >>> _ = dataset.extend(TensorDict({"obs": torch.randn(500, 4)}, [500]))
        >>> online = ReplayBuffer(storage=LazyTensorStorage(10_000))
        >>> len(prefill_replay_buffer(online, dataset, n_samples=200, chunk_size=64))
        200
    """
    for name, value in (("rb", rb), ("dataset", dataset)):
        if not isinstance(value, ReplayBuffer):
            hint = (
                " Build the dataset (rl_buffers.datasets.MinariExperienceReplay(dataset_id)) "
                "and pass it."
                if isinstance(value, str)
                else ""
            )
            raise TypeError(
                f"prefill_replay_buffer: expected {name} to be a ReplayBuffer, got "
                f"{type(value).__name__}.{hint}"
            )
    if n_samples is not None:
        _check_count("n_samples", n_samples)
    _check_count("chunk_size", chunk_size)
    total = len(dataset) if n_samples is None else min(n_samples, len(dataset))
    copied = 0
    while copied < total:
        count = min(chunk_size, total - copied)
        rb.extend(dataset.sample(count))
        copied += count
    return rb
