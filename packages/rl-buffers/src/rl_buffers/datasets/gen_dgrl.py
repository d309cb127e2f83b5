"""GenDGRLExperienceReplay: the Gen-DGRL Procgen datasets (a tar of numpy episodes) as TED
rows."""

from __future__ import annotations

import io
import lzma
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from rl_buffers.datasets._parts import write_parts
from rl_buffers.datasets.base import BaseDatasetExperienceReplay

__all__ = ["GenDGRLExperienceReplay"]

_SERVER = "https://dl.fbaipublicfiles.com/DGRL/Procgen/Datasets/Compressed"
_GAMES = (
    "bigfish", "bossfight", "caveflyer", "chaser", "climber", "coinrun", "dodgeball",
    "fruitbot", "heist", "jumper", "leaper", "maze", "miner", "ninja", "plunder", "starpilot",
)  # fmt: skip
_CATEGORIES = {
    "1M_E": "1M/level_200/expert",
    "1M_S": "1M/level_200/suboptimal",
    "10M": "10M/level_200/expert",
    "25M": "25M/level_200/expert",
    "level_1_E": "100k/level_1/expert",
    "level_1_S": "100k/level_1/suboptimal",
    "level_40_E": "100k/level_40/expert",
    "level_40_S": "100k/level_40/suboptimal",
}
_KEYS = ("observations", "actions", "rewards", "dones")


class GenDGRLExperienceReplay(BaseDatasetExperienceReplay):
    """A Gen-DGRL dataset (Mediratta et al. 2023: Procgen, offline) as a TED replay buffer.

    The source is the published archive ``<game>.tar.xz`` (read with ``tarfile``), one
    numpy ``.npy`` file per trajectory, each a pickled dict of ``observations``
    (``[T + 1, ...]``), ``actions``, ``rewards`` and ``dones`` (``[T]``). It is kept as
    ``root/<dataset_id>.tar.xz`` (downloaded from the dataset's server, or ``url``, when
    missing, resumable) and converted once into memory-mapped rows under
    ``root/<dataset_id>/``, one trajectory in memory at a time. Row ``t`` of a trajectory
    gives ``"observation"`` (``uint8``), ``"action"``, ``("next", "observation")``,
    ``("next", "reward")``, ``("next", "done")`` and ``("next", "terminated")`` (``dones``),
    ``("next", "truncated")`` and the root ``"done"``/``"terminated"``/``"truncated"``
    (False), with TorchRL's shapes (the file's: no trailing dim is added), and
    ``"episode"`` (the trajectory's number in the archive).

    The ``.npy`` files are pickles (the published format): read only archives you trust.

    Args:
        dataset_id: ``"<game>-<category>"``, e.g. ``"bigfish-1M_E"`` (categories:
            ``1M_E``, ``1M_S``, ``10M``, ``25M``, ``level_1_E``, ``level_1_S``,
            ``level_40_E``, ``level_40_S``).
        batch_size: default batch size of ``sample()``.

    Keyword Args:
        root: the folder of the sources and converted datasets. Defaults to
            ``~/.cache/rl_buffers/gen_dgrl``.
        download: whether a missing archive is downloaded. Defaults to True.
        url: where to download the archive from. Defaults to the dataset's server.
        sha256: the expected SHA-256 of the downloaded archive.
        sampler, writer, collate_fn, transform, prefetch, pin_memory: as
            :class:`ReplayBuffer` (the writer defaults to an :class:`ImmutableDatasetWriter`).

    Raises:
        ValueError: ``dataset_id`` names an unknown game or category, or the archive is not a
            tar of numpy trajectories in Gen-DGRL's layout (truncated, another format).
        FileNotFoundError: the archive is missing and ``download`` is False.
        ConnectionError: a download failed (the message names the URL).
    """

    available_datasets = tuple(f"{game}-{category}" for category in _CATEGORIES for game in _GAMES)

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
        game, _, category = dataset_id.partition("-") if isinstance(dataset_id, str) else ("",) * 3
        if game not in _GAMES or category not in _CATEGORIES:
            raise ValueError(
                f"{name}: unknown dataset_id {dataset_id!r}; expected '<game>-<category>' with "
                f"a game of {list(_GAMES)} and a category of {list(_CATEGORIES)}, e.g. "
                f"'bigfish-1M_E'."
            )
        self._locate(dataset_id, root, "gen_dgrl", download)
        self.url = url or f"{_SERVER}/{_CATEGORIES[category]}/{game}.tar.xz"
        self.sha256 = sha256
        self._open(batch_size, sampler, writer, collate_fn, transform, prefetch, pin_memory)

    @property
    def source_path(self) -> Path:
        """The archive read, ``root/<dataset_id>.tar.xz``."""
        return self.root / f"{self.dataset_id}.tar.xz"

    def _convert(self, folder: Path) -> dict[str, Any]:
        source = self._source_file(
            self.source_path, self.url, "the dataset's archive", sha256=self.sha256
        )
        where = f"{type(self).__name__}: {source}"

        def parts() -> Iterator[tuple[str, TensorDict]]:
            for episode, (member, arrays) in enumerate(_trajectories(source)):
                yield f"{source}:{member}", _rows(f"{where}:{member}", arrays, episode)

        steps = write_parts(folder, parts, where)
        return {"steps": steps, "url": self.url}


