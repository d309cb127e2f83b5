"""A logger that writes plain files and needs no extra library: :class:`CSVLogger`."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from rl_objectives.loggers._utils import (
    as_float,
    check_name,
    check_step,
    flatten_hparams,
    histogram_data,
    scalar_hparam,
    video_frames,
    write_gif,
)
from rl_objectives.loggers.common import Logger

_VIDEO_FORMATS = ("pt", "gif")


class CSVLogger(Logger):
    """Writes each metric to its own CSV file under ``log_dir/exp_name``.

    The layout, one folder per experiment:

    - ``scalars/{name}.csv``: a ``step,value`` header, then one row per call.
    - ``videos/{name}_{step}.pt`` (a ``uint8`` tensor ``[T, H, W, C]`` saved with
      ``torch.save``) or ``videos/{name}_{step}.gif`` with ``video_format="gif"`` (needs
      Pillow: ``pip install "rl-objectives[video]"``).
    - ``histograms/{name}.csv``: ``step,bin_start,bin_end,count``, one row per bin.
    - ``hparams.json``: every hyperparameter logged so far, nested names flattened to
      ``"a.b"``.

    A name with ``/`` separators (``"train/reward"``) goes to a sub-folder. Rows are appended
    and the file is closed after each call, so a crash loses nothing and the files can be read
    while training runs. With ``step=None`` the step is the number of earlier rows of that
    name.

    Args:
        exp_name: the experiment's name (the folder under ``log_dir``).
        log_dir: the parent folder. Defaults to ``"csv_logs"``.

    Keyword Args:
        video_format: ``"pt"`` (default) or ``"gif"``.
        video_fps: frames per second of GIF videos. Defaults to 30.

    Raises:
        ValueError: an unknown ``video_format``; see also :class:`Logger`.

    Examples:
        >>> import tempfile
        >>> from rl_objectives.loggers import CSVLogger
        >>> logger = CSVLogger("run", log_dir=tempfile.mkdtemp())
        >>> logger.log_scalar("loss", 0.5, step=10)
        >>> logger.log_scalar("loss", 0.25, step=20)
        >>> print((logger.experiment / "scalars" / "loss.csv").read_text())
        step,value
        10,0.5
        20,0.25
        <BLANKLINE>
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str | os.PathLike = "csv_logs",
        *,
        video_format: str = "pt",
        video_fps: int = 30,
    ) -> None:
        if video_format not in _VIDEO_FORMATS:
            raise ValueError(
                f"CSVLogger: video_format must be one of {_VIDEO_FORMATS}, got {video_format!r}."
            )
        self.video_format = video_format
        self.video_fps = video_fps
        self._counts: defaultdict[tuple[str, str], int] = defaultdict(int)
        super().__init__(exp_name, log_dir)

    def _create_experiment(self) -> Path:
        root = Path(self.log_dir) / self.exp_name
        root.mkdir(parents=True, exist_ok=True)
        return root

    def _next_step(self, kind: str, name: str, step: int | None) -> int:
        count = self._counts[(kind, name)]
        self._counts[(kind, name)] = count + 1
        return count if step is None else step

    def _append_rows(self, path: Path, header: str, rows: list[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists()
        with path.open("a", encoding="utf-8") as file:
            if new:
                file.write(header + "\n")
            file.writelines(row + "\n" for row in rows)

    def log_scalar(self, name: str, value: float | torch.Tensor, step: int | None = None) -> None:
        """Appends ``step,value`` to ``scalars/{name}.csv``; see :meth:`Logger.log_scalar`."""
        owner = "CSVLogger.log_scalar"
        check_name(owner, name)
        value = as_float(owner, name, value)
        step = self._next_step("scalar", name, check_step(owner, step))
        self._append_rows(
            self.experiment / "scalars" / f"{name}.csv", "step,value", [f"{step},{value!r}"]
        )

    def log_video(
        self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Saves ``videos/{name}_{step}.pt`` or ``.gif``; see :meth:`Logger.log_video`.

        Keyword Args:
            fps: frames per second of a GIF. Defaults to ``video_fps``.
        """
        owner = "CSVLogger.log_video"
        check_name(owner, name)
        frames = video_frames(owner, video)
        step = self._next_step("video", name, check_step(owner, step))
        path = self.experiment / "videos" / f"{name}_{step}.{self.video_format}"
        if self.video_format == "gif":
            write_gif(owner, frames, path, kwargs.get("fps", self.video_fps))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(frames, path)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Merges ``cfg`` into ``hparams.json``; see :meth:`Logger.log_hparams`."""
        flat = flatten_hparams("CSVLogger.log_hparams", cfg)
        path = self.experiment / "hparams.json"
        stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        # JSON has a null: an unset hyperparameter stays ``null``, not the string "None".
        stored.update(
            {key: None if value is None else scalar_hparam(value) for key, value in flat.items()}
        )
        path.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def log_histogram(
        self, name: str, data: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Appends the bins of ``data`` to ``histograms/{name}.csv``.

        Keyword Args:
            bins: the number of equal-width bins between the min and max of ``data``.
                Defaults to 64.
        """
        owner = "CSVLogger.log_histogram"
        check_name(owner, name)
        flat = histogram_data(owner, data)
        bins = kwargs.get("bins", 64)
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
            raise ValueError(f"{owner}: bins must be a positive int, got {bins!r}.")
        counts, edges = torch.histogram(flat, bins=bins)
        step = self._next_step("histogram", name, check_step(owner, step))
        rows = [
            f"{step},{edges[i].item()!r},{edges[i + 1].item()!r},{int(counts[i].item())}"
            for i in range(bins)
        ]
        self._append_rows(
            self.experiment / "histograms" / f"{name}.csv", "step,bin_start,bin_end,count", rows
        )
