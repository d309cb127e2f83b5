"""PretrainedEncoderBase: images replaced by a pretrained ResNet's embedding (R3M, VIP)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import NestedKey
from rl_envs.transforms._pretrained import convnet_state, load_checkpoint, preprocess
from rl_envs.transforms._resnet import ResNet

_Keys = NestedKey | Sequence[NestedKey] | None


class PretrainedEncoderBase(Transform):
    """The shared body of :class:`R3MTransform` and :class:`VIPTransform`: each image (uint8
    ``[..., H, W, 3]`` or float ``[..., 3, H, W]`` in [0, 1]) is scaled to [0, 1], normalised
    by ImageNet's mean and std, resized to ``size x size`` and embedded by the network (in
    evaluation mode, without gradients); the image entries are removed (``tensor_pixels_keys``
    keeps copies). A subclass names its models (``MODELS``: name -> ResNet depth), its head
    (``_head``), its published checkpoint (``URL``, ``CHECKPOINT_KEY``) and its default output
    key (``PREFIX``).
    """

    MODELS: ClassVar[dict[str, int]] = {}
    URL: ClassVar[str] = ""
    CHECKPOINT_KEY: ClassVar[str] = ""
    PREFIX: ClassVar[str] = ""

    def __init__(
        self,
        model_name: str,
        in_keys: _Keys = None,
        out_keys: _Keys = None,
        size: int = 244,
        stack_images: bool = True,
        download: bool = False,
        download_path: str | os.PathLike | None = None,
        tensor_pixels_keys: _Keys = None,
        *,
        weights: str | os.PathLike | None = None,
    ) -> None:
        name = type(self).__name__
        if model_name not in self.MODELS:
            raise ValueError(
                f"{name}: model_name must be one of {sorted(self.MODELS)}, got {model_name!r}."
            )
        super().__init__(in_keys=["pixels"] if in_keys is None else in_keys)
        n = len(self.in_keys)
        if out_keys is None:
            prefix = self.PREFIX
            out_keys = [prefix] if stack_images else [f"{prefix}_{i}" for i in range(n)]
        self.out_keys = Transform(in_keys=out_keys).in_keys
        expected = 1 if stack_images else n
        if len(self.out_keys) != expected:
            raise ValueError(
                f"{name}: expected {expected} out_keys (stack_images={stack_images}, {n} "
                f"in_keys), got {self.out_keys}."
            )
        copies = [] if tensor_pixels_keys is None else Transform(in_keys=tensor_pixels_keys).in_keys
        if copies and len(copies) != n:
            raise ValueError(
                f"{name}: expected one tensor_pixels_keys entry per in_keys entry ({n}), got "
                f"{copies}."
            )
        self.tensor_pixels_keys = copies
        self.model_name = model_name
        self.size = int(size)
        self.stack_images = bool(stack_images)
        depth = self.MODELS[model_name]
        self.network = ResNet(depth, fc=self._head(depth))
        with torch.no_grad():
            self.outdim = int(
                self.network.fc(torch.zeros(1, 2048 if depth == 50 else 512)).shape[-1]
            )
        if weights is not None or download:
            checkpoint = load_checkpoint(
                name, weights=weights, url=self.URL.format(depth=depth), download_path=download_path
            )
            self.network.load_state_dict(convnet_state(checkpoint, self.CHECKPOINT_KEY))
        self.network.eval()

    @staticmethod
    def _head(depth: int) -> nn.Module:
        return nn.Identity()

    @torch.no_grad()
    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """The embedding ``[..., outdim]`` of images ``[..., H, W, 3]`` (uint8) or
        ``[..., 3, H, W]`` (float)."""
        self.network.eval()
        x = preprocess(images, self.size)
        batch = x.shape[:-3]
        out = self.network(x.reshape(-1, *x.shape[-3:]))
        return out.reshape(*batch, out.shape[-1])

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        present = [key for key in self.in_keys if tensordict.get(key, None) is not None]
        if not present:
            return tensordict
        for key, copy in zip(self.in_keys, self.tensor_pixels_keys):
            if key in present:
                tensordict.set(copy, tensordict.get(key).clone())
        embeddings = [self.embed(tensordict.get(key)) for key in present]
        if self.stack_images:
            tensordict.set(self.out_keys[0], torch.cat(embeddings, -1))
        else:
            for key, out_key in zip(self.in_keys, self.out_keys):
                if key in present:
                    tensordict.set(out_key, embeddings[present.index(key)])
        return tensordict.exclude(*present)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        batch = observation_spec.shape
        for key, copy in zip(self.in_keys, self.tensor_pixels_keys):
            observation_spec[copy] = observation_spec[key].clone()
        n = len(self.in_keys)
        device = observation_spec.device
        if self.stack_images:
            observation_spec[self.out_keys[0]] = Unbounded(
                shape=(*batch, self.outdim * n), device=device
            )
        else:
            for out_key in self.out_keys:
                observation_spec[out_key] = Unbounded(shape=(*batch, self.outdim), device=device)
        for key in self.in_keys:
            del observation_spec[key]
        return observation_spec

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, model_name={self.model_name!r}, size={self.size}"
