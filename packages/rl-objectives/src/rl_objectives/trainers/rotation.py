"""Directories of retained checkpoints: :class:`CheckpointRotation` (the newest ``k``, plus the
best) and :class:`CheckpointBest` (the best ``k`` by a metric)."""

from __future__ import annotations

import math
import os
import re
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.checkpoint import Checkpoint, CheckpointError, read_manifest


def _check_mode(owner: str, mode: str) -> str:
    if mode not in ("min", "max"):
        raise ValueError(f"{owner}: mode must be 'min' or 'max', got {mode!r}.")
    return mode


def _better(mode: str, a: float, b: float) -> bool:
    return a < b if mode == "min" else a > b


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (this one included)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Directory:
    """The checkpoints named ``{prefix}_{step:012d}`` in one directory."""

    def __init__(self, owner: str, directory: str | os.PathLike, prefix: str) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", prefix):
            raise ValueError(
                f"{owner}: prefix must be letters, digits, '_' or '-', got {prefix!r}."
            )
        self.directory = Path(directory)
        self.prefix = prefix
        self._pattern = re.compile(rf"{re.escape(prefix)}_(\d+)")

    def path(self, step: int) -> Path:
        return self.directory / f"{self.prefix}_{step:012d}"

    def checkpoints(self) -> tuple[Path, ...]:
        """Complete checkpoints (with a manifest), by step."""
        if not self.directory.is_dir():
            return ()
        found = []
        for entry in self.directory.iterdir():
            match = self._pattern.fullmatch(entry.name)
            if match and (entry / "manifest.json").is_file():
                found.append((int(match.group(1)), entry))
        return tuple(path for _, path in sorted(found))

    def remove_stale_partials(self) -> None:
        """Deletes the temporary directories (``.{prefix}_{step}.partial-{pid}``) that a save
        left when its process died mid-write (a SIGKILL); a live process's are kept."""
        if not self.directory.is_dir():
            return
        pattern = re.compile(rf"\.{re.escape(self.prefix)}_\d+\.partial-(\d+)")
        for entry in self.directory.iterdir():
            match = pattern.fullmatch(entry.name)
            if match and not _alive(int(match.group(1))):
                shutil.rmtree(entry, ignore_errors=True)

    def metric(self, path: Path, key: str) -> float | None:
        try:
            value = read_manifest(path)["metadata"].get(key)
        except CheckpointError:
            return None
        return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


class CheckpointRotation:
    """Saves checkpoints as ``{prefix}_{step:012d}`` in ``directory`` and keeps the newest
    ``keep_last`` of them, plus the best one by a metadata entry when ``keep_best`` is given.

    Older checkpoints are deleted after each save, never before the new one is complete.

    Args:
        directory: where the checkpoints go.

    Keyword Args:
        keep_last: how many of the newest to keep, a positive int.
        keep_best: ``(metadata_key, "min" | "max")``: also keep the checkpoint with the best
            value of that metadata entry. Defaults to ``None``.
        prefix: the checkpoints' name prefix. Defaults to ``"checkpoint"``.

    Raises:
        ValueError: a bad ``keep_last``, ``keep_best`` or ``prefix``.

    Examples:
        >>> import tempfile, torch
        >>> from rl_objectives.trainers import Checkpoint, CheckpointRotation
        >>> net = torch.nn.Linear(1, 1)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     rotation = CheckpointRotation(tmp, keep_last=2)
        ...     for step in (10, 20, 30):
        ...         _ = rotation.save(Checkpoint(net=net), step)
        ...     print([p.name for p in rotation.checkpoints()])
        ['checkpoint_000000000020', 'checkpoint_000000000030']
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        keep_last: int,
        keep_best: tuple[str, Literal["min", "max"]] | None = None,
        prefix: str = "checkpoint",
    ) -> None:
        self.keep_last = check_positive_int("CheckpointRotation", "keep_last", keep_last)
        if keep_best is not None:
            if not (isinstance(keep_best, tuple | list) and len(keep_best) == 2):
                raise ValueError(
                    f"CheckpointRotation: keep_best must be a (metadata_key, 'min' | 'max') "
                    f"pair, got {keep_best!r}."
                )
            keep_best = (str(keep_best[0]), _check_mode("CheckpointRotation", keep_best[1]))
        self.keep_best = keep_best
        self._dir = _Directory("CheckpointRotation", directory, prefix)
        self.directory = self._dir.directory

    def checkpoints(self) -> tuple[Path, ...]:
        """The complete checkpoints, oldest first."""
        return self._dir.checkpoints()

    def latest(self) -> Path | None:
        """The newest complete checkpoint, or ``None``."""
        found = self.checkpoints()
        return found[-1] if found else None

    def best(self) -> Path | None:
        """The checkpoint with the best ``keep_best`` metric, or ``None``."""
        if self.keep_best is None:
            return None
        key, mode = self.keep_best
        best: tuple[float, Path] | None = None
        for path in self.checkpoints():
            value = self._dir.metric(path, key)
            if value is not None and (best is None or _better(mode, value, best[0])):
                best = (value, path)
        return None if best is None else best[1]

    def save(
        self, checkpoint: Checkpoint, step: int, *, metadata: dict[str, Any] | None = None
    ) -> Path:
        """Saves ``checkpoint`` as the one of ``step`` (``step`` goes in its metadata), then
        deletes those no longer kept; returns its path."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"CheckpointRotation.save: step must be an int >= 0, got {step!r}.")
        self._dir.remove_stale_partials()
        path = checkpoint.save(self._dir.path(step), metadata={**(metadata or {}), "step": step})
        keep = set(self.checkpoints()[-self.keep_last :])
        best = self.best()
        if best is not None:
            keep.add(best)
        for old in self.checkpoints():
            if old not in keep:
                shutil.rmtree(old)
        return path

    def load_latest(
        self, checkpoint: Checkpoint, *, components: Collection[str] | None = None
    ) -> dict[str, Any] | None:
        """Loads the newest checkpoint into ``checkpoint``; ``None`` when there is none.

        A damaged newest checkpoint is refused (:class:`CheckpointError` naming the file), not
        silently replaced by an older one.
        """
        latest = self.latest()
        return None if latest is None else checkpoint.load(latest, components=components)