def _trajectories(source: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """The archive's ``.npy`` members, in name order, each loaded as a dict of arrays."""
    where = f"GenDGRLExperienceReplay: {source}"
    errors = (tarfile.TarError, lzma.LZMAError, zlib.error, EOFError, OSError, ValueError)
    try:
        with tarfile.open(source, "r:*") as archive:
            members = sorted(
                (m for m in archive.getmembers() if m.isfile() and m.name.endswith(".npy")),
                key=lambda m: m.name,
            )
            if not members:
                raise ValueError(f"{where} holds no .npy trajectory.")
            for member in members:
                handle = archive.extractfile(member)
                raw = handle.read() if handle is not None else b""
                loaded = np.load(io.BytesIO(raw), allow_pickle=True)
                value = loaded.item() if loaded.dtype == object and loaded.shape == () else None
                if not isinstance(value, dict):
                    raise ValueError(f"{where}:{member.name} is not a pickled dict of arrays.")
                yield member.name, value
    except errors as error:
        if isinstance(error, ValueError) and str(error).startswith(where):
            raise
        raise ValueError(
            f"{where} is not a readable tar of numpy trajectories ({error}); a truncated "
            f"download or another format. Remove it to download it again."
        ) from error


def _rows(where: str, arrays: dict[str, Any], episode: int) -> TensorDict:
    missing = [key for key in _KEYS if key not in arrays]
    if missing:
        raise ValueError(
            f"{where} is not in Gen-DGRL's layout: missing {missing} (it has {sorted(arrays)})."
        )
    observations = torch.as_tensor(np.asarray(arrays["observations"])).to(torch.uint8)
    n = len(arrays["rewards"])
    lengths = {key: len(arrays[key]) for key in ("actions", "dones")}
    if any(length != n for length in lengths.values()) or len(observations) != n + 1:
        raise ValueError(
            f"{where}: expected {n + 1} observations and {n} actions and dones (as the "
            f"{n} rewards), got {len(observations)} observations and {lengths}."
        )
    done = torch.as_tensor(np.asarray(arrays["dones"])).bool().reshape(n, 1)
    false = torch.zeros_like(done)
    return TensorDict(
        {
            "observation": observations[:n],
            "action": torch.as_tensor(np.asarray(arrays["actions"])),
            "episode": torch.full((n,), episode, dtype=torch.long),
            "done": false,
            "terminated": false.clone(),
            "truncated": false.clone(),
            "next": {
                "observation": observations[1:],
                "reward": torch.as_tensor(np.asarray(arrays["rewards"])),
                "done": done,
                "terminated": done.clone(),
                "truncated": false.clone(),
            },
        },
        batch_size=[n],
    )
