"""The ResNets of the pretrained-encoder transforms (R3M, VIP), in torchvision's parameter layout.

Written here so that rl-envs needs no torchvision: the parameter names (``conv1``, ``bn1``,
``layer1.0.conv1``, ..., ``layerN.0.downsample.0``/``.1``, ``fc``) are torchvision's, so the
published R3M and VIP checkpoints (torchvision ResNets) load into them as they are.
"""

from __future__ import annotations

import torch
from torch import nn

# blocks per stage, block type and feature width of each depth
_DEPTHS = {18: ((2, 2, 2, 2), False), 34: ((3, 4, 6, 3), False), 50: ((3, 4, 6, 3), True)}


class _Basic(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(cin, width, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(cin, width * 4, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Sequential | None:
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    """ResNet-18/34/50 (He et al., 2016) on ``[N, 3, H, W]`` images; ``fc`` is the head
    (``nn.Identity()`` gives the pooled features: 512 for 18/34, 2048 for 50).

    Args:
        depth: 18, 34 or 50.
        fc: the head module. Defaults to ``nn.Identity()``.
    """

    def __init__(self, depth: int, fc: nn.Module | None = None) -> None:
        if depth not in _DEPTHS:
            raise ValueError(f"ResNet: expected depth 18, 34 or 50, got {depth!r}.")
        super().__init__()
        stages, bottleneck = _DEPTHS[depth]
        block = _Bottleneck if bottleneck else _Basic
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for index, (blocks, width) in enumerate(zip(stages, (64, 128, 256, 512)), start=1):
            layers = []
            for b in range(blocks):
                stride = 2 if b == 0 and index > 1 else 1
                layers.append(block(cin, width, stride))
                cin = width * block.expansion
            setattr(self, f"layer{index}", nn.Sequential(*layers))
        self.out_features = cin
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Identity() if fc is None else fc

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))
