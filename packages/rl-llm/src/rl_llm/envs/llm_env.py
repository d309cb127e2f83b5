"""LLMEnv: the text-in, text-out base environment, and make_gsm8k_env built on it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Compose, Composite, EnvBase, NonTensor, StepCounter, TransformedEnv
from rl_llm._utils import as_strings
from rl_llm.envs.data_loading_primer import DataLoadingPrimer
from rl_llm.envs.gsm8k import GSM8KRewardParser
from rl_llm.keys import QUERY


class LLMEnv(EnvBase):
    """A batch of text dialogs: the observation is a string, the action is the model's text.

    Reset reads ``data_key`` (one string per dialog, usually written by a
    :class:`~rl_llm.envs.DataLoadingPrimer`) and shows it. A step reads ``action_key``
    (the policy's text) and shows ``query + response`` (``str2str`` continuation; with
    ``no_stack=True`` only the response). The reward is 0 and dialogs never end by themselves:
    transforms add rewards and done flags (as :func:`make_gsm8k_env` does).

    Args:
        batch_size: the number of dialogs ``(B,)``.
        data_key: the observation key (default ``"query"``).
        action_key: the action key (default ``"response"``).
        no_stack: show only the last response instead of the whole text.

    Raises:
        KeyError: a reset without ``data_key`` or a step without ``action_key``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_llm.envs import LLMEnv
        >>> env = LLMEnv(batch_size=(2,))
        >>> td = env.reset(TensorDict(query=["1+1=", "2+2="], batch_size=[2]))
        >>> td["response"] = ["2", "4"]
        >>> list(env.step(td)["next", "query"])
        ['1+1=2', '2+2=4']
    """

    def __init__(
        self,
        *,
        batch_size: tuple[int, ...] | torch.Size = (1,),
        data_key: str = QUERY,
        action_key: str = "response",
        no_stack: bool = False,
    ) -> None:
        batch_size = torch.Size(batch_size)
        if len(batch_size) != 1:
            raise ValueError(f"LLMEnv: expected a 1-d batch_size (B,), got {tuple(batch_size)}.")
        super().__init__(batch_size=batch_size)
        self.data_key = data_key
        self._response_key = action_key
        self.no_stack = no_stack
        self.observation_spec = Composite({data_key: NonTensor(shape=batch_size)}, shape=batch_size)
        self.action_spec = Composite({action_key: NonTensor(shape=batch_size)}, shape=batch_size)
        # The text is also a state: a reset reads it (through TransformedEnv too).
        self.state_spec = Composite({data_key: NonTensor(shape=batch_size)}, shape=batch_size)

    def _strings(self, tensordict: TensorDictBase | None, key: str, where: str) -> list[str]:
        value = None if tensordict is None else tensordict.get(key, None)
        if value is None:
            raise KeyError(
                f"LLMEnv.{where}: expected {key!r} (one string per dialog) in the input; put a "
                f"DataLoadingPrimer first in the env for resets, or write the policy's text."
            )
        strings = as_strings(value)
        if len(strings) != self.batch_size[0]:
            raise ValueError(
                f"LLMEnv.{where}: expected {self.batch_size[0]} strings at {key!r}, got "
                f"{len(strings)}."
            )
        return strings

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        queries = self._strings(tensordict, self.data_key, "reset")
        return TensorDict({self.data_key: queries}, batch_size=self.batch_size)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        responses = self._strings(tensordict, self._response_key, "step")
        if self.no_stack:
            text = responses
        else:
            queries = self._strings(tensordict, self.data_key, "step")
            text = [q + r for q, r in zip(queries, responses)]
        shape = (*self.batch_size, 1)
        return TensorDict(
            {
                self.data_key: text,
                "reward": torch.zeros(shape),
                "done": torch.zeros(shape, dtype=torch.bool),
                "terminated": torch.zeros(shape, dtype=torch.bool),
                "truncated": torch.zeros(shape, dtype=torch.bool),
            },
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed: int | None) -> None:
        self._rng = torch.Generator().manual_seed(seed if seed is not None else 0)


def make_gsm8k_env(
    dataset: Iterable[dict[str, Any]],
    num_envs: int = 1,
    repeats: int | None = None,
    batch_size_dl: int = 1,
    seed: int | None = None,
    group_repeats: bool = False,
    tokenizer: Any = None,
) -> TransformedEnv:
    """A text-mode GSM8K env: :class:`LLMEnv` + :class:`DataLoadingPrimer` + answer reward.

    The dataset (GSM8K rows ``{"question", "answer"}``; no hub download here, pass the rows)
    feeds ``"query"`` and ``"answer"``; after one step the reward is
    :func:`~rl_llm.envs.answer_reward` of the ``"response"`` (1 for the right number in
    ``<answer>`` tags, 0.1 for a tagged wrong one) and the dialog ends (truncated).

    Args:
        dataset: GSM8K-style rows.
        num_envs: the number of dialogs per item batch; the env holds
            ``num_envs * batch_size_dl * repeats`` dialogs.
        repeats: dialogs per question (GRPO group size); ``None`` is 1.
        batch_size_dl: questions drawn per reset for each env.
        seed: shuffles the rows when given (in order otherwise).
        group_repeats: accepted for TorchRL compatibility (repeats are always grouped).
        tokenizer: kept on the env for transforms (``env.base_env.tokenizer``).

    Returns:
        A ``TransformedEnv``.

    Examples:
        >>> from rl_llm.envs import make_arithmetic_dataset, make_gsm8k_env
        >>> env = make_gsm8k_env(make_arithmetic_dataset(4), repeats=2)
        >>> td = env.reset()
        >>> td["response"] = [f"<answer>{a}</answer>" for a in td["answer"]]
        >>> env.step(td)["next", "reward"].squeeze(-1).tolist()
        [1.0, 1.0]
    """
    rows = [{"query": str(r["question"]), "answer": str(r["answer"])} for r in dataset]
    if not rows:
        raise ValueError("make_gsm8k_env: the dataset is empty.")
    if seed is not None:
        order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed))
        rows = [rows[i] for i in order.tolist()]
    repeats = 1 if repeats is None else repeats
    env = LLMEnv(batch_size=(num_envs * batch_size_dl * repeats,))
    env.tokenizer = tokenizer
    return TransformedEnv(
        env,
        Compose(
            DataLoadingPrimer(rows, repeats=repeats, group_repeats=group_repeats),
            GSM8KRewardParser(set_done_if_answer=False),
            StepCounter(max_steps=1),
        ),
    )
