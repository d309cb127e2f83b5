"""R3MTransform: images embedded by R3M's pretrained ResNet (Nair et al., 2022)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import NestedKey
from rl_envs.transforms._pretrained import convnet_state, load_checkpoint, preprocess
from rl_envs.transforms._resnet import ResNet

R3M_URL = "https://pytorch.s3.amazonaws.com/models/rl/r3m/r3m_{depth}.pt"
_MODELS = {"resnet18": 18, "resnet34": 34, "resnet50": 50}
_Keys = NestedKey | Sequence[NestedKey] | None


class R3MTransform(Transform):
    """Replaces images by their R3M embedding (TorchRL's ``R3MTransform``; R3M: "A Universal
    Visual Representation for Robot Manipulation", Nair et al., 2022).

    Each image (uint8 ``[..., H, W, 3]`` as envs render them, or float ``[..., 3, H, W]`` in
    [0, 1]) is scaled to [0, 1], normalised by ImageNet's mean and std, resized to
    ``size x size`` and embedded by a ResNet without its classifier: 512 features for
    ``resnet18``/``resnet34``, 2048 for ``resnet50``. The network runs in evaluation mode
    without gradients. The image entries are removed (``tensor_pixels_keys`` keeps copies).

    Weights: ``weights=PATH`` loads a local checkpoint (the published R3M file, or a state
    dict of the ResNet); ``download=True`` fetches the published one
    (``https://pytorch.s3.amazonaws.com/models/rl/r3m/r3m_<depth>.pt``) through ``torch.hub``'s
    cache in ``download_path`` (a file already there is used without a download); neither
    leaves the network at its random initialisation, as TorchRL does.

    Args:
        model_name: ``"resnet18"``, ``"resnet34"`` or ``"resnet50"``.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: the embeddings. Defaults to ``["r3m_vec"]`` with ``stack_images`` (one
            entry: the embeddings of the ``in_keys`` images concatenated in order), else
            ``["r3m_vec_<i>"]`` (one per image).
        size: the side of the images the network reads. Defaults to 244.
        stack_images: see ``out_keys``. Defaults to True.
        download: fetch the published weights. Defaults to False.
        download_path: ``torch.hub``'s directory for them.
        tensor_pixels_keys: where to keep copies of the images (one key per ``in_keys``).
        weights: a local checkpoint (keyword-only).

    Raises:
        ValueError: an unknown ``model_name``, or ``out_keys``/``tensor_pixels_keys`` of the
            wrong length.
        FileNotFoundError: ``weights`` is not a file.
        RuntimeError: the download failed (offline): the message names the URL.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = R3MTransform("resnet18", size=64)
        >>> pixels = torch.zeros(2, 48, 48, 3, dtype=torch.uint8)
        >>> t(TensorDict(pixels=pixels, batch_size=[2]))["r3m_vec"].shape
        torch.Size([2, 512])
    """

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
        if model_name not in _MODELS:
            raise ValueError(
                f"R3MTransform: model_name must be one of {sorted(_MODELS)}, got {model_name!r}."
            )
        in_keys = ["pixels"] if in_keys is None else in_keys
        super().__init__(in_keys=in_keys)
        n = len(self.in_keys)
        if out_keys is None:
            out_keys = ["r3m_vec"] if stack_images else [f"r3m_vec_{i}" for i in range(n)]
        self.out_keys = Transform(in_keys=out_keys).in_keys
        expected = 1 if stack_images else n
        if len(self.out_keys) != expected:
            raise ValueError(
                f"R3MTransform: expected {expected} out_keys (stack_images={stack_images}, "
                f"{n} in_keys), got {self.out_keys}."
            )
        copies = [] if tensor_pixels_keys is None else Transform(in_keys=tensor_pixels_keys).in_keys
        if copies and len(copies) != n:
            raise ValueError(
                f"R3MTransform: expected one tensor_pixels_keys entry per in_keys entry ({n}), "
                f"got {copies}."
            )
        self.tensor_pixels_keys = copies
        self.model_name = model_name
        self.size = int(size)
        self.stack_images = bool(stack_images)
        depth = _MODELS[model_name]
        self.network = ResNet(depth)
        self.outdim = self.network.out_features
        if weights is not None or download:
            checkpoint = load_checkpoint(
                "R3MTransform",
                weights=weights,
                url=R3M_URL.format(depth=depth),
                download_path=download_path,
            )
            self.network.load_state_dict(convnet_state(checkpoint, "r3m"))
        self.network.eval()

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


__all__ = ["R3MTransform"]
