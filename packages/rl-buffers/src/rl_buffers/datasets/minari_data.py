"""MinariExperienceReplay: a minari dataset on disk, served as a TensorDict replay buffer."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from torch import Tensor

from rl_buffers.replay_buffers.tensordict_buffer import TensorDictReplayBuffer
from rl_buffers.storages._files import atomic_write_json
from rl_buffers.storages.tensor_storage import TensorStorage

__all__ = ["MinariExperienceReplay"]

_MARKER = "rl_buffers_minari.json"


def _import_minari() -> Any:
    try:
        import minari
    except ImportError as error:
        raise ImportError(
            'MinariExperienceReplay needs minari: pip install "rl-buffers[minari]"'
        ) from error
    return minari


class MinariExperienceReplay(TensorDictReplayBuffer):
    """A local minari dataset as a :class:`TensorDictReplayBuffer` of transitions.

    The first use converts the dataset (read with ``minari.load_dataset``, no download) into
    memory-mapped tensors under ``root/dataset_id``; later uses open those files directly.
    Each transition holds ``"observation"``, ``"action"``, ``"episode"`` (the minari
    episode id), ``"done"``/``"terminated"``/``"truncated"`` (False: the step's start) and
    ``"next"`` with ``"observation"``, ``"reward"`` ``[1]``, ``"done"``, ``"terminated"`` and
    ``"truncated"`` ``[1]``. Dict observations become nested TensorDicts. The buffer is
    read-only: ``add``/``extend`` raise.

    Args:
        dataset_id: the minari dataset id, e.g. ``"cartpole/random-v0"``.
        batch_size: default batch size of ``sample()``.

    Keyword Args:
        root: where converted datasets are kept. Defaults to ``~/.cache/rl_buffers/minari``.
        download: must be False: datasets are read from minari's local store (set
            ``MINARI_DATASETS_PATH`` to choose it); downloading is not supported.
        sampler, transform, prefetch, pin_memory: as :class:`ReplayBuffer`.

    Raises:
        ImportError: minari is not installed.
        ValueError: ``download=True``.
        FileNotFoundError: no local minari dataset has this id.
        ValueError: the dataset's files cannot be read (truncated, another format); the
            message names them and nothing is left under ``root``.
    """

    def __init__(
        self,
        dataset_id: str,
        batch_size: int | None = None,
        *,
        root: str | Path | None = None,
        download: bool = False,
        sampler: Any = None,
        transform: Any = None,
        prefetch: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        if download:
            raise ValueError(
                f"MinariExperienceReplay: download=True is not supported; create or copy the "
                f"dataset {dataset_id!r} into minari's local store (MINARI_DATASETS_PATH) and "
                f"pass download=False."
            )
        self.dataset_id = dataset_id
        self.root = Path(root) if root is not None else Path.home() / ".cache/rl_buffers/minari"
        self.data_path = self.root / dataset_id
        if not (self.data_path / _MARKER).exists():
            _convert(dataset_id, self.data_path)
        self.metadata = json.loads((self.data_path / _MARKER).read_text())
        storage = TensorStorage(TensorDict.load_memmap(self.data_path))
        super().__init__(
            storage=storage,
            sampler=sampler,
            batch_size=batch_size,
            transform=transform,
            prefetch=prefetch,
            pin_memory=pin_memory,
        )

    def add(self, data: Any) -> int:
        raise RuntimeError(
            f"MinariExperienceReplay({self.dataset_id!r}) is read-only; copy it into a "
            f"TensorDictReplayBuffer to add items."
        )

    def extend(self, data: Any) -> Tensor:
        raise RuntimeError(
            f"MinariExperienceReplay({self.dataset_id!r}) is read-only; copy it into a "
            f"TensorDictReplayBuffer to extend it."
        )


def _tree(value: Any) -> Any:
    """numpy arrays (or dicts/tuples of them) to tensors (or dicts of them)."""
    if isinstance(value, dict):
        return {key: _tree(item) for key, item in value.items()}
    if isinstance(value, tuple | list) and value and not isinstance(value[0], int | float):
        return {str(i): _tree(item) for i, item in enumerate(value)}
    return torch.as_tensor(np.asarray(value))


def _cut(value: Any, part: slice) -> Any:
    if isinstance(value, dict):
        return {key: _cut(item, part) for key, item in value.items()}
    return value[part]


def _episode(episode: Any) -> TensorDict:
    steps = len(episode.rewards)
    observation = _tree(episode.observations)
    terminated = torch.as_tensor(np.asarray(episode.terminations), dtype=torch.bool).view(steps, 1)
    truncated = torch.as_tensor(np.asarray(episode.truncations), dtype=torch.bool).view(steps, 1)
    false = torch.zeros(steps, 1, dtype=torch.bool)
    return TensorDict(
        {
            "observation": _cut(observation, slice(0, steps)),
            "action": _tree(episode.actions),
            "episode": torch.full((steps,), int(episode.id), dtype=torch.long),
            "done": false,
            "terminated": false.clone(),
            "truncated": false.clone(),
            "next": {
                "observation": _cut(observation, slice(1, steps + 1)),
                "reward": torch.as_tensor(np.asarray(episode.rewards)).float().view(steps, 1),
                "done": terminated | truncated,
                "terminated": terminated,
                "truncated": truncated,
            },
        },
        [steps],
    )


def _convert(dataset_id: str, folder: Path) -> None:
    minari = _import_minari()
    if dataset_id not in minari.list_local_datasets():
        raise FileNotFoundError(
            f"MinariExperienceReplay: no local minari dataset {dataset_id!r} (local: "
            f"{sorted(minari.list_local_datasets())}). Create it with minari's DataCollector "
            f"or create_dataset_from_buffers, or point MINARI_DATASETS_PATH at its store."
        )
    try:
        dataset = minari.load_dataset(dataset_id)
        episodes = [_episode(episode) for episode in dataset.iterate_episodes()]
    except (OSError, ValueError, KeyError) as error:
        source = _source_files(minari, dataset_id)
        raise ValueError(
            f"MinariExperienceReplay: {source} cannot be read ({error}); a truncated copy or "
            f"another format. Record or copy the dataset {dataset_id!r} again."
        ) from error
    data = torch.cat(episodes)
    # Written beside the final folder and renamed into place once complete: a failure leaves
    # no half-written rows (and removes the folders it created).
    created = [p for p in (folder.parent, *folder.parent.parents) if not p.exists()]
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        data.memmap(prefix=tmp, existsok=True)
        atomic_write_json(
            {
                "dataset_id": dataset_id,
                "episodes": len(episodes),
                "steps": data.shape[0],
                "observation_space": str(dataset.spec.observation_space),
                "action_space": str(dataset.spec.action_space),
            },
            tmp / _MARKER,
        )
        if folder.exists():  # (a folder without a record: a copy of no use)
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        for made in created:
            if made.exists() and not any(made.rglob("*")):
                shutil.rmtree(made)


def _source_files(minari: Any, dataset_id: str) -> str:
    """The dataset's data file(s) in minari's store, for messages."""
    try:
        data = Path(minari.storage.get_dataset_path(dataset_id)) / "data"
    except Exception:  # (an unreadable store: name the id alone)
        return f"minari dataset {dataset_id!r}"
    found = sorted(p for p in data.glob("*") if p.is_file() and p.name != "metadata.json")
    return ", ".join(map(str, found)) if found else str(data)
