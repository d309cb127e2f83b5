"""MCAdvantage: group-relative (Monte-Carlo) advantages of responses that share a prompt."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm._utils import as_strings
from rl_llm.keys import ADVANTAGE, QUERY
from rl_llm.objectives.mc_selector import MCAdvantageSelector


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

    Dynamic sampling (DAPO): with ``candidate_group_size`` (> ``grpo_size``) responses to a
    prompt form a pool of candidates of which ``selector`` keeps ``grpo_size``; with
    ``keep_return_bounds=(low, high)`` a group is kept only if its mean return lies strictly
    inside (``(0, 1)`` drops the all-right and all-wrong groups of 0/1 rewards). The dialogs not
    kept are left out of the returned batch (in order otherwise); without either option every
    dialog is kept and the batch is written in place.

    Args:
        grpo_size: the number of responses per group.
        prompt_key: the entry that identifies a prompt (one string per dialog).
        reward_key: the reward of each dialog, ``[N, 1]``.
        advantage_key: where the ``[N, 1]`` advantage is written.
        normalize_std: divide by the group standard deviation.
        candidate_group_size: responses sampled per group (default ``grpo_size``); each
            prompt has a multiple of it.
        keep_return_bounds: the exclusive interval a kept group's mean return lies in.
        selector: chooses the kept responses of a pool (default
            :class:`MCAdvantageSelector` ``("balanced")``).

    Raises:
        ValueError: a prompt's count is not a multiple of ``candidate_group_size``, the batch
            is not 1-d, ``candidate_group_size < grpo_size``, or ``keep_return_bounds`` is not
            a pair ``low < high``.

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
        candidate_group_size: int | None = None,
        keep_return_bounds: tuple[float, float] | None = None,
        selector: MCAdvantageSelector | None = None,
    ) -> None:
        super().__init__(in_keys=[reward_key], out_keys=[advantage_key])
        if grpo_size < 1:
            raise ValueError(f"MCAdvantage: expected grpo_size >= 1, got {grpo_size}.")
        candidate_group_size = grpo_size if candidate_group_size is None else candidate_group_size
        if candidate_group_size < grpo_size:
            raise ValueError(
                f"MCAdvantage: expected candidate_group_size >= grpo_size ({grpo_size}), got "
                f"{candidate_group_size}."
            )
        if keep_return_bounds is not None:
            bounds = tuple(keep_return_bounds)
            if len(bounds) != 2 or not float(bounds[0]) < float(bounds[1]):
                raise ValueError(
                    f"MCAdvantage: expected keep_return_bounds=(low, high) with low < high, got "
                    f"{keep_return_bounds!r}."
                )
            keep_return_bounds = (float(bounds[0]), float(bounds[1]))
        self.grpo_size = grpo_size
        self.candidate_group_size = candidate_group_size
        self.keep_return_bounds = keep_return_bounds
        self.selector = selector if selector is not None else MCAdvantageSelector()
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
        size = self.candidate_group_size
        # Responses to one prompt form pools of `size` in order of appearance (a batch may
        # hold the same prompt drawn twice).
        seen: dict[str, int] = {}
        pool_of: dict[tuple[str, int], int] = {}
        pool_ids = []
        for p in prompts:
            k = seen.get(p, 0)
            seen[p] = k + 1
            pool_ids.append(pool_of.setdefault((p, k // size), len(pool_of)))
        bad = {p: n for p, n in seen.items() if n % size}
        if bad:
            raise ValueError(
                f"MCAdvantage: expected a multiple of {size} responses per prompt, got "
                f"{bad}. Collect whole groups (DatasetChatEnv(repeats={size}))."
            )
        rewards = tensordict.get(self.reward_key).reshape(len(prompts), -1).sum(-1).float()
        if size == self.grpo_size and self.keep_return_bounds is None:
            ids = torch.tensor(pool_ids, dtype=torch.long)
            adv = group_advantages(rewards, ids, normalize_std=self.normalize_std)
            tensordict.set(self.advantage_key, adv.unsqueeze(-1))
            return tensordict
        members: list[list[int]] = [[] for _ in pool_of]
        for row, pool in enumerate(pool_ids):
            members[pool].append(row)
        kept: list[int] = []
        for rows in members:
            candidates = TensorDict({"return": rewards[rows]}, batch_size=[len(rows)])
            chosen = self.selector.select(
                candidates, group_size=self.grpo_size, keep_return_bounds=self.keep_return_bounds
            )
            kept.extend(rows[i] for i in chosen or ())
        kept.sort()
        index = torch.tensor(kept, dtype=torch.long)
        ids = torch.tensor([pool_ids[row] for row in kept], dtype=torch.long)
        out = tensordict[index]
        if kept:
            adv = group_advantages(rewards[index], ids, normalize_std=self.normalize_std)
        else:
            adv = rewards[index]
        out.set(self.advantage_key, adv.unsqueeze(-1))
        return out

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "MCAdvantage works on collected batches of whole groups, not inside an env step: "
            "call it on the batch (or pass it as a collector postproc)."
        )

    def _reset(self, tensordict, tensordict_reset):
        return tensordict_reset
