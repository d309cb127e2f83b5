"""LeRobotExperienceReplay: a LeRobot dataset's parquet frames (pyarrow) as a replay buffer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorStack, TensorDict

from rl_buffers.datasets.base import BaseDatasetExperienceReplay

__all__ = ["LeRobotExperienceReplay", "lerobot_columns_to_tensordict"]

_KEY_MAP: dict[str, Any] = {
    "action": "action",
    "observation.state": ("observation", "state"),
    "episode_index": "episode",
    "frame_index": "frame",
    "task": "language_instruction",
    "next.reward": ("next", "reward"),
    "next.done": ("next", "done"),
}
_IMAGES = "observation.images."


def _target(name: str, key_map: Mapping[str, Any]) -> Any:
    if name in key_map:
        return key_map[name]
    if name.startswith(_IMAGES):
        return ("observation", "image", name[len(_IMAGES) :])
    return tuple(name.split(".")) if "." in name else name


def lerobot_columns_to_tensordict(
    columns: Mapping[str, Any], *, key_map: Mapping[str, Any] | None = None
) -> TensorDict:
    """LeRobot's per-frame columns (dotted names) as a flat ``[N]`` TensorDict.

    ``observation.state`` goes to ``("observation", "state")``, ``observation.images.<cam>``
    to ``("observation", "image", <cam>)``, ``episode_index`` to ``"episode"``,
    ``frame_index`` to ``"frame"``, ``task`` (strings) to ``"language_instruction"``,
    ``next.reward``/``next.done`` to ``("next", ...)`` with a trailing dim of 1; another
    dotted name becomes a nested key. Tensors (or arrays) stay tensors, lists of strings
    become a non-tensor stack.

    Args:
        columns: column name to a tensor, a numpy array or a list of strings, one row per
            frame.

    Keyword Args:
        key_map: overrides of the default names (source column to target key).

    Returns:
        the ``[N]`` TensorDict.

    Raises:
        ValueError: the columns have different lengths, none has a length, or a list mixes
            strings and other values.

    Examples:
        >>> import torch
        >>> from rl_buffers.datasets import lerobot_columns_to_tensordict
        >>> td = lerobot_columns_to_tensordict({
        ...     "observation.state": torch.zeros(4, 7),
        ...     "action": torch.zeros(4, 2),
        ...     "episode_index": torch.tensor([0, 0, 1, 1]),
        ...     "next.reward": torch.ones(4),
        ...     "task": ["pick", "pick", "place", "place"],
        ... })
        >>> td["observation", "state"].shape, td["next", "reward"].shape
        (torch.Size([4, 7]), torch.Size([4, 1]))
        >>> td["language_instruction"].tolist()
        ['pick', 'pick', 'place', 'place']
    """
    key_map = {**_KEY_MAP, **(key_map or {})}
    lengths = {name: len(value) for name, value in columns.items()}
    if not lengths:
        raise ValueError("lerobot_columns_to_tensordict: expected at least one column, got none.")
    n = next(iter(lengths.values()))
    wrong = {name: length for name, length in lengths.items() if length != n}
    if wrong:
        raise ValueError(
            f"lerobot_columns_to_tensordict: expected every column to have {n} rows (as "
            f"{next(iter(lengths))!r}), got {wrong}."
        )
    out = TensorDict(batch_size=[n])
    for name, value in columns.items():
        target = _target(name, key_map)
        if isinstance(value, list | tuple):
            if all(isinstance(item, str) for item in value):
                out.set(target, NonTensorStack(*value))
                continue
            if any(isinstance(item, str) for item in value):
                raise ValueError(
                    f"lerobot_columns_to_tensordict: column {name!r} mixes strings and other "
                    f"values; expected one kind."
                )
        tensor = torch.as_tensor(value)
        if isinstance(target, tuple) and target[0] == "next" and tensor.dim() == 1:
            tensor = tensor.unsqueeze(-1)
        out.set(target, tensor)
    return out


class LeRobotExperienceReplay(BaseDatasetExperienceReplay):
    """A LeRobot dataset (its local snapshot: ``meta/info.json`` and the frame parquets,
    read with pyarrow) as a replay buffer of frames.

    The snapshot lives in ``root/<repo_id>/`` (as ``huggingface_hub`` lays it out); its
    numeric columns are converted once (see :func:`lerobot_columns_to_tensordict` for the
    keys) into memory-mapped rows under ``root/<repo_id>/memmap/``, in the parquet files'
    order. Each row also holds ``("next", "done")`` (the file's ``next.done``, else True at
    each episode's last frame), ``("next", "terminated")`` (the same) and
    ``("next", "truncated")`` (False). The task strings of ``meta/tasks.jsonl`` go to
    :attr:`metadata`. ``SliceSampler(traj_key="episode")`` samples sub-trajectories.

    Not built here (documented in the codemod's map): downloading the snapshot (fetch it
    with ``huggingface_hub.snapshot_download(repo_id, repo_type="dataset",
    local_dir=root / repo_id)``) and decoding video columns (``dtype == "video"``
    features are left out and listed in :attr:`metadata` under ``"video_keys"``).

    Args:
        repo_id: the dataset's hub id, e.g. ``"lerobot/pusht"``.

    Keyword Args:
        root: the folder of the snapshots. Defaults to ``~/.cache/rl_buffers/lerobot``.
        batch_size: default batch size of ``sample()``.
        key_map: overrides of the column names' targets.
        sampler, writer, collate_fn, transform, prefetch, pin_memory: as
            :class:`ReplayBuffer` (the writer defaults to an :class:`ImmutableDatasetWriter`).

    Raises:
        ImportError: pyarrow is not installed.
        FileNotFoundError: the snapshot (``meta/info.json`` or a parquet file) is missing.
        ValueError: a file is not a parquet file or ``info.json`` is not JSON.
    """

    def __init__(
        self,
        repo_id: str,
        *,
        root: str | Path | None = None,
        batch_size: int | None = None,
        key_map: Mapping[str, Any] | None = None,
        sampler: Any = None,
        writer: Any = None,
        collate_fn: Any = None,
        transform: Any = None,
        prefetch: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        name = type(self).__name__
        if not isinstance(repo_id, str) or not repo_id or ".." in Path(repo_id).parts:
            raise ValueError(f"{name}: expected repo_id such as 'lerobot/pusht', got {repo_id!r}.")
        _import_pyarrow(name)
        self.repo_id = self.dataset_id = repo_id
        self.root = Path(root) if root is not None else Path.home() / ".cache/rl_buffers/lerobot"
        self.key_map = dict(key_map or {})
        self._open(
            writer=writer,
            sampler=sampler,
            collate_fn=collate_fn,
            batch_size=batch_size,
            transform=transform,
            prefetch=prefetch,
            pin_memory=pin_memory,
        )

    @property
    def snapshot_path(self) -> Path:
        """The snapshot read, ``root/<repo_id>``."""
        return self.root / self.repo_id

    @property
    def data_path(self) -> Path:
        """The folder of the converted rows, ``root/<repo_id>/memmap``."""
        return self.snapshot_path / "memmap"

    def _convert(self, folder: Path) -> dict[str, Any]:
        name = type(self).__name__
        info_file = self.snapshot_path / "meta" / "info.json"
        if not info_file.exists():
            raise FileNotFoundError(
                f"{name}: {info_file} does not exist; download the snapshot first "
                f"(huggingface_hub.snapshot_download({self.repo_id!r}, repo_type='dataset', "
                f"local_dir={str(self.snapshot_path)!r}))."
            )
        try:
            info = json.loads(info_file.read_text())
        except ValueError as error:
            raise ValueError(f"{name}: {info_file} is not JSON ({error}).") from error
        features = info.get("features", {})
        videos = sorted(key for key, spec in features.items() if spec.get("dtype") == "video")
        files = sorted((self.snapshot_path / "data").rglob("*.parquet"))
        if not files:
            raise FileNotFoundError(
                f"{name}: no parquet file under {self.snapshot_path / 'data'}; the snapshot is "
                f"incomplete."
            )
        columns = _read_parquets(name, files, skip=set(videos))
        rows = lerobot_columns_to_tensordict(columns, key_map=self.key_map)
        n = rows.shape[0]
        if ("next", "done") not in rows.keys(include_nested=True):
            episode = rows.get("episode", None)
            done = torch.zeros(n, 1, dtype=torch.bool)
            if episode is not None and n:
                done[:-1, 0] = episode[1:] != episode[:-1]
                done[-1] = True
            rows.set(("next", "done"), done)
        done = rows.get(("next", "done")).bool()
        rows.set(("next", "done"), done)
        rows.set(("next", "terminated"), done.clone())
        rows.set(("next", "truncated"), torch.zeros_like(done))
        rows.memmap(prefix=folder, existsok=True)
        return {
            "fps": info.get("fps"),
            "codebase_version": info.get("codebase_version"),
            "video_keys": videos,
            "tasks": _tasks(self.snapshot_path / "meta"),
        }


def _import_pyarrow(where: str) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ImportError(f'{where} needs pyarrow: pip install "rl-buffers[lerobot]"') from error
    return pq


def _read_parquets(where: str, files: list[Path], skip: set[str]) -> dict[str, Any]:
    pq = _import_pyarrow(where)
    import pyarrow as pa

    parts: dict[str, list[np.ndarray]] = {}
    for file in files:
        try:
            table = pq.read_table(file)
        except (pa.ArrowInvalid, OSError) as error:
            raise ValueError(
                f"{where}: {file} is not a readable parquet file ({error})."
            ) from error
        for name in table.column_names:
            if name in skip:
                continue
            array = table.column(name).combine_chunks()
            kind = array.type
            if (
                pa.types.is_list(kind)
                or pa.types.is_fixed_size_list(kind)
                or pa.types.is_large_list(kind)
            ):
                flat = array.flatten().to_numpy(zero_copy_only=False)
                values = flat.reshape(len(array), -1) if len(array) else flat.reshape(0, 0)
            elif (
                pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
            ):
                values = array.to_numpy(zero_copy_only=False)
            else:
                continue  # strings, images, structs: not numeric frame data
            parts.setdefault(name, []).append(values)
    return {name: torch.from_numpy(np.concatenate(chunks)) for name, chunks in parts.items()}


def _tasks(meta: Path) -> dict[str, str]:
    tasks_file = meta / "tasks.jsonl"
    if not tasks_file.exists():
        return {}
    out = {}
    for line in tasks_file.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out[str(row.get("task_index"))] = row.get("task")
    return out
