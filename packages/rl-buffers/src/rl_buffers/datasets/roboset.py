"""RobosetExperienceReplay: RoboSet's HDF5 trial files as TED replay buffers (h5py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from torch import Tensor

from rl_buffers.datasets.base import BaseDatasetExperienceReplay
from rl_buffers.datasets.d4rl import _import_h5py

__all__ = ["RobosetExperienceReplay"]

_NAMES = {
    "observations": "observation",
    "actions": "action",
    "rewards": "reward",
    "env_infos": "info",
}
_REQUIRED = ("observations", "actions", "rewards")


class RobosetExperienceReplay(BaseDatasetExperienceReplay):
    """A RoboSet dataset (RoboHive's HDF5 files, read with h5py) as a TED replay buffer.

    The source is ``root/<dataset_id>.h5`` (downloaded from ``url`` when missing): one
    group per episode, ``Trial0``, ``Trial1``..., each with ``observations``, ``actions``,
    ``rewards``, optionally ``done`` and an ``env_infos`` group, one row per step. It is
    converted once into memory-mapped rows under ``root/<dataset_id>/``, episodes in trial
    order, with TorchRL's keys for this data: ``"observation"``, ``"action"``, ``"info"``,
    ``"episode"`` (the trial number), ``"seed"`` (0: the file), ``"done"``/``"terminated"``/
    ``"truncated"`` ``[1]`` (False: a step's start), and ``"next"`` with the following step's
    ``"observation"`` and ``"info"`` (zeros after an episode's last step), ``"reward"`` ``[1]``,
    ``"done"`` (the file's ``done``, True at each episode's last step), ``"terminated"``
    (the file's ``done``) and ``"truncated"`` (an episode's last step without ``done``).
    ``SliceSampler(traj_key="episode")`` slices stay inside episodes.

    Args:
        dataset_id: the dataset's name, e.g. ``"FK1-v4(expert)/FK1_MicroOpenRandom_v2d-v4"``.
        batch_size: default batch size of ``sample()``.

    Keyword Args:
        root: the folder of the sources and converted datasets. Defaults to
            ``~/.cache/rl_buffers/roboset``.
        download: whether a missing source is downloaded from ``url``. Defaults to True.
        url: the address of the source file (RoboSet's files are on the Hugging Face hub);
            needed only to download.
        sha256: the expected SHA-256 of the downloaded file.
        sampler, writer, collate_fn, transform, prefetch, pin_memory: as
            :class:`ReplayBuffer` (the writer defaults to an :class:`ImmutableDatasetWriter`).

    Raises:
        ImportError: h5py is not installed.
        FileNotFoundError: the source is missing and there is nothing to download (no
            ``url``, or ``download=False``); the message names the file.
        ConnectionError: the download failed (the message names the URL).
        ValueError: the file is not an HDF5 file of RoboSet trials.
    """

    def __init__(
        self,
        dataset_id: str,
        batch_size: int | None = None,
        *,
        root: str | Path | None = None,
        download: bool = True,
        url: str | None = None,
        sha256: str | None = None,
        sampler: Any = None,
        writer: Any = None,
        collate_fn: Any = None,
        transform: Any = None,
        prefetch: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        name = type(self).__name__
        if not isinstance(dataset_id, str) or not dataset_id or ".." in Path(dataset_id).parts:
            raise ValueError(
                f"{name}: expected dataset_id to be a RoboSet name, got {dataset_id!r}."
            )
        _import_h5py(name)
        self._locate(dataset_id, root, "roboset", download)
        self.url = url
        self.sha256 = sha256
        self._open(batch_size, sampler, writer, collate_fn, transform, prefetch, pin_memory)

    @property
    def source_path(self) -> Path:
        """The HDF5 file read, ``root/<dataset_id>.h5``."""
        return self.root / f"{self.dataset_id}.h5"

    def _convert(self, folder: Path) -> dict[str, Any]:
        source = self._source_file(
            self.source_path, self.url, "the dataset's HDF5 file", sha256=self.sha256
        )
        rows, episodes = _read_roboset(source)
        rows.memmap(prefix=folder, existsok=True)
        return {"episodes": episodes, "source": source.name}


def _read_roboset(path: Path) -> tuple[TensorDict, int]:
    h5py = _import_h5py("RobosetExperienceReplay")
    where = f"RobosetExperienceReplay: {path}"
    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise ValueError(
            f"{where} is not a readable HDF5 file ({error}); a truncated download or another "
            f"format. Remove it and download it again."
        ) from error
    with handle:
        trials = sorted(
            (key for key in handle if key.startswith("Trial") and key[5:].isdigit()),
            key=lambda key: int(key[5:]),
        )
        if not trials:
            raise ValueError(
                f"{where} holds no RoboSet trial (groups 'Trial0', 'Trial1', ...); it has "
                f"{sorted(handle.keys())}."
            )
        try:
            episodes = [_episode(handle[key], int(key[5:]), where, h5py) for key in trials]
        except OSError as error:
            raise ValueError(
                f"{where} cannot be read whole ({error}); a truncated file?"
            ) from error
    return torch.cat(episodes), len(episodes)


def _episode(group: Any, number: int, where: str, h5py: Any) -> TensorDict:
    missing = [key for key in _REQUIRED if not isinstance(group.get(key), h5py.Dataset)]
    if missing:
        raise ValueError(f"{where}: trial {group.name} is missing datasets {missing}.")
    steps = group["actions"].shape[0]
    columns: dict[str, Any] = {}
    for key, item in group.items():
        value = _read(item, h5py)
        if value is None:
            continue
        lengths = {k: v.shape[0] for k, v in _leaves(value)}
        wrong = {k: n for k, n in lengths.items() if n != steps}
        if wrong:
            raise ValueError(
                f"{where}: trial {group.name} has {steps} actions but {key} rows {wrong}."
            )
        columns[_NAMES.get(key, key)] = value
    done = (
        _flag(columns.pop("done")) if "done" in columns else torch.zeros(steps, 1, dtype=torch.bool)
    )
    last = torch.zeros(steps, 1, dtype=torch.bool)
    last[-1] = True
    false = torch.zeros(steps, 1, dtype=torch.bool)
    reward = torch.as_tensor(columns.pop("reward")).reshape(steps, 1)
    nxt: dict[str, Any] = {
        key: _shift_up(columns[key]) for key in ("observation", "info") if key in columns
    }
    nxt.update(reward=reward, done=done | last, terminated=done, truncated=last & ~done)
    return TensorDict(
        {
            **columns,
            "episode": torch.full((steps,), number, dtype=torch.long),
            "seed": torch.zeros(steps, dtype=torch.long),
            "done": false,
            "terminated": false.clone(),
            "truncated": false.clone(),
            "next": nxt,
        },
        batch_size=[steps],
    )


def _read(item: Any, h5py: Any) -> Any:
    """A dataset as a tensor, a group as a dict of them (non-numeric entries dropped)."""
    if isinstance(item, h5py.Dataset):
        if item.dtype.kind not in "biuf" or not item.shape:
            return None
        return torch.from_numpy(np.asarray(item[()]))
    out = {key: _read(sub, h5py) for key, sub in item.items()}
    out = {key: value for key, value in out.items() if value is not None}
    return out or None


def _leaves(value: Any, prefix: str = "") -> list[tuple[str, Tensor]]:
    if isinstance(value, dict):
        return [leaf for key, sub in value.items() for leaf in _leaves(sub, f"{prefix}{key}/")]
    return [(prefix.rstrip("/") or "value", value)]


def _shift_up(value: Any) -> Any:
    """Row ``t + 1`` at row ``t`` (zeros after the last row), through dicts."""
    if isinstance(value, dict):
        return {key: _shift_up(sub) for key, sub in value.items()}
    out = torch.zeros_like(value)
    out[:-1] = value[1:]
    return out


def _flag(values: Tensor) -> Tensor:
    return values.bool().reshape(-1, 1)
