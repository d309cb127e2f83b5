"""D4RLExperienceReplay: D4RL's published HDF5 datasets as TED replay buffers (h5py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from torch import Tensor

from rl_buffers.datasets.base import BaseDatasetExperienceReplay

__all__ = ["D4RLExperienceReplay", "d4rl_url"]

_SERVER = "http://rail.eecs.berkeley.edu/datasets/offline_rl"
_LOCOMOTION = ("halfcheetah", "hopper", "walker2d", "ant")
_LOCOMOTION_KINDS = ("random", "medium", "expert", "medium-replay", "full-replay", "medium-expert")
_MAZES = ("umaze", "medium", "large")
_REQUIRED = ("observations", "actions", "rewards", "terminals")


def d4rl_url(dataset_id: str) -> str | None:
    """The address D4RL publishes ``dataset_id``'s HDF5 file at (the MuJoCo locomotion
    ``-v2`` datasets and the ``maze2d-*-v1`` ones), None for another id.

    Examples:
        >>> d4rl_url("hopper-medium-replay-v2").rsplit("/", 2)[1:]
        ['gym_mujoco_v2', 'hopper_medium_replay-v2.hdf5']
        >>> d4rl_url("unknown-v0") is None
        True
    """
    for env in _LOCOMOTION:
        for kind in _LOCOMOTION_KINDS:
            if dataset_id == f"{env}-{kind}-v2":
                return f"{_SERVER}/gym_mujoco_v2/{env}_{kind.replace('-', '_')}-v2.hdf5"
    for maze in _MAZES:
        for reward, suffix in (("sparse", ""), ("dense", "-dense")):
            if dataset_id == f"maze2d-{maze}{suffix}-v1":
                return f"{_SERVER}/maze2d/maze2d-{maze}-{reward}-v1.hdf5"
    return None


class D4RLExperienceReplay(BaseDatasetExperienceReplay):
    """A D4RL dataset (its published HDF5 layout, read with h5py) as a TED replay buffer.

    The source file is ``root/<dataset_id>.hdf5``: put a file there (one written by D4RL, or
    your own in its layout: ``observations``, ``actions``, ``rewards``, ``terminals`` and
    optionally ``timeouts``, ``next_observations``, an ``infos`` group and a ``metadata``
    group), or let it be downloaded from D4RL's address for ``dataset_id`` (or ``url``),
    resuming an interrupted download (an interrupted one leaves only
    ``root/<dataset_id>.hdf5.part``, which the next call continues). It is converted once
    into memory-mapped TED rows under ``root/<dataset_id>/`` (see
    :class:`BaseDatasetExperienceReplay`).

    The rows follow TorchRL's for the same file: row ``t`` of the file gives
    ``"observation"``, ``"action"`` and ``("next", "observation")`` (``next_observations``,
    else row ``t + 1``'s observation), ``("next", "reward")`` ``[1]``,
    ``("next", "terminated")`` (``terminals``), ``("next", "truncated")`` (``timeouts``,
    when the file has them) and ``("next", "done")``; the root ``"reward"``, ``"done"``,
    ``"terminated"`` and ``"truncated"`` are the previous row's (False and 0 on the first);
    ``("next", "observation")`` is zeroed where ``("next", "done")``; the last row of the
    file is dropped (its successor is unknown). ``infos`` entries go to ``"info"`` and
    ``("next", "info")``; ``metadata`` to :attr:`metadata`. A
    ``SliceSampler(end_key=("next", "done"))`` samples sub-trajectories that never cross
    an episode's end.

    Args:
        dataset_id: D4RL's id, e.g. ``"hopper-medium-v2"``.
        batch_size: default batch size of ``sample()``.

    Keyword Args:
        root: the folder of the source files and converted datasets. Defaults to
            ``~/.cache/rl_buffers/d4rl``.
        download: whether a missing source file is downloaded. Defaults to True.
        url: where to download from. Defaults to D4RL's address for ``dataset_id``
            (:func:`d4rl_url`).
        sha256: the expected SHA-256 of the downloaded file (D4RL publishes none).
        use_truncated_as_done: ``done = terminated | truncated`` (True, the default) or
            ``done = terminated``.
        split_trajs, from_env, direct_download, terminate_on_end: TorchRL's options of its
            D4RL-library path, which is not built here: only their defaults (``False``,
            ``False``, ``None`` or ``True``, ``None`` or ``True``) are accepted.
        sampler, writer, collate_fn, transform, prefetch, pin_memory: as
            :class:`ReplayBuffer` (the writer defaults to an
            :class:`ImmutableDatasetWriter`).

    Raises:
        ImportError: h5py is not installed.
        FileNotFoundError: the source file is missing and ``download`` is False.
        KeyError: the file is missing and ``dataset_id`` has no known address (pass ``url``).
        ConnectionError: the download failed (the message names the URL).
        ValueError: the file is not an HDF5 file in D4RL's layout (truncated, another
            format, missing or mismatched datasets), or an unsupported TorchRL option.

    Examples:
        >>> import tempfile, h5py, numpy as np
        >>> from rl_buffers.datasets import D4RLExperienceReplay
        >>> root = tempfile.mkdtemp()
        >>> with h5py.File(f"{root}/toy-v0.hdf5", "w") as f:
        ...     f["observations"] = np.arange(12, dtype=np.float32).reshape(6, 2)
        ...     f["actions"] = np.zeros((6, 1), dtype=np.float32)
        ...     f["rewards"] = np.ones(6, dtype=np.float32)
        ...     f["terminals"] = np.array([0, 0, 1, 0, 0, 0], dtype=bool)
        ...     f["timeouts"] = np.zeros(6, dtype=bool)
        >>> data = D4RLExperienceReplay("toy-v0", batch_size=4, root=root, download=False)
        >>> len(data), data[2]["next", "done"].item(), data[2]["next", "observation"].tolist()
        (5, True, [0.0, 0.0])
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
        use_truncated_as_done: bool = True,
        split_trajs: bool = False,
        from_env: bool = False,
        direct_download: bool | None = None,
        terminate_on_end: bool | None = None,
        sampler: Any = None,
        writer: Any = None,
        collate_fn: Any = None,
        transform: Any = None,
        prefetch: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        name = type(self).__name__
        if not isinstance(dataset_id, str) or not dataset_id or "/" in dataset_id:
            raise ValueError(
                f"{name}: expected dataset_id to be a D4RL id such as 'hopper-medium-v2', got "
                f"{dataset_id!r}."
            )
        unsupported = {
            "split_trajs": (split_trajs, (False,)),
            "from_env": (from_env, (False,)),
            "direct_download": (direct_download, (None, True)),
            "terminate_on_end": (terminate_on_end, (None, True)),
        }
        for option, (value, allowed) in unsupported.items():
            if value not in allowed:
                raise ValueError(
                    f"{name}: {option}={value!r} needs the D4RL library's loader, which is not "
                    f"built here; the published HDF5 file is read directly (accepted: "
                    f"{' or '.join(map(repr, allowed))}). Cut trajectories with a "
                    f"SliceSampler or TED2Nested."
                )
        _import_h5py(name)
        self._locate(dataset_id, root, "d4rl", download)
        self.url = url
        self.sha256 = sha256
        self.use_truncated_as_done = use_truncated_as_done
        self._open(batch_size, sampler, writer, collate_fn, transform, prefetch, pin_memory)

    @property
    def source_path(self) -> Path:
        """The HDF5 file read, ``root/<dataset_id>.hdf5``."""
        return self.root / f"{self.dataset_id}.hdf5"

    def _convert(self, folder: Path) -> dict[str, Any]:
        source, url = self.source_path, self.url or d4rl_url(self.dataset_id)
        if url is None and self.download and not source.exists():
            raise KeyError(
                f"{type(self).__name__}: unknown dataset_id {self.dataset_id!r}: no D4RL address "
                f"is known for it and {source} does not exist. Put its HDF5 file there or pass "
                f"url=."
            )
        self._source_file(source, url, "the dataset's HDF5 file", sha256=self.sha256)
        rows, metadata = _read_d4rl(source, self.use_truncated_as_done)
        rows.memmap(prefix=folder, existsok=True)
        return metadata

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.dataset_id!r}, len={len(self)}, root={str(self.root)!r})"
        )


