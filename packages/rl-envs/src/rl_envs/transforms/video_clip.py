"""VideoClipRef: a lazy, picklable address of frames inside video files, decoded with PyAV.

A reference stores which file (``sources`` and a per-frame ``file_id``) and which frame of it
(``frame_index``) each element is; indexing it, stacking it, storing it in a replay buffer or
sending it to a worker never opens a file. :meth:`VideoClipRef.decode` (or
:class:`~rl_envs.transforms.DecodeVideoTransform` on a buffer's sample path) reads the frames
with PyAV (``pip install "rl-envs[video]"``), which ships its own FFmpeg.

Open video files are cached per process (a PyAV container is neither picklable nor safe to
share between processes): :func:`set_video_decoder_cache_size` bounds the cache,
:func:`clear_video_decoder_cache` closes them.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorClass

__all__ = ["VideoClipRef", "clear_video_decoder_cache", "set_video_decoder_cache_size"]

_CACHE: OrderedDict[tuple[str, int], Any] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = [8]


def _import_av(where: str) -> Any:
    try:
        import av
    except ImportError as error:
        raise ImportError(
            f'{where} reads videos with PyAV: pip install "rl-envs[video]"', name="av"
        ) from error
    return av


def set_video_decoder_cache_size(maxsize: int) -> None:
    """Sets how many video files each process keeps open (least recently used closed first).

    Args:
        maxsize: the number of open files, at least 1. Defaults to 8 before any call.

    Raises:
        ValueError: ``maxsize`` is not an integer of at least 1.

    Examples:
        >>> set_video_decoder_cache_size(4)
        >>> set_video_decoder_cache_size(8)
    """
    if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
        raise ValueError(
            f"set_video_decoder_cache_size: maxsize must be an integer >= 1, got {maxsize!r}."
        )
    with _CACHE_LOCK:
        _CACHE_SIZE[0] = maxsize
        while len(_CACHE) > maxsize:
            _, container = _CACHE.popitem(last=False)
            container.close()


def clear_video_decoder_cache() -> None:
    """Closes every video file this process holds open for :class:`VideoClipRef`.

    Examples:
        >>> clear_video_decoder_cache()
    """
    with _CACHE_LOCK:
        while _CACHE:
            _, container = _CACHE.popitem(last=False)
            container.close()


def _open(path: str, stream: int) -> Any:
    """The cached PyAV container of ``path`` (opened on first use, LRU-evicted)."""
    key = (path, stream)
    with _CACHE_LOCK:
        container = _CACHE.get(key)
        if container is not None:
            _CACHE.move_to_end(key)
            return container
    av = _import_av("VideoClipRef")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"VideoClipRef: the video {path!r} does not exist.")
    try:
        container = av.open(path)
    except (av.error.FFmpegError, OSError) as error:
        raise ValueError(f"VideoClipRef: {path!r} is not a readable video ({error}).") from error
    if stream >= len(container.streams.video):
        count = len(container.streams.video)
        container.close()
        raise ValueError(
            f"VideoClipRef: {path!r} has {count} video stream(s); stream {stream} asked for."
        )
    with _CACHE_LOCK:
        _CACHE[key] = container
        while len(_CACHE) > _CACHE_SIZE[0]:
            _, old = _CACHE.popitem(last=False)
            old.close()
    return container


def _count_frames(path: str, stream: int) -> int:
    """The number of frames of a video stream: its header's count, else its packets."""
    container = _open(path, stream)
    video = container.streams.video[stream]
    if video.frames:
        return int(video.frames)
    container.seek(0)
    return sum(1 for packet in container.demux(video) if packet.size)


def _decode_indices(path: str, stream: int, wanted: list[int]) -> dict[int, torch.Tensor]:
    """Frames ``wanted`` (sorted, distinct) of ``path`` as uint8 ``[C, H, W]`` RGB tensors.

    Decodes from the first frame up to the last one wanted (one pass for all of them).
    """
    container = _open(path, stream)
    container.seek(0)
    found: dict[int, torch.Tensor] = {}
    targets = set(wanted)
    last = wanted[-1]
    for position, frame in enumerate(container.decode(video=stream)):
        if position in targets:
            found[position] = torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1)
        if position >= last:
            break
    if len(found) < len(wanted):
        missing = next(index for index in wanted if index not in found)
        raise IndexError(
            f"VideoClipRef.decode: frame {missing} asked for, but {path!r} has "
            f"{_count_frames(path, stream)} frame(s) in stream {stream}."
        )
    return found


def _scalar(value: Any) -> Any:
    """A metadata field's value (a stacked reference may hold it as a list)."""
    while isinstance(value, list):
        value = value[0] if value else None
    return value


