"""Pixel transforms in torch ops on the env's device: ToTensorImage, Resize, CenterCrop, Crop,
GrayScale."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rl_core import Bounded, Composite, TensorSpec, Transform, Unbounded
from rl_core.keys import PIXELS, NestedKey
from rl_envs.transforms._common import map_output_leaves, map_spec_leaves

_Keys = NestedKey | Sequence[NestedKey] | None
_GRAY = (0.299, 0.587, 0.114)


def _uniform_bounds(spec: TensorSpec) -> tuple[float, float] | None:
    """The scalar ``(low, high)`` of a Bounded spec whose bounds are the same everywhere."""
    if not isinstance(spec, Bounded) or spec.low.numel() == 0:
        return None
    low, high = spec.low.reshape(-1)[0], spec.high.reshape(-1)[0]
    if bool((spec.low == low).all() & (spec.high == high).all()):
        return float(low), float(high)
    return None


def _image_spec(spec: TensorSpec, shape: Sequence[int], dtype: torch.dtype) -> TensorSpec:
    found = _uniform_bounds(spec)
    if found is None:
        return Unbounded(shape=tuple(shape), device=spec.device, dtype=dtype)
    return Bounded(found[0], found[1], shape=tuple(shape), device=spec.device, dtype=dtype)


def _check_image(where: str, key: NestedKey, spec: TensorSpec, channels: int | None) -> None:
    if len(spec.shape) < 3:
        raise ValueError(
            f"{where}: expected images [..., C, H, W] under {key!r}, got shape "
            f"{tuple(spec.shape)}. Missing pixels? Build the env with from_pixels=True or put "
            f"ToTensorImage first."
        )
    if channels is not None and spec.shape[-3] != channels:
        raise ValueError(
            f"{where}: expected {channels} channels (dim -3) under {key!r}, got shape "
            f"{tuple(spec.shape)}. Images must be channel-first: put ToTensorImage first."
        )


def _window(value: torch.Tensor, top: int, left: int, rows: int, cols: int) -> torch.Tensor:
    """Rows ``top : top + rows`` and columns ``left : left + cols`` of ``[..., H, W]`` images
    (``top, left >= 0``), zero where the window passes the image's bottom or right edge, as
    torchvision's ``crop``."""
    kept = value[..., top : top + rows, left : left + cols]
    short_rows, short_cols = rows - kept.shape[-2], cols - kept.shape[-1]
    if short_rows or short_cols:
        kept = F.pad(kept, (0, short_cols, 0, short_rows))
    return kept


def _padded_image_spec(spec: TensorSpec, shape: Sequence[int], padded: bool) -> TensorSpec:
    """The spec of cropped images; zeros added past the edges widen the bounds to hold 0."""
    if not padded:
        return _image_spec(spec, shape, spec.dtype)
    found = _uniform_bounds(spec)
    if found is None:
        return Unbounded(shape=tuple(shape), device=spec.device, dtype=spec.dtype)
    low, high = min(found[0], 0.0), max(found[1], 0.0)
    return Bounded(low, high, shape=tuple(shape), device=spec.device, dtype=spec.dtype)


class _ImageTransform(Transform):
    def __init__(self, in_keys: _Keys, out_keys: _Keys) -> None:
        super().__init__(in_keys=PIXELS if in_keys is None else in_keys, out_keys=out_keys)
        # The uniform bounds of the input images, once the specs are known: averages of pixels
        # are clamped to them (float rounding may step an ulp outside).
        self.__dict__["_clamp"] = None

    def _record_bounds(self, spec: TensorSpec) -> None:
        self.__dict__["_clamp"] = _uniform_bounds(spec)

    def _clamped(self, value: torch.Tensor) -> torch.Tensor:
        found = self._clamp
        return value if found is None else value.clamp(found[0], found[1])

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        raise NotImplementedError

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        name = type(self).__name__
        return map_output_leaves(output_spec, self.in_keys, self.out_keys, self._map, name)

    def transform_observation_spec(self, observation_spec: TensorSpec) -> TensorSpec:
        """The observation spec (a Composite, or the one entry's spec) as the transform
        shows it; the env path maps the whole output spec instead."""
        name = type(self).__name__
        return map_spec_leaves(observation_spec, self.in_keys, self.out_keys, self._map, name)


