"""VC1Transform: images embedded by VC-1's pretrained ViT (Majumdar et al., 2023)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import NestedKey
from rl_envs.transforms._pretrained import load_checkpoint, preprocess
from rl_envs.transforms._vit import VIT_SIZES, VisionTransformer

#: The published VC-1 checkpoints (eai-vc's MAE training state: ``{"model": state dict}``).
VC1_URLS = {
    "base": "https://dl.fbaipublicfiles.com/eai-vc/vc1_vitb.pth",
    "large": "https://dl.fbaipublicfiles.com/eai-vc/vc1_vitl.pth",
}
_RESIZE, _CROP = 256, 224


def vc1_state(checkpoint: Any, where: str) -> dict[str, torch.Tensor]:
    """The encoder's state dict from an eai-vc checkpoint (``{"model": state}`` with the MAE
    decoder's and mask token's entries, which are dropped) or from a plain state dict."""
    state = checkpoint.get("model", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise ValueError(
            f"{where}: expected a checkpoint dict ({{'model': state dict}} or a state dict), got "
            f"{type(checkpoint).__name__}."
        )
    out = {}
    for name, value in state.items():
        name = name.removeprefix("module.")
        if "decoder" in name or "mask_token" in name or name.startswith("head."):
            continue
        out[name] = value
    return out


class VC1Transform(Transform):
    """Replaces images by their VC-1 embedding (TorchRL's ``VC1Transform``; VC-1: "Where are
    we in the search for an Artificial Visual Cortex for Embodied Intelligence?", Majumdar et
    al., 2023).

    Each image (uint8 ``[..., H, W, 3]`` as envs render them, or float ``[..., 3, H, W]`` in
    [0, 1]) is scaled to [0, 1], normalised by ImageNet's mean and std, resized to 256 x 256,
    center-cropped to 224 x 224 (TorchRL's mapping of eai-vc's preprocessing) and embedded by
    the ViT (patch 16; the final-normed class token): 768 features for ``"base"`` (ViT-B/16),
    1024 for ``"large"`` (ViT-L/16), 16 for ``"default"`` (TorchRL's small untrained model for
    tests). The network runs in evaluation mode without gradients.

    Weights: ``"base"`` and ``"large"`` load eai-vc's published checkpoint
    (``https://dl.fbaipublicfiles.com/eai-vc/vc1_vit{b,l}.pth``) through ``torch.hub``'s cache
    in ``download_path`` (a file already there is used without a download), or ``weights=PATH``
    (the published file or a state dict of the encoder); ``download=False`` leaves them at
    random initialisation. ``"default"`` loads ``weights`` only (nothing is published for it).

    Args:
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: the embeddings, one per image entry. Defaults to ``["VC1_vec"]`` (one image
            entry).
        model_name: ``"base"``, ``"large"`` or ``"default"``. Defaults to ``"default"``.
        del_keys: remove the image entries. Defaults to True.
        weights: a local checkpoint (keyword-only).
        download: fetch the published checkpoint when ``weights`` is not given (keyword-only).
            Defaults to True.
        download_path: ``torch.hub``'s directory for it (keyword-only).

    Raises:
        ValueError: an unknown ``model_name``; ``out_keys`` of another length than
            ``in_keys``; a checkpoint that does not fit the model (the message names both).
        FileNotFoundError: ``weights`` is not a file.
        RuntimeError: the download failed (offline): the message names the URL.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = VC1Transform(model_name="default")
        >>> pixels = torch.zeros(2, 64, 64, 3, dtype=torch.uint8)
        >>> t(TensorDict(pixels=pixels, batch_size=[2]))["VC1_vec"].shape
        torch.Size([2, 16])
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        model_name: str = "default",
        del_keys: bool = True,
        *,
        weights: str | os.PathLike | None = None,
        download: bool = True,
        download_path: str | os.PathLike | None = None,
    ) -> None:
        if model_name not in VIT_SIZES:
            raise ValueError(
                f"VC1Transform: model_name must be one of {sorted(VIT_SIZES)}, got {model_name!r}."
            )
        in_keys = ["pixels"] if in_keys is None else in_keys
        if out_keys is None:
            out_keys = ["VC1_vec"] if len(Transform(in_keys=in_keys).in_keys) == 1 else None
            if out_keys is None:
                raise ValueError(
                    "VC1Transform: out_keys must be given (one per in_keys entry) with several "
                    "in_keys."
                )
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self.model_name = model_name
        self.del_keys = bool(del_keys)
        width, depth, heads = VIT_SIZES[model_name]
        self.embd_size = width
        if weights is None and not (download and model_name in VC1_URLS):
            self.model = VisionTransformer(width, depth, heads, image=_CROP)
        else:
            checkpoint = load_checkpoint(
                "VC1Transform",
                weights=weights,
                url=VC1_URLS.get(model_name, VC1_URLS["base"]),
                download_path=download_path,
            )
            state = vc1_state(checkpoint, "VC1Transform")
            with torch.device("meta"):  # no random initialisation: the checkpoint replaces it
                self.model = VisionTransformer(width, depth, heads, image=_CROP)
            try:
                self.model.load_state_dict(state, assign=True)
            except RuntimeError as err:
                source = VC1_URLS[model_name] if weights is None else os.fspath(weights)
                raise ValueError(
                    f"VC1Transform: the checkpoint {source} does not fit the {model_name!r} "
                    f"ViT (width {width}, depth {depth}): {str(err).splitlines()[0]}"
                ) from err
        self.model.eval()

    @torch.no_grad()
    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """The embedding ``[..., embd_size]`` of images ``[..., H, W, 3]`` (uint8) or
        ``[..., 3, H, W]`` (float in [0, 1])."""
        self.model.eval()
        x = preprocess(images, _RESIZE)
        start = (_RESIZE - _CROP) // 2
        x = x[..., start : start + _CROP, start : start + _CROP]
        batch = x.shape[:-3]
        out = self.model(x.reshape(-1, *x.shape[-3:]))
        return out.reshape(*batch, out.shape[-1])

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        present = []
        for in_key, out_key in zip(self.in_keys, self.out_keys, strict=True):
            images = tensordict.get(in_key, None)
            if images is None:
                continue
            present.append(in_key)
            tensordict.set(out_key, self.embed(images))
        if self.del_keys:
            gone = [key for key in present if key not in self.out_keys]
            tensordict = tensordict.exclude(*gone)
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for in_key, out_key in zip(self.in_keys, self.out_keys, strict=True):
            spec = observation_spec[in_key]
            observation_spec[out_key] = Unbounded(
                shape=(*spec.shape[:-3], self.embd_size), device=spec.device
            )
        if self.del_keys:
            for key in self.in_keys:
                if key not in self.out_keys:
                    del observation_spec[key]
        return observation_spec

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, model_name={self.model_name!r}"


__all__ = ["VC1Transform"]
