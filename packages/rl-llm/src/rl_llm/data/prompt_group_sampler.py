"""PromptGroupSampler: dataset indices in groups of identical prompts, for GRPO."""

from __future__ import annotations

from collections.abc import Iterator, Sized

import torch


class PromptGroupSampler:
    """Yields each prompt index ``group_size`` times in a row, prompts in (shuffled) order.

    A ``torch.utils.data.DataLoader(dataset, sampler=PromptGroupSampler(...),
    batch_size=k * group_size)`` then gives batches of ``k`` whole groups, which is what
    group-relative advantages (:class:`~rl_llm.objectives.MCAdvantage`) need. Each epoch
    visits every prompt once (reshuffled per epoch with ``shuffle``).

    Args:
        data_source: the dataset (anything with ``len``) or its length.
        group_size: responses sampled per prompt (GRPO's group size).
        shuffle: shuffle the prompts every epoch.
        seed: seeds the shuffling; epoch ``e`` uses ``seed + e``.

    Examples:
        >>> from rl_llm.data import PromptGroupSampler
        >>> list(PromptGroupSampler(3, group_size=2, shuffle=False))
        [0, 0, 1, 1, 2, 2]
        >>> len(PromptGroupSampler(["a", "b"], group_size=4))
        8
    """

    def __init__(
        self, data_source: Sized | int, group_size: int, *, shuffle: bool = True, seed: int = 0
    ) -> None:
        n = data_source if isinstance(data_source, int) else len(data_source)
        if n < 1:
            raise ValueError(f"PromptGroupSampler: expected a non-empty dataset, got {n} items.")
        if group_size < 1:
            raise ValueError(f"PromptGroupSampler: expected group_size >= 1, got {group_size}.")
        self.num_prompts = n
        self.group_size = group_size
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0

    def __len__(self) -> int:
        return self.num_prompts * self.group_size

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed + self.epoch)
            order = torch.randperm(self.num_prompts, generator=gen).tolist()
        else:
            order = list(range(self.num_prompts))
        self.epoch += 1
        for index in order:
            for _ in range(self.group_size):
                yield index
