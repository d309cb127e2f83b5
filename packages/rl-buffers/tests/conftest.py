"""Shared fixtures: a chi-square goodness-of-fit check for the sampler tests."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDictBase

from rl_core.transforms import Transform


def _chi2_critical(df: int, z: float = 3.719) -> float:
    # Wilson-Hilferty approximation of the chi-square quantile; z=3.719 is the standard
    # normal quantile at 1 - 1e-4, so a correct sampler fails one seed in ten thousand
    # (and each test runs under a fixed seed, so it either always passes or always fails).
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi_square_statistic(counts: torch.Tensor, probs: torch.Tensor) -> tuple[float, float]:
    """Pearson's statistic of ``counts`` against ``probs``, and the critical value."""
    counts = counts.double()
    expected = probs.double() / probs.sum() * counts.sum()
    keep = expected > 0
    if bool((counts[~keep] > 0).any()):
        return math.inf, _chi2_critical(max(int(keep.sum()) - 1, 1))
    stat = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    return stat, _chi2_critical(int(keep.sum()) - 1)


@pytest.fixture
def chi_square():
    """``chi_square(counts, probs)`` -> True when the counts fit ``probs``."""

    def check(counts: torch.Tensor, probs: torch.Tensor) -> bool:
        stat, critical = chi_square_statistic(counts, probs)
        return stat < critical

    return check


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


class Rename(Transform):
    """Moves each entry of ``in_keys`` to the key of the same rank in ``out_keys``: the replay
    buffer tests' own key-moving transform (rl-buffers does not depend on rl-envs, whose
    ``RenameTransform`` users would pass)."""

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for old, new in zip(self.in_keys, self.out_keys, strict=True):
            tensordict.rename_key_(old, new)
        return tensordict


@pytest.fixture
def rename():
    """The :class:`Rename` transform class."""
    return Rename