class ToTensorImage(_ImageTransform):
    """Images ``[..., H, W, C]`` to float ``[..., C, H, W]``; uint8 images are scaled from
    ``[0, 255]`` to ``[0, 1]``, floating images are only moved and cast, as TorchRL's.

    Args:
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.
        dtype: the floating dtype of the output; default torch's default dtype when the
            transform is built (``torch.get_default_dtype()``), as TorchRL.
        from_int: whether to divide by 255: ``None`` (default) for integer images only,
            ``True`` always, ``False`` never (TorchRL's ``from_int``).

    Raises:
        TypeError: (on the specs) the images are neither uint8 nor floating.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ToTensorImage()
        >>> img = torch.full((2, 64, 48, 3), 255, dtype=torch.uint8)
        >>> out = t(TensorDict(pixels=img, batch_size=[2]))["pixels"]
        >>> out.shape, out.max().item()
        (torch.Size([2, 3, 64, 48]), 1.0)
        >>> t(TensorDict(pixels=torch.full((64, 48, 3), 0.5), batch_size=[]))["pixels"].max().item()
        0.5
    """

    def __init__(
        self,
        in_keys: _Keys = None,
        out_keys: _Keys = None,
        *,
        dtype: torch.dtype | None = None,
        from_int: bool | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys)
        dtype = torch.get_default_dtype() if dtype is None else dtype
        if not dtype.is_floating_point:
            raise TypeError(f"ToTensorImage: expected a floating dtype, got {dtype}.")
        self.dtype = dtype
        self.from_int = from_int

    def _scales(self, integer: bool) -> bool:
        return integer if self.from_int is None else bool(self.from_int)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        out = value.movedim(-1, -3).to(self.dtype)
        return out.div(255.0) if self._scales(not value.dtype.is_floating_point) else out

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if spec.dtype != torch.uint8 and not spec.dtype.is_floating_point:
            raise TypeError(
                f"ToTensorImage: expected uint8 or floating images under {key!r}, got dtype "
                f"{spec.dtype}."
            )
        if len(spec.shape) < 3:
            _check_image("ToTensorImage", key, spec, None)
        *lead, h, w, c = spec.shape
        shape = (*lead, c, h, w)
        if spec.dtype == torch.uint8 and self._scales(True):
            return Bounded(0.0, 1.0, shape=shape, device=spec.device, dtype=self.dtype)
        found = _uniform_bounds(spec)
        if found is None:
            return Unbounded(shape=shape, device=spec.device, dtype=self.dtype)
        low, high = found
        if self._scales(spec.dtype == torch.uint8):
            low, high = low / 255.0, high / 255.0
        return Bounded(low, high, shape=shape, device=spec.device, dtype=self.dtype)


class Resize(_ImageTransform):
    """Resizes ``[..., C, H, W]`` images to ``[..., C, w, h]`` (``torch.nn.functional.interpolate``,
    antialiased for ``"bilinear"`` and ``"bicubic"`` as torchvision's ``resize``).

    The argument order is TorchRL's: ``w`` is the size of dim -2 (the rows) and ``h`` that of
    dim -1, so ``Resize(20, 21)`` gives ``[..., C, 20, 21]``; a pair ``Resize((20, 21))`` is
    read the same way.

    Args:
        w: the output size of dim -2 (or a pair ``(w, h)``).
        h: the output size of dim -1; default ``w``.
        interpolation: ``"bilinear"``, ``"nearest"``, ``"bicubic"`` or ``"area"``.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Resize(20, 21)
        >>> t(TensorDict(pixels=torch.rand(2, 1, 210, 160), batch_size=[2]))["pixels"].shape
        torch.Size([2, 1, 20, 21])
    """

    _MODES = ("bilinear", "nearest", "bicubic", "area")

    def __init__(
        self,
        w: int | Sequence[int],
        h: int | None = None,
        interpolation: str = "bilinear",
        in_keys: _Keys = None,
        out_keys: _Keys = None,
    ) -> None:
        super().__init__(in_keys, out_keys)
        if isinstance(w, (list, tuple)):
            if len(w) != 2 or h is not None:
                raise ValueError(
                    f"Resize: expected w as an int or a pair (w, h) with h unset, got w={w!r}, "
                    f"h={h!r}."
                )
            w, h = w
        if interpolation not in self._MODES:
            raise ValueError(
                f"Resize: interpolation must be one of {self._MODES}, got {interpolation!r}."
            )
        self.w = int(w)
        self.h = int(w if h is None else h)
        self.interpolation = interpolation

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        *lead, c, h, w = value.shape
        flat = value.reshape(-1, c, h, w)
        integer = not flat.dtype.is_floating_point
        if integer:
            flat = flat.float()
        kwargs = (
            {}
            if self.interpolation in ("nearest", "area")
            else {"align_corners": False, "antialias": True}
        )
        out = F.interpolate(flat, size=(self.w, self.h), mode=self.interpolation, **kwargs)
        if integer:
            out = out.clamp(0.0, 255.0).round().to(value.dtype)
        elif self.interpolation != "bicubic":
            out = self._clamped(out)
        return out.reshape(*lead, c, self.w, self.h)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        _check_image("Resize", key, spec, None)
        self._record_bounds(spec)
        shape = (*spec.shape[:-2], self.w, self.h)
        if self.interpolation == "bicubic":  # overshoots: no bounds kept
            return Unbounded(shape=shape, device=spec.device, dtype=spec.dtype)
        return _image_spec(spec, shape, spec.dtype)

    def extra_repr(self) -> str:
        return (
            f"w={self.w}, h={self.h}, interpolation={self.interpolation!r}, {super().extra_repr()}"
        )


