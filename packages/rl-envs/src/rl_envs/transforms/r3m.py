"""R3MTransform: images embedded by R3M's pretrained ResNet (Nair et al., 2022)."""

from __future__ import annotations

from typing import ClassVar

from rl_envs.transforms._encoder import PretrainedEncoderBase

R3M_URL = "https://pytorch.s3.amazonaws.com/models/rl/r3m/r3m_{depth}.pt"


class R3MTransform(PretrainedEncoderBase):
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

    MODELS: ClassVar[dict[str, int]] = {"resnet18": 18, "resnet34": 34, "resnet50": 50}
    URL: ClassVar[str] = R3M_URL
    CHECKPOINT_KEY: ClassVar[str] = "r3m"
    PREFIX: ClassVar[str] = "r3m_vec"


__all__ = ["R3MTransform"]
