"""LeRobotExperienceReplay: a LeRobot dataset's parquet frames (pyarrow) and mp4 videos (PyAV)
as a replay buffer, downloaded from the Hugging Face hub when missing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorStack, TensorDict
from torch import Tensor

from rl_buffers.datasets._download import partial_path
from rl_buffers.datasets._video import decode_frames, import_av
from rl_buffers.datasets.base import BaseDatasetExperienceReplay
from rl_buffers.samplers.slice import SliceSampler

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
    """A LeRobot dataset (its snapshot: ``meta/info.json``, the frame parquets read with
    pyarrow and the mp4 videos decoded with PyAV) as a replay buffer of frames.

    The snapshot lives in ``root/<repo_id>/`` (as ``huggingface_hub`` lays it out). A missing
    snapshot of LeRobot's v2 layout is downloaded from ``endpoint`` (the Hugging Face hub:
    ``<endpoint>/datasets/<repo_id>/resolve/<revision>/<file>``): ``meta/info.json``,
    ``meta/episodes.jsonl``, ``meta/tasks.jsonl``, then each episode's parquet and videos at
    the addresses of ``info.json``'s ``data_path`` and ``video_path`` templates. A file is
    downloaded to ``<file>.part`` and renamed once complete, so an interrupted download
    leaves only ``.part`` files, which the next call resumes.

    The snapshot is converted once into memory-mapped rows under ``root/<repo_id>/memmap/``
    (``memmap-no-video/`` with ``decode_video=False``), in episode order; the keys are those
    of :func:`lerobot_columns_to_tensordict` (``("observation", "state")``, ``"action"``,
    ``"episode"``, ``"frame"``, ``("next", "reward")``, ...). A video column
    ``observation.images.<cam>`` becomes ``("observation", "image", <cam>)``, ``uint8``
    ``[C, H, W]`` RGB frames: each row takes the video frame shown at the row's
    ``timestamp`` (else ``frame_index / fps``). Each row also holds ``("next", "done")``
    (the file's ``next.done``, else True at each episode's last frame),
    ``("next", "terminated")`` (the same) and ``("next", "truncated")`` (False). The task
    strings of ``meta/tasks.jsonl`` go to :attr:`metadata`.

    Args:
        repo_id: the dataset's hub id, e.g. ``"lerobot/pusht"``.

    Keyword Args:
        root: the folder of the snapshots. Defaults to ``~/.cache/rl_buffers/lerobot``.
        download: whether missing snapshot files are downloaded. Defaults to True.
        endpoint: the hub's address. Defaults to ``"https://huggingface.co"``.
        revision: the snapshot's branch or tag. Defaults to ``"main"``.
        batch_size: default batch size of ``sample()``.
        num_slices, slice_len: build a ``SliceSampler(traj_key="episode")`` with this
            many slices (or this slice length) per batch; one at most, and not with
            ``sampler``.
        strict_length: the slice sampler's ``strict_length``. Defaults to True.
        key_map: overrides of the column names' targets.
        decode_video: decode the video columns (True, the default) or leave them out
            (their names are listed in :attr:`metadata` under ``"video_keys"``).
        sampler, writer, collate_fn, transform, prefetch, pin_memory: as
            :class:`ReplayBuffer` (the writer defaults to an :class:`ImmutableDatasetWriter`).

    Raises:
        ImportError: pyarrow (or, for videos, PyAV) is not installed.
        FileNotFoundError: a snapshot file is missing and ``download`` is False.
        ConnectionError: a download failed (the message names the URL).
        ValueError: a file is not a parquet file or a readable video, ``info.json`` is not
            JSON, a video has no frame at a row's timestamp, or a bad argument.
    """

    def __init__(
        self,
        repo_id: str,
        *,
        root: str | Path | None = None,
        download: bool = True,
        endpoint: str = "https://huggingface.co",
        revision: str = "main",
        batch_size: int | None = None,
        num_slices: int | None = None,
        slice_len: int | None = None,
        strict_length: bool = True,
        key_map: Mapping[str, Any] | None = None,
        decode_video: bool = True,
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
        if num_slices is not None or slice_len is not None:
            if sampler is not None:
                raise ValueError(
                    f"{name}: expected a sampler or num_slices/slice_len, got both; pass the "
                    f"slice lengths to your sampler."
                )
            sampler = SliceSampler(
                num_slices, slice_len, traj_key="episode", strict_length=strict_length
            )
        _import_pyarrow(name)
        if decode_video:
            import_av(name)
        self.repo_id = repo_id
        self._locate(repo_id, root, "lerobot", download)
        self.endpoint = endpoint.rstrip("/")
        self.revision = revision
        self.decode_video = decode_video
        self.key_map = dict(key_map or {})
        self._open(batch_size, sampler, writer, collate_fn, transform, prefetch, pin_memory)

    @property
    def snapshot_path(self) -> Path:
        """The snapshot read, ``root/<repo_id>``."""
        return self.root / self.repo_id

    @property
    def data_path(self) -> Path:
        """The folder of the converted rows, ``root/<repo_id>/memmap`` (``memmap-no-video``
        when the videos are left out)."""
        return self.snapshot_path / ("memmap" if self.decode_video else "memmap-no-video")

    def url_of(self, file: str) -> str:
        """The download address of the snapshot's ``file`` (a path relative to it)."""
        return f"{self.endpoint}/datasets/{self.repo_id}/resolve/{self.revision}/{file}"

    def _need(self, file: str) -> Path:
        """The snapshot's ``file``, downloaded if missing."""
        snapshot = (
            f"the snapshot's files (huggingface_hub.snapshot_download({self.repo_id!r}, "
            f"repo_type='dataset', local_dir={str(self.snapshot_path)!r}) writes them)"
        )
        return self._source_file(self.snapshot_path / file, self.url_of(file), snapshot)

    def _optional(self, file: str) -> Path | None:
        """The snapshot's ``file``, downloaded if missing; None when it is not there and not
        served (older snapshots lack some metadata files)."""
        try:
            return self._need(file)
        except (FileNotFoundError, ConnectionError):
            if partial_path(self.snapshot_path / file).exists():
                raise
            return None

    def _convert(self, folder: Path) -> dict[str, Any]:
        name = type(self).__name__
        info_file = self._need("meta/info.json")
        try:
            info = json.loads(info_file.read_text())
        except ValueError as error:
            raise ValueError(f"{name}: {info_file} is not JSON ({error}).") from error
        if not isinstance(info, dict):
            raise ValueError(f"{name}: {info_file}: expected a JSON object, got {info!r:.80}.")
        fps = float(info.get("fps") or 0) or None
        features = info.get("features", {})
        videos = sorted(key for key, spec in features.items() if spec.get("dtype") == "video")
        layout = _v2_layout(info)
        tasks_file = self._optional("meta/tasks.jsonl")
        if layout is not None:
            self._optional("meta/episodes.jsonl")
            files = [self._need(file) for file in layout.data_files()]
        else:
            files = sorted((self.snapshot_path / "data").rglob("*.parquet"))
        if not files:
            raise FileNotFoundError(
                f"{name}: no parquet file under {self.snapshot_path / 'data'}; the snapshot is "
                f"incomplete."
            )
        if self.decode_video and videos:
            if layout is None or fps is None:
                raise ValueError(
                    f"{name}: {info_file} has video columns {videos} but no v2 'video_path' "
                    f"template and 'fps' (codebase_version "
                    f"{info.get('codebase_version')!r}); only LeRobot's v2 layout's videos are "
                    f"decoded. Pass decode_video=False to leave them out."
                )
            for file in layout.video_files(videos):
                self._need(file)
        columns = _read_parquets(name, files, skip=set(videos))
        rows = lerobot_columns_to_tensordict(columns, key_map=self.key_map)
        _add_flags(rows)
        if self.decode_video and videos and layout is not None and fps is not None:
            rows = self._write_with_videos(rows, columns, videos, layout, fps, folder)
        else:
            rows.memmap(prefix=folder, existsok=True)
        return {
            "fps": info.get("fps"),
            "codebase_version": info.get("codebase_version"),
            "video_keys": videos,
            "videos_decoded": bool(self.decode_video and videos),
            "tasks": _tasks(tasks_file),
        }

    def _write_with_videos(
        self,
        rows: TensorDict,
        columns: Mapping[str, Tensor],
        videos: list[str],
        layout: _V2Layout,
        fps: float,
        folder: Path,
    ) -> TensorDict:
        """Memory-maps ``rows`` with each video column's frames (decoded one episode at a
        time into the memory-mapped file, so a whole video never sits in memory)."""
        name = type(self).__name__
        if "episode_index" not in columns:
            raise ValueError(f"{name}: the parquet files have no 'episode_index' column.")
        episode = columns["episode_index"].long()
        if "timestamp" in columns:
            times = columns["timestamp"].double()
        elif "frame_index" in columns:
            times = columns["frame_index"].double() / fps
        else:
            raise ValueError(
                f"{name}: the parquet files have neither 'timestamp' nor 'frame_index'; the "
                f"video frames of the rows are unknown."
            )
        order = [int(e) for e in torch.unique_consecutive(episode)]
        first: dict[str, Tensor] = {}
        for key in videos:
            index = (episode == order[0]).nonzero().squeeze(-1)
            path = self.snapshot_path / layout.video_file(key, order[0])
            first[key] = decode_frames(name, path, times[index], fps)
            shape = first[key].shape[1:]
            holder = torch.zeros((1, *shape), dtype=torch.uint8).expand(len(episode), *shape)
            rows.set(_target(key, {**_KEY_MAP, **self.key_map}), holder)
        rows = rows.memmap(prefix=folder, existsok=True)
        for key in videos:
            target = rows.get(_target(key, {**_KEY_MAP, **self.key_map}))
            for e in order:
                index = (episode == e).nonzero().squeeze(-1)
                if e == order[0]:
                    frames = first.pop(key)
                else:
                    path = self.snapshot_path / layout.video_file(key, e)
                    frames = decode_frames(name, path, times[index], fps)
                if frames.shape[1:] != target.shape[1:]:
                    raise ValueError(
                        f"{name}: {self.snapshot_path / layout.video_file(key, e)} has frames "
                        f"of shape {tuple(frames.shape[1:])}, expected "
                        f"{tuple(target.shape[1:])} (as episode {order[0]}'s)."
                    )
                target[index] = frames
        return rows