class VideoClipRef(TensorClass["nocast"]):
    """Frames of video files by address (TorchRL's ``VideoClipRef``), decoded on demand.

    The batch dims are the frames: ``ref[10:20]`` is a reference to ten frames, nothing is
    decoded. Decoding returns uint8 RGB ``[*batch, 3, H, W]``.

    Args:
        sources: the video file (a path), or a tuple of paths for a reference that spans
            several files.
        frame_index: long tensor of each element's frame position within its file; its shape
            is the batch size. Defaults to every frame of the (single) file, counted from the
            file once.
        file_id: long tensor, ``frame_index``'s shape: each element's index into
            ``sources``. Defaults to zeros.
        stream: the video stream of the files. Defaults to the first (None).
        auto_decode: indexing returns decoded frames instead of a reference. Defaults to
            False (keep it off for references stored in a replay buffer).
        out_device: the device decoded frames go to. Defaults to the reference's device.
        out_dtype: the dtype decoded frames are cast to. Defaults to uint8.

    Raises:
        ValueError: ``sources`` is empty; ``file_id`` and ``frame_index`` differ in shape, or
            a ``file_id`` names no source; ``frame_index`` is omitted with several sources.
        TypeError: ``frame_index`` or ``file_id`` is not an integer tensor.

    Examples:
        >>> import torch
        >>> ref = VideoClipRef("clip.mp4", frame_index=torch.arange(6))
        >>> ref[2:5].batch_size, ref[2:5].frame_index.tolist()
        (torch.Size([3]), [2, 3, 4])
    """

    sources: Any
    frame_index: torch.Tensor | None = None
    file_id: torch.Tensor | None = None
    stream: Any = None
    auto_decode: Any = False
    out_device: Any = None
    out_dtype: Any = None

    def __post_init__(self) -> None:
        sources = self.sources
        if isinstance(sources, (str, os.PathLike)):
            sources = (os.fspath(sources),)
        elif _is_path_list(sources):
            sources = tuple(os.fspath(source) for source in sources)
        else:  # a stacked reference: one tuple of paths per element, nested as the batch
            self._check_file_ids(_element_sources(sources, self.frame_index.numel()))
            return
        if not sources:
            raise ValueError("VideoClipRef: sources must name at least one video file, got none.")
        self.sources = sources
        if self.frame_index is None:
            if len(sources) > 1:
                raise ValueError(
                    f"VideoClipRef: frame_index is needed with several sources ({len(sources)} "
                    f"given); use VideoClipRef.from_files to reference every frame of each."
                )
            count = _count_frames(sources[0], _scalar(self.stream) or 0)
            self.frame_index = torch.arange(count)
            self.batch_size = torch.Size([count])
        for name in ("frame_index", "file_id"):
            value = getattr(self, name)
            if value is not None and (
                not torch.is_tensor(value) or value.is_floating_point() or value.is_complex()
            ):
                raise TypeError(
                    f"VideoClipRef: {name} must be an integer tensor, got "
                    f"{type(value).__name__}"
                    f"{'' if not torch.is_tensor(value) else f' of {value.dtype}'}."
                )
        if not self.batch_size:
            self.batch_size = self.frame_index.shape
        if self.file_id is None:
            self.file_id = torch.zeros_like(self.frame_index, dtype=torch.long)
        if self.file_id.shape != self.frame_index.shape:
            raise ValueError(
                f"VideoClipRef: file_id has shape {tuple(self.file_id.shape)}, frame_index "
                f"{tuple(self.frame_index.shape)}; they must be the same."
            )
        self._check_file_ids([sources] * self.file_id.numel())

    def _check_file_ids(self, per_element: list[tuple[str, ...]]) -> None:
        for file, sources in zip(self.file_id.reshape(-1).tolist(), per_element, strict=True):
            if not 0 <= file < len(sources):
                raise ValueError(
                    f"VideoClipRef: file_id values must lie in [0, {len(sources)}) (one per "
                    f"source), got {file}."
                )

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike,
        *,
        stream: int | None = None,
        num_frames: int | None = None,
        frame_index: torch.Tensor | None = None,
        auto_decode: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> VideoClipRef:
        """A reference to every frame of one video (or ``frame_index``'s, or the first
        ``num_frames``); ``device``/``dtype`` become ``out_device``/``out_dtype``.

        Examples:
            >>> VideoClipRef.from_file("clip.mp4", num_frames=4).frame_index.tolist()
            [0, 1, 2, 3]
        """
        if frame_index is None and num_frames is not None:
            frame_index = torch.arange(int(num_frames))
        return cls(
            sources=(os.fspath(path),),
            frame_index=frame_index,
            stream=stream,
            auto_decode=auto_decode,
            out_device=device,
            out_dtype=dtype,
            batch_size=[] if frame_index is None else frame_index.shape,
        )

    @classmethod
    def from_files(
        cls,
        paths: Sequence[str | os.PathLike],
        *,
        num_frames_per_file: int | Sequence[int] | None = None,
        stream: int | None = None,
        auto_decode: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> VideoClipRef:
        """One reference to every frame of several videos, in order (a lazy concatenation).

        Args:
            paths: the video files.
            num_frames_per_file: each file's frame count (one int for all); counted from the
                files when omitted.

        Raises:
            ValueError: ``paths`` is empty, or ``num_frames_per_file`` has another length.
        """
        paths = [os.fspath(path) for path in paths]
        if not paths:
            raise ValueError("VideoClipRef.from_files: paths is empty; give at least one video.")
        if num_frames_per_file is None:
            counts = [_count_frames(path, stream or 0) for path in paths]
        elif isinstance(num_frames_per_file, int):
            counts = [num_frames_per_file] * len(paths)
        else:
            counts = [int(count) for count in num_frames_per_file]
            if len(counts) != len(paths):
                raise ValueError(
                    f"VideoClipRef.from_files: num_frames_per_file has {len(counts)} entries "
                    f"for {len(paths)} paths."
                )
        frame_index = torch.cat([torch.arange(count) for count in counts])
        file_id = torch.cat(
            [torch.full((count,), i, dtype=torch.long) for i, count in enumerate(counts)]
        )
        return cls(
            sources=tuple(paths),
            frame_index=frame_index,
            file_id=file_id,
            stream=stream,
            auto_decode=auto_decode,
            out_device=device,
            out_dtype=dtype,
            batch_size=frame_index.shape,
        )

    @property
    def source(self) -> str:
        """The video path of a single-file reference (the first of several)."""
        return _element_sources(self.sources, 1)[0][0]

    def decode(self, *, device: Any = None, dtype: Any = None) -> torch.Tensor:
        """The referenced frames, uint8 RGB ``[*batch, 3, H, W]`` (or ``dtype``, on
        ``device``; they default to ``out_dtype``/``out_device``).

        Each file is decoded once per call, from its first frame to the last frame asked for;
        a frame referenced twice is decoded once.

        Raises:
            ImportError: PyAV is not installed (names the extra).
            FileNotFoundError: a source does not exist.
            IndexError: a frame index lies past the end of its file.
        """
        stream = _scalar(self.stream) or 0
        device = device if device is not None else _scalar(self.out_device)
        device = device if device is not None else self.device
        dtype = dtype if dtype is not None else _scalar(self.out_dtype)
        positions = self.frame_index.reshape(-1).tolist()
        if not positions:
            raise ValueError("VideoClipRef.decode: the reference holds no frame.")
        per_element = _element_sources(self.sources, len(positions))
        paths = [
            sources[file]
            for sources, file in zip(per_element, self.file_id.reshape(-1).tolist(), strict=True)
        ]
        wanted: defaultdict[str, set[int]] = defaultdict(set)
        for path, position in zip(paths, positions, strict=True):
            wanted[path].add(position)
        decoded = {
            path: _decode_indices(path, stream, sorted(indices)) for path, indices in wanted.items()
        }
        frames = torch.stack(
            [decoded[path][position] for path, position in zip(paths, positions, strict=True)]
        )
        frames = frames.reshape(*self.batch_size, *frames.shape[1:])
        if dtype is not None:
            frames = frames.to(dtype)
        return frames if device is None else frames.to(device)

    @property
    def frames(self) -> torch.Tensor:
        """The decoded frames (:meth:`decode` with the defaults)."""
        return self.decode()

    def __getitem__(self, index: Any) -> Any:
        out = super().__getitem__(index)
        if isinstance(out, VideoClipRef) and bool(_scalar(out.auto_decode)):
            return out.decode()
        return out


def _is_path_list(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(
        isinstance(item, (str, os.PathLike)) for item in value
    )


def _element_sources(sources: Any, count: int) -> list[tuple[str, ...]]:
    """Each element's tuple of paths: one tuple shared by all, or (a stacked reference's)
    nested lists of tuples, one per element in batch order."""
    if _is_path_list(sources):
        return [tuple(os.fspath(source) for source in sources)] * count
    leaves: list[tuple[str, ...]] = []
    pending = [sources]
    while pending:
        item = pending.pop()
        if _is_path_list(item) and isinstance(item, tuple):
            leaves.append(item)
        elif isinstance(item, (list, tuple)):
            pending.extend(reversed(item))
        else:
            raise TypeError(
                f"VideoClipRef: sources must be paths or tuples of paths, got {type(item).__name__}."
            )
    if len(leaves) == 1:
        return leaves * count
    if len(leaves) != count:
        raise ValueError(
            f"VideoClipRef: {len(leaves)} source tuples for {count} frames; a stacked "
            f"reference holds one per frame."
        )
    return leaves