class CenterCrop(_ImageTransform):
    """Crops the centre ``w x h`` of ``[..., C, H, W]`` images, as torchvision's ``center_crop``.

    TorchRL's argument order: ``w`` rows (dim -2) by ``h`` columns (dim -1). The window starts
    at row ``round((H - w) / 2)`` and column ``round((W - h) / 2)`` (Python's ``round``, as
    torchvision). Images smaller than the window are first padded with zeros on both sides
    (the odd row or column after), as torchvision.

    Args:
        w: the output size of dim -2.
        h: the output size of dim -1; default ``w``.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = CenterCrop(4, 2)
        >>> t(TensorDict(pixels=torch.rand(3, 10, 8)))["pixels"].shape
        torch.Size([3, 4, 2])
    """

    def __init__(
        self, w: int, h: int | None = None, in_keys: _Keys = None, out_keys: _Keys = None
    ) -> None:
        super().__init__(in_keys, out_keys)
        self.w = int(w)
        self.h = int(w if h is None else h)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        rows, cols = value.shape[-2], value.shape[-1]
        if self.w > rows or self.h > cols:  # zeros around, the odd one after
            pad_rows, pad_cols = max(self.w - rows, 0), max(self.h - cols, 0)
            value = F.pad(
                value,
                (pad_cols // 2, (pad_cols + 1) // 2, pad_rows // 2, (pad_rows + 1) // 2),
            )
            rows, cols = value.shape[-2], value.shape[-1]
        top = round((rows - self.w) / 2)
        left = round((cols - self.h) / 2)
        return value[..., top : top + self.w, left : left + self.h]

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        _check_image("CenterCrop", key, spec, None)
        padded = spec.shape[-2] < self.w or spec.shape[-1] < self.h
        return _padded_image_spec(spec, (*spec.shape[:-2], self.w, self.h), padded)

    def extra_repr(self) -> str:
        return f"w={self.w}, h={self.h}, {super().extra_repr()}"


class Crop(_ImageTransform):
    """Crops the ``w x h`` window of ``[..., C, H, W]`` images whose top-left corner is at
    row ``top`` and column ``left``, as torchvision's ``crop(img, top, left, w, h)``.

    TorchRL's argument order: ``w`` rows (dim -2) by ``h`` columns (dim -1). Where the window
    passes the images' bottom or right edge it holds zeros, as torchvision.

    Args:
        w: the output size of dim -2.
        h: the output size of dim -1; default ``w``.
        top: the first row kept. Defaults to 0.
        left: the first column kept. Defaults to 0.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.

    Raises:
        ValueError: a negative corner or a non-positive size.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Crop(2, 3, top=1, left=4)
        >>> t(TensorDict(pixels=torch.rand(3, 10, 8)))["pixels"].shape
        torch.Size([3, 2, 3])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        top: int = 0,
        left: int = 0,
        in_keys: _Keys = None,
        out_keys: _Keys = None,
    ) -> None:
        super().__init__(in_keys, out_keys)
        self.w = int(w)
        self.h = int(w if h is None else h)
        self.top, self.left = int(top), int(left)
        if self.w < 1 or self.h < 1 or self.top < 0 or self.left < 0:
            raise ValueError(
                f"Crop: expected w, h >= 1 and top, left >= 0, got w={self.w}, h={self.h}, "
                f"top={self.top}, left={self.left}."
            )

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return _window(value, self.top, self.left, self.w, self.h)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        _check_image("Crop", key, spec, None)
        padded = spec.shape[-2] < self.top + self.w or spec.shape[-1] < self.left + self.h
        return _padded_image_spec(spec, (*spec.shape[:-2], self.w, self.h), padded)

    def extra_repr(self) -> str:
        return f"w={self.w}, h={self.h}, top={self.top}, left={self.left}, {super().extra_repr()}"


class GrayScale(_ImageTransform):
    """RGB ``[..., 3, H, W]`` float images to luminance ``[..., 1, H, W]``.

    Args:
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = GrayScale()
        >>> out = t(TensorDict(pixels=torch.ones(2, 3, 5, 5), batch_size=[2]))["pixels"]
        >>> out.shape, round(out.max().item(), 4)
        (torch.Size([2, 1, 5, 5]), 1.0)
    """

    def __init__(self, in_keys: _Keys = None, out_keys: _Keys = None) -> None:
        super().__init__(in_keys, out_keys)
        self.register_buffer("weights", torch.tensor(_GRAY).reshape(3, 1, 1))

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        weights = self.weights
        if weights.device != value.device or weights.dtype != value.dtype:
            weights = weights.to(value.device, value.dtype)
        return self._clamped((value * weights).sum(-3, keepdim=True))

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        _check_image("GrayScale", key, spec, 3)
        self._record_bounds(spec)
        if not spec.dtype.is_floating_point:
            raise TypeError(
                f"GrayScale: expected float images under {key!r}, got dtype {spec.dtype}; put "
                f"ToTensorImage first."
            )
        return _image_spec(spec, (*spec.shape[:-3], 1, *spec.shape[-2:]), spec.dtype)


__all__ = ["CenterCrop", "Crop", "GrayScale", "Resize", "ToTensorImage"]