class CheckpointBest:
    """Keeps the ``keep`` best checkpoints by a metric, as ``{prefix}_{step:012d}``.

    :meth:`save` writes a checkpoint only if its metric ranks among the ``keep`` best seen in
    the directory (ties go to the older one), then deletes the one that dropped out.

    Args:
        directory: where the checkpoints go.

    Keyword Args:
        metric: the name of the metric (stored in each checkpoint's metadata).
        mode: ``"max"`` (default) or ``"min"``: which way is better.
        keep: how many to keep. Defaults to 1.
        prefix: the name prefix. Defaults to ``"best"``.

    Raises:
        ValueError: a bad ``mode``, ``keep`` or ``prefix``, or (saving) a non-finite value.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        metric: str,
        mode: Literal["min", "max"] = "max",
        keep: int = 1,
        prefix: str = "best",
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"CheckpointBest: metric must be a non-empty str, got {metric!r}.")
        self.metric = metric
        self.mode = _check_mode("CheckpointBest", mode)
        self.keep = check_positive_int("CheckpointBest", "keep", keep)
        self._dir = _Directory("CheckpointBest", directory, prefix)
        self.directory = self._dir.directory

    def _ranked(self) -> list[tuple[float, int, Path]]:
        ranked = []
        for index, path in enumerate(self._dir.checkpoints()):
            value = self._dir.metric(path, self.metric)
            if value is not None:
                ranked.append((value, index, path))
        sign = -1.0 if self.mode == "max" else 1.0
        return sorted(ranked, key=lambda item: (sign * item[0], item[1]))

    def checkpoints(self) -> tuple[Path, ...]:
        """The kept checkpoints, best first."""
        return tuple(path for _, _, path in self._ranked())

    def best(self) -> Path | None:
        """The best checkpoint, or ``None``."""
        ranked = self.checkpoints()
        return ranked[0] if ranked else None

    def save(
        self,
        checkpoint: Checkpoint,
        step: int,
        value: float,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> Path | None:
        """Saves ``checkpoint`` if ``value`` ranks among the ``keep`` best; returns its path,
        or ``None`` when it was not good enough."""
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"CheckpointBest.save: {self.metric} must be finite, got {value}.")
        ranked = self._ranked()
        if len(ranked) >= self.keep and not _better(self.mode, value, ranked[self.keep - 1][0]):
            return None
        self._dir.remove_stale_partials()
        path = checkpoint.save(
            self._dir.path(step), metadata={**(metadata or {}), "step": step, self.metric: value}
        )
        for _, _, old in self._ranked()[self.keep :]:
            shutil.rmtree(old)
        return path
