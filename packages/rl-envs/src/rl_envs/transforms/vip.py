"""VIPTransform and VIPRewardTransform: VIP's pretrained embedding, and rewards from it
(Ma et al., 2023)."""

from __future__ import annotations

from typing import ClassVar

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import Composite, Unbounded
from rl_core.keys import REWARD
from rl_envs.transforms._encoder import PretrainedEncoderBase

VIP_URL = "https://pytorch.s3.amazonaws.com/models/rl/vip/model.pt"
GOAL_IMAGE = "goal_image"
GOAL_EMBEDDING = "goal_embedding"


class VIPTransform(PretrainedEncoderBase):
    """Replaces images by their VIP embedding (TorchRL's ``VIPTransform``; VIP: "Towards
    Universal Visual Reward and Representation via Value-Implicit Pre-Training", Ma et al.,
    2023).

    VIP's network is a ResNet-50 whose head maps the 2048 pooled features to a 1024-dim
    embedding. Images (uint8 ``[..., H, W, 3]`` or float ``[..., 3, H, W]`` in [0, 1]) are
    scaled to [0, 1], normalised by ImageNet's mean and std and resized to ``size x size``,
    as for :class:`R3MTransform`; the image entries are removed (``tensor_pixels_keys``
    keeps copies).

    Weights: ``weights=PATH`` (the published checkpoint, or a state dict of the network), or
    ``download=True``: ``https://pytorch.s3.amazonaws.com/models/rl/vip/model.pt`` through
    ``torch.hub``'s cache in ``download_path``; neither leaves the random initialisation.

    Args:
        model_name: ``"resnet50"``.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: defaults to ``["vip_vec"]`` (``stack_images``) or ``["vip_vec_<i>"]``.
        size: the side of the images the network reads. Defaults to 244.
        stack_images: one entry for all images (concatenated) or one per image.
        download: fetch the published weights. Defaults to False.
        download_path: ``torch.hub``'s directory for them.
        tensor_pixels_keys: where to keep copies of the images.
        weights: a local checkpoint (keyword-only).

    Raises:
        ValueError: an unknown ``model_name`` or wrong key counts.
        FileNotFoundError: ``weights`` is not a file.
        RuntimeError: the download failed (offline): the message names the URL.
    """

    MODELS: ClassVar[dict[str, int]] = {"resnet50": 50}
    URL: ClassVar[str] = VIP_URL
    CHECKPOINT_KEY: ClassVar[str] = "vip"
    PREFIX: ClassVar[str] = "vip_vec"

    @staticmethod
    def _head(depth: int) -> nn.Module:
        return nn.Linear(2048, 1024)


class VIPRewardTransform(VIPTransform):
    """:class:`VIPTransform` whose embeddings also give the reward (TorchRL's
    ``VIPRewardTransform``): the decrease of the embedding's distance to the goal's,
    ``reward = ||e(o_t) - e(g)|| - ||e(o_{t+1}) - e(g)||``, written at ``"reward"`` (shape
    ``[*batch, 1]``), in place of the env's reward.

    The goal comes with the reset: ``env.reset(TensorDict(goal_image=...))`` embeds it (same
    preprocessing) into ``"goal_embedding"``, which the env then carries as an observation; a
    reset input may give ``"goal_embedding"`` directly instead.

    Its arguments are :class:`VIPTransform`'s; the reward reads the first embedding
    (``out_keys[0]``).

    Raises:
        KeyError: a reset without ``"goal_image"`` or ``"goal_embedding"``.
    """

    def _goal(self, tensordict: TensorDictBase | None, batch: torch.Size) -> torch.Tensor:
        source = tensordict
        if source is not None and source.get(GOAL_EMBEDDING, None) is not None:
            return source.get(GOAL_EMBEDDING)
        image = None if source is None else source.get(GOAL_IMAGE, None)
        if image is None:
            raise KeyError(
                "VIPRewardTransform: reset needs the goal: pass "
                "env.reset(TensorDict(goal_image=<image>, batch_size=env.batch_size)) (or a "
                "'goal_embedding')."
            )
        goal = self.embed(image)
        return goal.expand(*batch, goal.shape[-1]) if goal.ndim == 1 and batch else goal

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        out = self._call(tensordict_reset)
        out.set(GOAL_EMBEDDING, self._goal(tensordict, out.batch_size).clone())
        return out

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        before = tensordict.get(self.out_keys[0])
        goal = tensordict.get(GOAL_EMBEDDING)
        out = self._call(next_tensordict)
        after = out.get(self.out_keys[0])
        reward = torch.linalg.vector_norm(before - goal, dim=-1) - torch.linalg.vector_norm(
            after - goal, dim=-1
        )
        out.set(REWARD, reward.unsqueeze(-1))
        out.set(GOAL_EMBEDDING, goal.clone())
        return out

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec = super().transform_observation_spec(observation_spec)
        observation_spec[GOAL_EMBEDDING] = Unbounded(
            shape=(*observation_spec.shape, self.outdim), device=observation_spec.device
        )
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        reward_spec[REWARD] = Unbounded(shape=(*reward_spec.shape, 1), device=reward_spec.device)
        return reward_spec


__all__ = ["VIPRewardTransform", "VIPTransform"]
