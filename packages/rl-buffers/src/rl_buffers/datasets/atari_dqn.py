"""AtariDQNExperienceReplay: the DQN Replay Dataset's numpy checkpoints as TED rows."""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from rl_buffers.datasets.base import BaseDatasetExperienceReplay

__all__ = ["AtariDQNExperienceReplay"]

_BUCKET = "https://storage.googleapis.com/atari-replay-datasets/dqn"
_NAMES = ("observation", "action", "reward", "terminal")


def _file(name: str, checkpoint: int) -> str:
    return f"$store$_{name}_ckpt.{checkpoint}.gz"


class AtariDQNExperienceReplay(BaseDatasetExperienceReplay):
    """A run of the DQN Replay Dataset (Agarwal et al. 2020) as a TED replay buffer.

    The source is Dopamine's replay checkpoints: for each checkpoint ``i``, the gzipped
    numpy arrays ``$store$_observation_ckpt.i.gz`` (``[N, 84, 84]`` uint8),
    ``$store$_action_ckpt.i.gz``, ``$store$_reward_ckpt.i.gz`` and
    ``$store$_terminal_ckpt.i.gz``, read with numpy from ``root/<dataset_id>/replay_logs/``
    (downloaded from the dataset's public bucket, or ``url``, when missing). They are
    converted once into memory-mapped rows under ``root/<dataset_id>/memmap/``, checkpoint
    after checkpoint, without holding more than one checkpoint in memory. Row ``t`` of a
    checkpoint gives ``"observation"``, ``"action"``, ``("next", "observation")`` (row
    ``t + 1``'s, zeroed where the step is terminal), ``("next", "reward")``,
    ``("next", "terminated")`` (``terminal``), ``("next", "done")`` (the same),
    ``("next", "truncated")`` and the root ``"done"``/``"terminated"``/``"truncated"``
    (False), each of shape ``[N]`` as TorchRL's, and ``"episode"`` (a running episode
    number); the last row of each checkpoint is dropped (its successor is in no file).
    ``SliceSampler(traj_key="episode")`` slices stay inside episodes.

    Args:
        dataset_id: ``"<Game>/<run>"``, e.g. ``"Pong/5"``.
        batch_size: default batch size of ``sample()``.

    Keyword Args:
        root: the folder of the sources and converted datasets. Defaults to
            ``~/.cache/rl_buffers/atari``.
        download: whether missing checkpoint files are downloaded. Defaults to True.
        url: the folder address holding ``<dataset_id>/replay_logs/``. Defaults to the
            dataset's public bucket.
        checkpoints: the checkpoint numbers to read. Defaults to those found in the source
            folder, else (to download) 0 to 50, the 51 of a published run.
        sampler, writer, collate_fn, transform, prefetch, pin_memory: as
            :class:`ReplayBuffer` (the writer defaults to an :class:`ImmutableDatasetWriter`).

    Raises:
        FileNotFoundError: a checkpoint file is missing and ``download`` is False.
        ConnectionError: a download failed (the message names the URL).
        ValueError: ``dataset_id`` is not ``"<Game>/<run>"``, or a file is not a gzipped
            numpy array of the expected length.
    """

    def __init__(
        self,
        dataset_id: str,
        batch_size: int | None = None,
        *,
        root: str | Path | None = None,
        download: bool = True,
        url: str | None = None,
        checkpoints: Sequence[int] | None = None,
        sampler: Any = None,
        writer: Any = None,
        collate_fn: Any = None,
        transform: Any = None,
        prefetch: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        name = type(self).__name__
        parts = dataset_id.split("/") if isinstance(dataset_id, str) else []
        if len(parts) != 2 or not parts[0].isidentifier() or not parts[1].isdigit():
            raise ValueError(
                f"{name}: expected dataset_id to be '<Game>/<run>' such as 'Pong/5', got "
                f"{dataset_id!r}."
            )
        self._locate(dataset_id, root, "atari", download)
        self.url = (url or _BUCKET).rstrip("/")
        self.checkpoints = None if checkpoints is None else [int(c) for c in checkpoints]
        self._open(batch_size, sampler, writer, collate_fn, transform, prefetch, pin_memory)

    @property
    def data_path(self) -> Path:
        """The folder of the converted rows, ``root/<dataset_id>/memmap``."""
        return self.root / self.dataset_id / "memmap"

    @property
    def source_path(self) -> Path:
        """The folder of the checkpoint files, ``root/<dataset_id>/replay_logs``."""
        return self.root / self.dataset_id / "replay_logs"

    def _checkpoint_numbers(self) -> list[int]:
        if self.checkpoints is not None:
            return self.checkpoints
        found = sorted(
            int(path.name.split(".")[-2])
            for path in self.source_path.glob(_file("reward", 0).replace(".0.", ".*."))
        )
        return found or list(range(51))

    def _convert(self, folder: Path) -> dict[str, Any]:
        numbers = self._checkpoint_numbers()
        for number in numbers:
            for key in _NAMES:
                remote = _file(key, number).replace("$", "%24")
                self._source_file(
                    self.source_path / _file(key, number),
                    f"{self.url}/{self.dataset_id}/replay_logs/{remote}",
                    "the run's checkpoint file",
                )
        lengths = [len(_load(self.source_path / _file("reward", n))) for n in numbers]
        rows = sum(max(n - 1, 0) for n in lengths)
        if rows == 0:
            raise ValueError(
                f"{type(self).__name__}: the checkpoints {numbers} in {self.source_path} hold "
                f"no transition (each needs at least 2 rows)."
            )
        first = self._checkpoint(numbers[0], lengths[0], 0)
        data = first[:1].expand(rows).memmap_like(prefix=folder, existsok=True)
        start, episodes = 0, 0
        for number, length in zip(numbers, lengths, strict=True):
            part = first if number == numbers[0] else self._checkpoint(number, length, episodes)
            data[start : start + part.shape[0]] = part
            start += part.shape[0]
            episodes = int(part["episode"][-1]) + 1 if part.shape[0] else episodes
        return {"checkpoints": numbers, "steps": rows, "episodes": episodes}

    def _checkpoint(self, number: int, length: int, first_episode: int) -> TensorDict:
        arrays = {key: _load(self.source_path / _file(key, number)) for key in _NAMES}
        wrong = {key: len(value) for key, value in arrays.items() if len(value) != length}
        if wrong:
            raise ValueError(
                f"{type(self).__name__}: checkpoint {number} in {self.source_path} holds "
                f"{length} rewards but {wrong} rows in the other files."
            )
        n = max(length - 1, 0)
        observation = torch.from_numpy(arrays["observation"])
        terminal = torch.from_numpy(arrays["terminal"][:n]).bool().reshape(n)
        next_observation = observation[1 : n + 1].clone()
        next_observation[terminal] = 0
        false = torch.zeros(n, dtype=torch.bool)
        ends = (
            torch.cat([torch.zeros(1, dtype=torch.long), terminal[:-1].long()])
            if n
            else false.long()
        )
        return TensorDict(
            {
                "observation": observation[:n].clone(),
                "action": torch.from_numpy(arrays["action"][:n]),
                "episode": first_episode + ends.cumsum(0),
                "done": false,
                "terminated": false.clone(),
                "truncated": false.clone(),
                "next": {
                    "observation": next_observation,
                    "reward": torch.from_numpy(arrays["reward"][:n]).float(),
                    "done": terminal.clone(),
                    "terminated": terminal,
                    "truncated": false.clone(),
                },
            },
            batch_size=[n],
        )


def _load(path: Path) -> np.ndarray:
    """The numpy array saved (``np.save``) in the gzip file ``path``."""
    try:
        with gzip.open(path, "rb") as handle:
            raw = handle.read()
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (OSError, EOFError, ValueError, zlib.error) as error:
        raise ValueError(
            f"AtariDQNExperienceReplay: {path} is not a gzipped numpy array ({error}); a "
            f"truncated download or another format. Remove it to download it again."
        ) from error
    if not isinstance(array, np.ndarray) or not array.shape:
        raise ValueError(f"AtariDQNExperienceReplay: {path} holds no array of rows.")
    return array