def _import_h5py(where: str) -> Any:
    try:
        import h5py
    except ImportError as error:
        raise ImportError(f'{where} needs h5py: pip install "rl-buffers[h5py]"') from error
    return h5py


def _read_d4rl(path: Path, use_truncated_as_done: bool) -> tuple[TensorDict, dict[str, Any]]:
    """The TED rows and metadata of a D4RL HDF5 file (see :class:`D4RLExperienceReplay`)."""
    h5py = _import_h5py("D4RLExperienceReplay")
    where = f"D4RLExperienceReplay: {path}"
    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise ValueError(
            f"{where} is not a readable HDF5 file ({error}); a truncated download or another "
            f"format. Remove it and download it again."
        ) from error
    with handle:
        missing = [key for key in _REQUIRED if not isinstance(handle.get(key), h5py.Dataset)]
        if missing:
            raise ValueError(
                f"{where} is not in D4RL's layout: missing datasets {missing} (it has "
                f"{sorted(handle.keys())}); expected {list(_REQUIRED)}."
            )
        try:
            arrays = {
                key: handle[key][()] for key in handle if isinstance(handle[key], h5py.Dataset)
            }
            infos = _group(handle.get("infos"), h5py)
            metadata = _metadata(handle.get("metadata"), h5py)
        except OSError as error:  # (chunks past a truncation point)
            raise ValueError(
                f"{where} cannot be read whole ({error}); a truncated file?"
            ) from error
    steps = len(arrays["rewards"])
    lengths = {
        key: len(value)
        for key, value in [*arrays.items(), *infos.items()]
        if key in (*_REQUIRED, "timeouts", "next_observations") or key in infos
    }
    wrong = {key: n for key, n in lengths.items() if n != steps}
    if wrong:
        raise ValueError(
            f"{where}: expected every dataset to have {steps} rows (as 'rewards'), got {wrong}."
        )
    if steps < 2:
        raise ValueError(f"{where}: expected at least 2 rows, got {steps}.")
    n = steps - 1
    observation = torch.from_numpy(arrays["observations"])
    next_observation = (
        torch.from_numpy(arrays["next_observations"][:n])
        if "next_observations" in arrays
        else observation[1:].clone()
    )
    reward = torch.from_numpy(np.asarray(arrays["rewards"][:n])).reshape(n, 1)
    terminated = _flag(arrays["terminals"][:n])
    flags = {"terminated": terminated}
    if "timeouts" in arrays:
        flags["truncated"] = _flag(arrays["timeouts"][:n])
    done = (
        terminated | flags["truncated"]
        if use_truncated_as_done and "truncated" in flags
        else terminated.clone()
    )
    flags = {"done": done, **flags}
    next_observation[done.squeeze(-1)] = 0
    nxt: dict[str, Any] = {"observation": next_observation, "reward": reward, **flags}
    root: dict[str, Any] = {
        "observation": observation[:n].clone(),
        "action": torch.from_numpy(arrays["actions"][:n]),
        "reward": _previous(reward),
        **{key: _previous(value) for key, value in flags.items()},
    }
    if infos:
        root["info"] = {key: torch.from_numpy(value[:n]) for key, value in infos.items()}
        nxt["info"] = {key: torch.from_numpy(value[1 : n + 1]) for key, value in infos.items()}
    root["next"] = nxt
    return TensorDict(root, batch_size=[n]), metadata


