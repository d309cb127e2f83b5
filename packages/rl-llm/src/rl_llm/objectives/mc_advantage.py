"""MCAdvantage: group-relative (Monte-Carlo) advantages of responses that share a prompt."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm._utils import as_strings
from rl_llm.keys import ADVANTAGE, QUERY


def group_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    *,
    normalize_std: bool = True,
    eps: float = 1e-6,
) -> torch.Tensor:
    """``(r - mean_g) / (std_g + eps)`` per group ``g`` (or ``r - mean_g`` without std).

    Args:
        rewards: ``[N]`` float, one reward per response.
        group_ids: ``[N]`` int, the group (prompt) of each response.
        normalize_std: divide by the group's unbiased standard deviation.
        eps: added to the standard deviation.

    Returns:
        ``[N]`` advantages. A group of one response gets 0.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import group_advantages
        >>> group_advantages(torch.tensor([1.0, 0.0, 5.0, 5.0]), torch.tensor([0, 0, 1, 1]),
        ...     normalize_std=False).tolist()
        [0.5, -0.5, 0.0, 0.0]
    """
    n_groups = int(group_ids.max()) + 1 if group_ids.numel() else 0
    count = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(
        0, group_ids, torch.ones_like(rewards)
    )
    mean = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_ids, rewards) / count
    centered = rewards - mean[group_ids]
    if not normalize_std:
        return centered
    sq = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_ids, centered.pow(2))
    std = (sq / (count - 1).clamp(min=1)).sqrt()
    return centered / (std[group_ids] + eps)


class MCAdvantage(Transform):
    """Writes group-relative advantages into a batch of finished dialogs (GRPO's baseline).

    Responses to the same prompt (same ``prompt_key`` string) form groups of ``grpo_size``, in
    order of appearance; each one's advantage is its reward minus the group mean, divided by the group's standard deviation.
    Apply it to a collected batch (``advantage = MCAdvantage(grpo_size=4)(batch)``), or hand it
    to a collector as ``postproc``.

    Args:
        grpo_size: the number of responses per group; each prompt has a multiple of it.
        prompt_key: the entry that identifies a prompt (one string per dialog).
        reward_key: the reward of each dialog, ``[N, 1]``.
        advantage_key: where the ``[N, 1]`` advantage is written.
        normalize_std: divide by the group standard deviation.

    Raises:
        ValueError: a prompt's count is not a multiple of ``grpo_size``, or the batch is not 1-d.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.objectives import MCAdvantage
        >>> batch = TensorDict(query=["a", "b", "a", "b"],
        ...     next=TensorDict(reward=torch.tensor([[1.0], [2.0], [3.0], [2.0]]), batch_size=[4]),
        ...     batch_size=[4])
        >>> MCAdvantage(grpo_size=2, normalize_std=False)(batch)["advantage"].squeeze(-1).tolist()
        [-1.0, 0.0, 1.0, 0.0]
    """

    def __init__(
        self,
        grpo_size: int,
        *,
        prompt_key: NestedKey = QUERY,
        reward_key: NestedKey = ("next", "reward"),
        advantage_key: NestedKey = ADVANTAGE,
        normalize_std: bool = True,
    ) -> None:
        super().__init__(in_keys=[reward_key], out_keys=[advantage_key])
        if grpo_size < 1:
            raise ValueError(f"MCAdvantage: expected grpo_size >= 1, got {grpo_size}.")
        self.grpo_size = grpo_size
        self.prompt_key = prompt_key
        self.reward_key = reward_key
        self.advantage_key = advantage_key
        self.normalize_std = normalize_std

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.batch_dims != 1:
            raise ValueError(
                f"MCAdvantage: expected a 1-d batch of dialogs, got batch "
                f"{tuple(tensordict.batch_size)}. Reshape it (e.g. td.reshape(-1))."
            )
        prompts = as_strings(tensordict.get(self.prompt_key))
        # Responses to one prompt form groups of grpo_size in order of appearance (a batch
        # may hold the same prompt drawn twice).
        seen: dict[str, int] = {}
        group_of: dict[tuple[str, int], int] = {}
        ids_list = []
        for p in prompts:
            k = seen.get(p, 0)
            seen[p] = k + 1
            ids_list.append(group_of.setdefault((p, k // self.grpo_size), len(group_of)))
        bad = {p: n for p, n in seen.items() if n % self.grpo_size}
        if bad:
            raise ValueError(
                f"MCAdvantage: expected a multiple of {self.grpo_size} responses per prompt, got "
                f"{bad}. Collect whole groups (DatasetChatEnv(repeats={self.grpo_size}))."
            )
        ids = torch.tensor(ids_list)
        rewards = tensordict.get(self.reward_key).reshape(len(prompts), -1).sum(-1)
        adv = group_advantages(rewards.float(), ids, normalize_std=self.normalize_std)
        tensordict.set(self.advantage_key, adv.unsqueeze(-1))
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "MCAdvantage works on collected batches of whole groups, not inside an env step: "
            "call it on the batch (or pass it as a collector postproc)."
        )

    def _reset(self, tensordict, tensordict_reset):
        return tensordict_reset
