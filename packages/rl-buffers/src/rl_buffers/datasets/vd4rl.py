"""VD4RLExperienceReplay: V-D4RL's pixel episodes (numpy ``.npz``) as TED rows."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from rl_buffers.datasets._parts import write_parts
from rl_buffers.datasets.base import BaseDatasetExperienceReplay

__all__ = ["VD4RLExperienceReplay"]

_HUB = "https://huggingface.co"
_REPO = "conglu/vd4rl"
_PIXELS = ("image", "observation")
_FLAGS = ("is_first", "is_last", "is_terminal")
_NAMED = (*_PIXELS, *_FLAGS, "reward", "action", "discount")


class VD4RLExperienceReplay(BaseDatasetExperienceReplay):
    """A V-D4RL dataset (Lu et al. 2022: DMControl from pixels) as a TED replay buffer.

    The source is the dataset's episodes, one numpy ``.npz`` archive each in DreamerV2's
    layout (read with numpy): ``image`` (or ``observation``) pixels, ``action``, ``reward``,
    ``discount``, ``is_first``, ``is_last``, ``is_terminal``, and any other per-step arrays
    (proprioceptive states). Step ``t``'s ``action`` and ``reward`` are those that led *to*
    step ``t`` (step 0's are padding), so row ``t`` pairs ``"pixels"`` (step ``t``) with step
    ``t + 1``'s ``action``, ``("next", "reward")`` ``[1]``, ``("next", "pixels")``,
    ``("next", "done")`` (``is_last``), ``("next", "terminated")`` (``is_terminal``),
    ``("next", "truncated")`` (done and not terminated) and ``"discount"``; ``"is_init"``
    is step ``t``'s ``is_first``; other arrays go to ``("state", name)`` and
    ``("next", "state", name)``; ``"episode"`` numbers the episodes; the root
    ``"done"``/``"terminated"``/``"truncated"`` are False. (TorchRL pairs step ``t``'s own
    action and reward with it, one step off.) Pixels keep the file's layout and dtype
    (``uint8``, ``[H, W, C]`` in the published files): add a ``ToTensorImage`` transform to
    get TorchRL's default float ``[C, H, W]``.

    The episodes are read from ``root/source/<dataset_id>/*.npz``; missing, they are
    downloaded from the hub (``<endpoint>/datasets/conglu/vd4rl``: the folder's listing,
    then each file, resumable). They are converted once into memory-mapped rows under
    ``root/<dataset_id>/``, one episode in memory at a time.

    Args:
        dataset_id: the dataset's folder in the hub repository, e.g.
            ``"main/walker_walk/random/64px"``.
        batch_size: default batch size of ``sample()``.

    Keyword Args:
        root: the folder of the sources and converted datasets. Defaults to
            ``~/.cache/rl_buffers/vd4rl``.
        download: whether a missing source folder is downloaded. Defaults to True.
        endpoint: the hub's address. Defaults to ``"https://huggingface.co"``.
        sampler, writer, collate_fn, transform, prefetch, pin_memory: as
            :class:`ReplayBuffer` (the writer defaults to an :class:`ImmutableDatasetWriter`).

    Raises:
        FileNotFoundError: the source folder has no ``.npz`` file and ``download`` is False,
            or the hub has no such folder.
        ConnectionError: a download failed (the message names the URL).
        ValueError: a file is not a numpy ``.npz`` archive in V-D4RL's layout (truncated,
            another format, no pixels, arrays of different lengths), or a bad
            ``dataset_id``.
    """

    def __init__(
        self,
        dataset_id: str,
        batch_size: int | None = None,
        *,
        root: str | Path | None = None,
        download: bool = True,
        endpoint: str = _HUB,
        sampler: Any = None,
        writer: Any = None,
        collate_fn: Any = None,
        transform: Any = None,
        prefetch: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        name = type(self).__name__
        parts = Path(dataset_id).parts if isinstance(dataset_id, str) and dataset_id else ()
        if not parts or ".." in parts or dataset_id.startswith("/"):
            raise ValueError(
                f"{name}: expected dataset_id to be a V-D4RL folder such as "
                f"'main/walker_walk/random/64px', got {dataset_id!r}."
            )
        self._locate(dataset_id.strip("/"), root, "vd4rl", download)
        self.endpoint = endpoint.rstrip("/")
        self._open(batch_size, sampler, writer, collate_fn, transform, prefetch, pin_memory)

    @property
    def source_path(self) -> Path:
        """The folder of the episode files, ``root/source/<dataset_id>``."""
        return self.root / "source" / self.dataset_id

    def _convert(self, folder: Path) -> dict[str, Any]:
        files = sorted(self.source_path.glob("*.npz"))
        if not files:
            files = self._fetch()
        where = f"{type(self).__name__}: {self.source_path}"

        def parts() -> Iterator[tuple[str, TensorDict]]:
            episode = 0
            for file in files:
                rows = _episode_rows(file, episode)
                if rows.shape[0]:
                    episode = int(rows["episode"][-1]) + 1
                yield str(file), rows

        steps = write_parts(folder, parts, where)
        return {"files": [file.name for file in files], "steps": steps}

    def _fetch(self) -> list[Path]:
        name = type(self).__name__
        self._refuse_download(self.source_path, "the dataset's files", "holds no .npz episode")
        listing = f"{self.endpoint}/api/datasets/{_REPO}/tree/main/vd4rl/{self.dataset_id}"
        entries = _read_json(name, listing, self.dataset_id)
        remote = sorted(
            entry["path"]
            for entry in entries
            if isinstance(entry, dict)
            and entry.get("type") == "file"
            and str(entry.get("path", "")).endswith(".npz")
        )
        if not remote:
            raise FileNotFoundError(
                f"{name}: the hub folder {listing} lists no .npz episode; V-D4RL's HDF5 "
                f"(DrQ+BC) folders are not read here. Pick a folder of .npz files."
            )
        files = []
        for path in remote:
            dest = self.source_path / Path(path).name
            url = f"{self.endpoint}/datasets/{_REPO}/resolve/main/{path}"
            files.append(self._source_file(dest, url, "the episode file"))
        return files


def _read_json(where: str, url: str, dataset_id: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise FileNotFoundError(
                f"{where}: unknown dataset_id {dataset_id!r}: {url} answered HTTP 404."
            ) from error
        raise ConnectionError(f"{where}: {url} answered HTTP {error.code}.") from error
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ConnectionError(
            f"{where}: cannot reach {url} ({reason}). Connect to the network, or put the "
            f"dataset's .npz files in the source folder yourself."
        ) from error
    except ValueError as error:
        raise ValueError(f"{where}: {url} did not answer JSON ({error}).") from error


def _load_npz(file: Path) -> dict[str, np.ndarray]:
    where = f"VD4RLExperienceReplay: {file}"
    try:
        with np.load(file, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(
            f"{where} is not a readable numpy .npz archive ({error}); a truncated download or "
            f"another format. Remove it to download it again."
        ) from error
    if not isinstance(arrays, dict):
        raise ValueError(f"{where} is not an .npz archive of named arrays.")
    return arrays


def _episode_rows(file: Path, first_episode: int) -> TensorDict:
    """The TED rows of one DreamerV2-layout episode file (see :class:`VD4RLExperienceReplay`)."""
    where = f"VD4RLExperienceReplay: {file}"
    arrays = _load_npz(file)
    pixels_key = next((key for key in _PIXELS if key in arrays), None)
    missing = [key for key in ("action", "reward") if key not in arrays]
    if pixels_key is None or missing:
        raise ValueError(
            f"{where} is not in V-D4RL's layout: expected 'image' (or 'observation'), 'action' "
            f"and 'reward' arrays, got {sorted(arrays)}."
        )
    steps = len(arrays["reward"])
    wrong = {key: len(a) for key, a in arrays.items() if a.ndim == 0 or len(a) != steps}
    if wrong:
        raise ValueError(f"{where}: expected every array to have {steps} steps, got {wrong}.")
    if steps < 2:
        raise ValueError(f"{where}: expected an episode of at least 2 steps, got {steps}.")
    n = steps - 1

    def flag(key: str, default: np.ndarray) -> torch.Tensor:
        value = arrays.get(key, default)
        return torch.from_numpy(np.asarray(value)).bool().reshape(steps)

    last_default = np.arange(steps) == steps - 1
    discount = arrays.get("discount")
    terminal_default = discount == 0 if discount is not None else np.zeros(steps, bool)
    first = flag("is_first", np.arange(steps) == 0)
    last = flag("is_last", last_default)
    terminal = flag("is_terminal", terminal_default)
    keep = ~first[1:]  # a step that starts an episode has no transition into it
    pixels = torch.from_numpy(arrays[pixels_key])
    now, after = torch.arange(n)[keep], torch.arange(1, steps)[keep]
    done, terminated = last[after].unsqueeze(-1), terminal[after].unsqueeze(-1)
    # step t's episode: the first one plus the episode starts after step 0 up to t
    episode_of_step = first_episode + first.long().cumsum(0) - first[0].long()
    episode = episode_of_step[now]
    false = torch.zeros_like(done)
    states = {k: torch.from_numpy(a) for k, a in arrays.items() if k not in _NAMED}
    rows: dict[str, Any] = {
        "pixels": pixels[now],
        "action": torch.from_numpy(arrays["action"])[after],
        "is_init": first[now],
        "episode": episode,
        "done": false,
        "terminated": false.clone(),
        "truncated": false.clone(),
        "next": {
            "pixels": pixels[after],
            "reward": torch.from_numpy(np.asarray(arrays["reward"])).float()[after].unsqueeze(-1),
            "done": done,
            "terminated": terminated,
            "truncated": done & ~terminated,
        },
    }
    if discount is not None:
        rows["discount"] = torch.from_numpy(np.asarray(discount)).float()[after].unsqueeze(-1)
    if states:
        rows["state"] = {k: v[now] for k, v in states.items()}
        rows["next"]["state"] = {k: v[after] for k, v in states.items()}
    return TensorDict(rows, batch_size=[len(now)])
