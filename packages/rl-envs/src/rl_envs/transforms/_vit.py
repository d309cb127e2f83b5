"""The Vision Transformer of VC1Transform (VC-1, Majumdar et al., 2023), in timm's parameter
layout, so that eai-vc's published MAE checkpoints load as they are.

Written here so that rl-envs needs neither timm nor eai-vc: parameter names ``patch_embed.proj``,
``cls_token``, ``pos_embed``, ``blocks.<i>.norm1``, ``blocks.<i>.attn.qkv``,
``blocks.<i>.attn.proj``, ``blocks.<i>.norm2``, ``blocks.<i>.mlp.fc1``/``fc2`` and ``norm``.
The embedding is the final-normed class token (eai-vc's ``use_cls=True``).
"""

from __future__ import annotations

import torch
from torch import nn

#: name -> (embedding width, depth, heads) of the VC-1 ViTs (patch 16, 224 x 224 images);
#: ``"default"`` is TorchRL's small untrained test model.
VIT_SIZES: dict[str, tuple[int, int, int]] = {
    "base": (768, 12, 12),
    "large": (1024, 24, 16),
    "default": (16, 4, 4),
}


class _PatchEmbed(nn.Module):
    def __init__(self, width: int, patch: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, width, patch, patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)  # [B, patches, width]


class _Attention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape
        q, k, v = self.qkv(x).reshape(batch, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        out = nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, width))


class _Mlp(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class _Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width, eps=1e-6)
        self.attn = _Attention(width, heads)
        self.norm2 = nn.LayerNorm(width, eps=1e-6)
        self.mlp = _Mlp(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """A pre-norm ViT over ``[B, 3, image, image]`` images, returning ``[B, width]``: the
    class token after the blocks and the final LayerNorm.

    Args:
        width: the token width (the embedding size).
        depth: the number of blocks.
        heads: attention heads per block.
        patch: the patch side. Defaults to 16.
        image: the image side. Defaults to 224.
    """

    def __init__(
        self, width: int, depth: int, heads: int, *, patch: int = 16, image: int = 224
    ) -> None:
        super().__init__()
        self.image = image
        self.patch_embed = _PatchEmbed(width, patch)
        patches = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embed = nn.Parameter(torch.zeros(1, patches + 1, width))
        nn.init.normal_(self.cls_token, std=0.02)
        nn.init.normal_(self.pos_embed, std=0.02)
        self.blocks = nn.Sequential(*(_Block(width, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(width, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.patch_embed(x) + self.pos_embed[:, 1:]
        cls = (self.cls_token + self.pos_embed[:, :1]).expand(x.shape[0], -1, -1)
        tokens = self.blocks(torch.cat([cls, tokens], dim=1))
        return self.norm(tokens)[:, 0]