def _flag(values: np.ndarray) -> Tensor:
    return torch.from_numpy(np.asarray(values)).bool().reshape(-1, 1)


def _previous(value: Tensor) -> Tensor:
    """``value`` moved one row down, the first row zero (the root reward and flags)."""
    out = torch.zeros_like(value)
    out[1:] = value[:-1]
    return out


def _group(group: Any, h5py: Any) -> dict[str, np.ndarray]:
    """The numeric datasets of an HDF5 group, by '/'-joined name ('' keys dropped)."""
    out: dict[str, np.ndarray] = {}
    if not isinstance(group, h5py.Group):
        return out

    def visit(key: str, item: Any) -> None:
        if isinstance(item, h5py.Dataset) and item.dtype.kind in "biuf" and item.shape:
            out[key.replace("/", ".")] = item[()]

    group.visititems(visit)
    return out


def _metadata(group: Any, h5py: Any) -> dict[str, Any]:
    """The metadata group's scalars (and its attributes) as JSON values."""
    out: dict[str, Any] = {}
    if not isinstance(group, h5py.Group):
        return out
    items = dict(group.attrs)

    def visit(key: str, item: Any) -> None:
        if isinstance(item, h5py.Dataset) and item.size <= 64:
            items[key] = item[()]

    group.visititems(visit)
    for key, value in items.items():
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, np.ndarray | np.generic):
            value = value.tolist()
        out[str(key)] = value if isinstance(value, str | int | float | bool | list) else str(value)
    return out
