"""H5Split and H5Combine: nested trajectories to one group per trajectory (an HDF5 layout)
and back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_buffers.datasets.ted_nested import _nest

__all__ = ["H5Combine", "H5Split"]

_PREFIX = "traj_"


class H5Split:
    """Splits :class:`TED2Nested`'s output (``[trajectories]`` of nested tensors) into a
    TensorDict with one entry per trajectory, ``"traj_0"``, ``"traj_1"``... (zero-padded to
    sort in order), each a TensorDict of that trajectory's steps.

    With ``path``, the trajectories are also written to that HDF5 file with h5py, one group
    per trajectory (written under a temporary name, then renamed into place), for
    :class:`H5Combine` to read back.

    Raises:
        TypeError: (at call) the data is not a TensorDict with one batch dim.
        ImportError: (with ``path``) h5py is not installed.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import H5Combine, H5Split, Nested2TED, TED2Nested
        >>> done = torch.tensor([True, False, True])
        >>> ted = TensorDict({"obs": torch.arange(3.0), "next": {"done": done}}, [3])
        >>> split = H5Split()(TED2Nested()(ted))
        >>> sorted(split.keys()), split["traj_1", "obs"].tolist()
        (['traj_0', 'traj_1'], [1.0, 2.0])
        >>> bool((Nested2TED()(H5Combine()(split)) == ted).all())
        True
    """

    def __call__(self, data: TensorDictBase, path: str | Path | None = None) -> TensorDictBase:
        if not isinstance(data, TensorDictBase) or data.batch_dims != 1:
            raise TypeError(
                f"H5Split: expected TED2Nested's output, a TensorDict of one batch dim "
                f"(trajectories), got {type(data).__name__}."
            )
        count = data.shape[0]
        width = len(str(max(count - 1, 0)))
        split = TensorDict(
            {f"{_PREFIX}{str(i).zfill(width)}": _trajectory(data, i) for i in range(count)},
            batch_size=[],
        )
        if path is not None:
            _write_h5(split, Path(path))
        return split


class H5Combine:
    """Joins :class:`H5Split`'s trajectories (a TensorDict, or the path of the HDF5 file it
    wrote) into :class:`TED2Nested`'s layout: ``[trajectories]`` of nested tensors.

    Raises:
        FileNotFoundError: (at call) the file does not exist.
        ValueError: (at call) no ``"traj_*"`` entry, or the file is not an HDF5 file.
        ImportError: (with a path) h5py is not installed.
    """

    def __call__(self, data: TensorDictBase | str | Path, out: Any = None) -> TensorDictBase:
        if isinstance(data, str | Path):
            data = _read_h5(Path(data))
        names = sorted(key for key in data.keys() if str(key).startswith(_PREFIX))
        if not names:
            raise ValueError(
                f"H5Combine: expected H5Split's entries {_PREFIX}0, {_PREFIX}1, ..., got "
                f"{sorted(data.keys())}."
            )
        trajectories = [data.get(name) for name in names]
        nested = TensorDict(batch_size=[len(names)])
        for key in trajectories[0].keys(include_nested=True, leaves_only=True):
            nested.set(key, _nest([trajectory.get(key) for trajectory in trajectories]))
        if out is not None:
            out.update(nested)
            return out
        return nested


def _trajectory(data: TensorDictBase, i: int) -> TensorDict:
    columns = {
        key: value.unbind(0)[i] for key, value in data.items(include_nested=True, leaves_only=True)
    }
    steps = next(iter(columns.values())).shape[0] if columns else 0
    return TensorDict(columns, batch_size=[steps])


def _import_h5py() -> Any:
    try:
        import h5py
    except ImportError as error:
        raise ImportError(
            'H5Split/H5Combine files need h5py: pip install "rl-buffers[h5py]"'
        ) from error
    return h5py


def _write_h5(split: TensorDictBase, path: Path) -> None:
    h5py = _import_h5py()
    tmp = path.with_name(path.name + ".tmp")
    try:
        with h5py.File(tmp, "w") as handle:
            for name, trajectory in split.items():
                group = handle.create_group(name)
                for key, value in trajectory.items(include_nested=True, leaves_only=True):
                    key = key if isinstance(key, tuple) else (key,)
                    dataset = group.create_dataset("/".join(key), data=value.cpu().numpy())
                    dataset.attrs["dtype"] = str(value.dtype).removeprefix("torch.")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _read_h5(path: Path) -> TensorDict:
    h5py = _import_h5py()
    if not path.exists():
        raise FileNotFoundError(
            f"H5Combine: {path} does not exist; write it with H5Split()(data, path)."
        )
    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise ValueError(f"H5Combine: {path} is not a readable HDF5 file ({error}).") from error
    out = TensorDict(batch_size=[])
    with handle:
        for name, group in handle.items():
            columns: dict[tuple[str, ...], torch.Tensor] = {}

            def visit(key: str, item: Any, columns: dict = columns) -> None:
                if isinstance(item, h5py.Dataset):
                    dtype = getattr(torch, item.attrs.get("dtype", "float32"))
                    columns[tuple(key.split("/"))] = torch.from_numpy(item[()]).to(dtype)

            group.visititems(visit)
            steps = next(iter(columns.values())).shape[0] if columns else 0
            out.set(name, TensorDict(columns, batch_size=[steps]))
    return out
