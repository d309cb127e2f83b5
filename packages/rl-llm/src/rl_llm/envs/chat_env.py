"""ChatEnv: a batch of dialogs as an rl-core environment."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Composite, EnvBase, NonTensor
from rl_llm.data import ChatHistory, History
from rl_llm.keys import HISTORY, QUERY


class ChatEnv(EnvBase):
    """A batch of dialogs: each reset starts them from queries, each step takes the replies.

    Reset reads ``"query"`` (one string per dialog) from the input TensorDict and writes
    ``("history", "prompt")``: a :class:`~rl_llm.data.History` of batch ``(B, n)`` with the
    system prompt (if any) and the user query. A step reads ``("history", "full")`` (the
    prompt plus the policy's reply, as :class:`~rl_llm.modules.TransformersWrapper` writes it)
    and makes it the next prompt. The reward is 0 and the dialogs never end by themselves:
    transforms (tools, reward parsers, a step counter) add rewards, messages and done flags.

    Args:
        tokenizer: kept for transforms that need it (optional).
        system_prompt: the first message of every dialog, or ``None``.
        batch_size: the number of dialogs, ``(B,)``.

    Raises:
        ValueError: ``batch_size`` is not 1-d, or at reset a ``"query"`` is not a string
            (``None``, a number).
        KeyError: reset without a ``"query"`` entry, or a step without ``("history", "full")``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import ChatEnv
        >>> env = ChatEnv(system_prompt="Be brief.", batch_size=(2,))
        >>> td = env.reset(TensorDict(query=["Hi", "2+2?"], batch_size=[2]))
        >>> td["history"].prompt.batch_size
        torch.Size([2, 2])
        >>> reply = History.from_chats([[{"role": "assistant", "content": "4"}]] * 2)
        >>> td["history"].full = td["history"].prompt.append(reply)
        >>> env.step(td)["next", "history"].prompt.batch_size
        torch.Size([2, 3])
    """

    def __init__(
        self,
        *,
        tokenizer: Any = None,
        system_prompt: str | None = None,
        batch_size: tuple[int, ...] | torch.Size = (1,),
    ) -> None:
        batch_size = torch.Size(batch_size)
        if len(batch_size) != 1:
            raise ValueError(
                f"{type(self).__name__}: expected a 1-d batch_size (B,), got {tuple(batch_size)}."
            )
        super().__init__(batch_size=batch_size)
        self.tokenizer = tokenizer
        self.system_prompt = system_prompt
        self.observation_spec = Composite({HISTORY: NonTensor(shape=batch_size)}, shape=batch_size)

    def _queries(self, tensordict: TensorDictBase | None) -> list[str]:
        query = tensordict.get(QUERY, None) if tensordict is not None else None
        if query is None:
            raise KeyError(
                f"{type(self).__name__}.reset: expected a 'query' entry (one string per dialog) "
                f"in the input TensorDict, got "
                f"{None if tensordict is None else sorted(map(str, tensordict.keys()))}."
            )
        values = [query] if isinstance(query, str) else query
        if hasattr(values, "tolist"):
            values = values.tolist()
        if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
            raise ValueError(
                f"{type(self).__name__}.reset: expected 'query' as one string per dialog, got "
                f"{values!r}. Pass a list of {self.batch_size[0]} strings."
            )
        return list(values)

    def _start(self, queries: list[str]) -> History:
        head = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return History.from_chats([[*head, {"role": "user", "content": q}] for q in queries])

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        prompt = self._start(self._queries(tensordict))
        return TensorDict(
            {HISTORY: ChatHistory(prompt=prompt, batch_size=self.batch_size)},
            batch_size=self.batch_size,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        full = tensordict.get((HISTORY, "full"), None)
        if full is None:
            raise KeyError(
                f"{type(self).__name__}.step: expected ('history', 'full') written by the "
                f"policy (the prompt plus its reply); the input holds "
                f"{sorted(map(str, tensordict.keys()))}."
            )
        shape = (*self.batch_size, 1)
        return TensorDict(
            {
                HISTORY: ChatHistory(prompt=full, batch_size=self.batch_size),
                "reward": torch.zeros(shape),
                "done": torch.zeros(shape, dtype=torch.bool),
                "terminated": torch.zeros(shape, dtype=torch.bool),
                "truncated": torch.zeros(shape, dtype=torch.bool),
            },
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed: int | None) -> None:
        self._rng = torch.Generator().manual_seed(seed if seed is not None else 0)