class _V2Layout:
    """The file names of a LeRobot v2 snapshot (``info.json``'s path templates)."""

    def __init__(self, info: Mapping[str, Any]) -> None:
        self.data_path = str(info["data_path"])
        self.video_path = info.get("video_path")
        self.episodes = int(info["total_episodes"])
        self.chunk = int(info.get("chunks_size") or 1000)

    def data_files(self) -> list[str]:
        return [
            self.data_path.format(episode_chunk=e // self.chunk, episode_index=e)
            for e in range(self.episodes)
        ]

    def video_file(self, key: str, episode: int) -> str:
        return str(self.video_path).format(
            episode_chunk=episode // self.chunk, video_key=key, episode_index=episode
        )

    def video_files(self, keys: list[str]) -> list[str]:
        return [self.video_file(key, e) for e in range(self.episodes) for key in keys]


def _v2_layout(info: Mapping[str, Any]) -> _V2Layout | None:
    """The v2 layout of ``info.json`` (None when it has no episode templates)."""
    data_path = info.get("data_path")
    if not isinstance(data_path, str) or "episode_index" not in data_path:
        return None
    if not isinstance(info.get("total_episodes"), int):
        return None
    return _V2Layout(info)


def _add_flags(rows: TensorDict) -> None:
    """``("next", "done"/"terminated"/"truncated")``: the file's ``next.done``, else the
    last frame of each episode."""
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


def _tasks(tasks_file: Path | None) -> dict[str, str]:
    if tasks_file is None or not tasks_file.exists():
        return {}
    out = {}
    for line in tasks_file.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out[str(row.get("task_index"))] = row.get("task")
    return out
