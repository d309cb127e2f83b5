"""TopKRewardSelector: keeps the best ``topk_size`` of every ``total_dialog_turns`` dialogs of a prompt."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm._utils import as_strings
from rl_llm.keys import QUERY


class TopKRewardSelector(Transform):
    """Queues finished dialogs per prompt and releases the ``topk_size`` best of each full queue.

    Give it collected batches (``selector(batch)``, or as the transform of a replay buffer's
    writes): every finished dialog (``done_key`` True; the others are not kept) joins its
    prompt's queue (prompts told apart by ``prompt_key``); when a queue holds
    ``total_dialog_turns`` dialogs, the ``topk_size`` with the highest reward (summed over
    ``rewards_key``; ties in order of arrival) are returned, in order of arrival, and the queue
    empties. A call returns the dialogs released by it (possibly none: a batch of size 0).

    Args:
        total_dialog_turns: the dialogs gathered per prompt before a selection.
        topk_size: how many of them are kept (``1 <= topk_size <= total_dialog_turns``).
        prompt_key: the entry naming each dialog's prompt (rl-llm's ``"query"``; TorchRL's
            default is ``"text"``).
        rewards_key: the reward of each dialog.
        done_key: the done flag of each dialog.
        verbose: print each selection.

    Raises:
        ValueError: ``topk_size`` outside ``[1, total_dialog_turns]``, or a batch that is not
            1-d.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import TopKRewardSelector
        >>> batch = TensorDict(query=["a", "a", "a"], next=TensorDict(
        ...     reward=torch.tensor([[1.0], [3.0], [2.0]]), done=torch.ones(3, 1, dtype=torch.bool),
        ...     batch_size=[3]), batch_size=[3])
        >>> TopKRewardSelector(3, 2)(batch)["next", "reward"].squeeze(-1).tolist()
        [3.0, 2.0]
    """

    def __init__(
        self,
        total_dialog_turns: int,
        topk_size: int,
        prompt_key: NestedKey = QUERY,
        rewards_key: NestedKey = ("next", "reward"),
        done_key: NestedKey = ("next", "done"),
        verbose: bool = False,
    ) -> None:
        if not 1 <= topk_size <= total_dialog_turns:
            raise ValueError(
                f"TopKRewardSelector: expected 1 <= topk_size <= total_dialog_turns, got "
                f"topk_size={topk_size}, total_dialog_turns={total_dialog_turns}."
            )
        super().__init__()
        self.total_dialog_turns = total_dialog_turns
        self.topk_size = topk_size
        self.prompt_key = prompt_key
        self.rewards_key = rewards_key
        self.done_key = done_key
        self.verbose = verbose
        self._queues: dict[str, list[tuple[float, TensorDictBase]]] = {}

    def queued(self, prompt: str) -> int:
        """How many dialogs of ``prompt`` wait for a selection."""
        return len(self._queues.get(prompt, ()))

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.batch_dims != 1:
            raise ValueError(
                f"TopKRewardSelector: expected a 1-d batch of dialogs, got batch "
                f"{tuple(tensordict.batch_size)}. Reshape it (e.g. td.reshape(-1))."
            )
        n = tensordict.shape[0]
        prompts = as_strings(tensordict.get(self.prompt_key))
        rewards = tensordict.get(self.rewards_key).reshape(n, -1).sum(-1).tolist()
        done = tensordict.get(self.done_key).reshape(n, -1).any(-1).tolist()
        released: list[TensorDictBase] = []
        for i in range(n):
            if not done[i]:
                continue
            queue = self._queues.setdefault(prompts[i], [])
            queue.append((float(rewards[i]), tensordict[i].clone()))
            if len(queue) == self.total_dialog_turns:
                order = sorted(range(len(queue)), key=lambda k: -queue[k][0])[: self.topk_size]
                released.extend(queue[k][1] for k in sorted(order))
                if self.verbose:
                    best = [queue[k][0] for k in sorted(order)]
                    print(f"TopKRewardSelector: {prompts[i]!r}: kept rewards {best}")
                del self._queues[prompts[i]]
        if not released:
            return tensordict[torch.zeros(0, dtype=torch.long)]
        return torch.stack(released)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "TopKRewardSelector works on collected batches (or a replay buffer's writes), not "
            "inside an env step: call it on the batch."
        )

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset
