"""Pixel transforms in torch ops on the env's device: ToTensorImage, Resize, CenterCrop, Crop,
GrayScale."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rl_core import Bounded, Composite, TensorSpec, Transform, Unbounded
from rl_core.keys import PIXELS, NestedKey
from rl_envs.transforms._common import map_output_leaves

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


class ToTensorImage(_ImageTransform):
    """uint8 ``[..., H, W, C]`` images to float ``[..., C, H, W]`` in ``[0, 1]``.

    Args:
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.
        dtype: the floating dtype of the output.

    Raises:
        TypeError: (on the specs) the images are not uint8.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ToTensorImage()
        >>> img = torch.full((2, 64, 48, 3), 255, dtype=torch.uint8)
        >>> out = t(TensorDict(pixels=img, batch_size=[2]))["pixels"]
        >>> out.shape, out.max().item()
        (torch.Size([2, 3, 64, 48]), 1.0)
    """

    def __init__(
        self, in_keys: _Keys = None, out_keys: _Keys = None, *, dtype: torch.dtype = torch.float32
    ) -> None:
        super().__init__(in_keys, out_keys)
        if not dtype.is_floating_point:
            raise TypeError(f"ToTensorImage: expected a floating dtype, got {dtype}.")
        self.dtype = dtype

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.movedim(-1, -3).to(self.dtype).div_(255.0)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if spec.dtype != torch.uint8:
            raise TypeError(
                f"ToTensorImage: expected uint8 images under {key!r}, got dtype {spec.dtype}."
            )
        if len(spec.shape) < 3:
            _check_image("ToTensorImage", key, spec, None)
        *lead, h, w, c = spec.shape
        return Bounded(0.0, 1.0, shape=(*lead, c, h, w), device=spec.device, dtype=self.dtype)


class Resize(_ImageTransform):
    """Resizes ``[..., C, H, W]`` images to ``[..., C, h, w]`` (``torch.nn.functional.interpolate``).

    Args:
        w: the output width.
        h: the output height; default ``w``.
        interpolation: ``"bilinear"``, ``"nearest"``, ``"bicubic"`` or ``"area"``.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Resize(84, 84)
        >>> t(TensorDict(pixels=torch.rand(2, 1, 210, 160), batch_size=[2]))["pixels"].shape
        torch.Size([2, 1, 84, 84])
    """

    _MODES = ("bilinear", "nearest", "bicubic", "area")

    def __init__(
        self,
        w: int,
        h: int | None = None,
        interpolation: str = "bilinear",
        in_keys: _Keys = None,
        out_keys: _Keys = None,
    ) -> None:
        super().__init__(in_keys, out_keys)
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
        kwargs = {} if self.interpolation in ("nearest", "area") else {"align_corners": False}
        out = F.interpolate(flat, size=(self.h, self.w), mode=self.interpolation, **kwargs)
        if integer:
            out = out.clamp(0.0, 255.0).round().to(value.dtype)
        elif self.interpolation != "bicubic":
            out = self._clamped(out)
        return out.reshape(*lead, c, self.h, self.w)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        _check_image("Resize", key, spec, None)
        self._record_bounds(spec)
        shape = (*spec.shape[:-2], self.h, self.w)
        if self.interpolation == "bicubic":  # overshoots: no bounds kept
            return Unbounded(shape=shape, device=spec.device, dtype=spec.dtype)
        return _image_spec(spec, shape, spec.dtype)

    def extra_repr(self) -> str:
        return (
            f"w={self.w}, h={self.h}, interpolation={self.interpolation!r}, {super().extra_repr()}"
        )


class CenterCrop(_ImageTransform):
    """Crops the centre ``h x w`` of ``[..., C, H, W]`` images.

    Args:
        w: the output width.
        h: the output height; default ``w``.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = CenterCrop(4)
        >>> t(TensorDict(pixels=torch.rand(3, 10, 8)))["pixels"].shape
        torch.Size([3, 4, 4])
    """

    def __init__(
        self, w: int, h: int | None = None, in_keys: _Keys = None, out_keys: _Keys = None
    ) -> None:
        super().__init__(in_keys, out_keys)
        self.w = int(w)
        self.h = int(w if h is None else h)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        top = (value.shape[-2] - self.h) // 2
        left = (value.shape[-1] - self.w) // 2
        return value[..., top : top + self.h, left : left + self.w]

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        _check_image("CenterCrop", key, spec, None)
        if spec.shape[-2] < self.h or spec.shape[-1] < self.w:
            raise ValueError(
                f"CenterCrop: cannot crop {self.h}x{self.w} from images of shape "
                f"{tuple(spec.shape)} under {key!r}."
            )
        return _image_spec(spec, (*spec.shape[:-2], self.h, self.w), spec.dtype)

    def extra_repr(self) -> str:
        return f"w={self.w}, h={self.h}, {super().extra_repr()}"


class Crop(_ImageTransform):
    """Crops the ``h x w`` window of ``[..., C, H, W]`` images whose top-left corner is at
    row ``top`` and column ``left``.

    Args:
        w: the output width.
        h: the output height; default ``w``.
        top: the first row kept. Defaults to 0.
        left: the first column kept. Defaults to 0.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.

    Raises:
        ValueError: a negative corner or a non-positive size; (on the specs) a window that
            does not fit in the images.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Crop(2, 3, top=1, left=4)
        >>> t(TensorDict(pixels=torch.rand(3, 10, 8)))["pixels"].shape
        torch.Size([3, 3, 2])
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
        return value[..., self.top : self.top + self.h, self.left : self.left + self.w]

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        _check_image("Crop", key, spec, None)
        if spec.shape[-2] < self.top + self.h or spec.shape[-1] < self.left + self.w:
            raise ValueError(
                f"Crop: the window of {self.h}x{self.w} at (top={self.top}, left={self.left}) "
                f"does not fit in images of shape {tuple(spec.shape)} under {key!r}."
            )
        return _image_spec(spec, (*spec.shape[:-2], self.h, self.w), spec.dtype)

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
