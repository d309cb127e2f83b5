"""GSM8KPrepareQuestion: turns each question into the prompt that asks for an <answer> tag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensordict import NonTensorStack, TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm.keys import QUERY

GSM8K_QUESTION_TEMPLATE = (
    "{question}\nThink step by step, then give the final number inside <answer></answer>."
)


class GSM8KPrepareQuestion(Transform):
    """Rewrites each question string with ``template`` (its ``{question}`` field) at reset.

    Put it after the transform that draws the questions (``DataLoadingPrimer`` on an
    ``LLMEnv``, whose ``"query"`` is the prompt text); the reward parser
    (:class:`GSM8KRewardParser`) then reads the ``<answer>`` tag the prompt asks for. On a
    collected batch, ``transform(batch)`` rewrites the entries too.

    Args:
        in_keys: the question entries (one string per row; default ``["query"]``).
        out_keys: where the prompts go (default: in place).
        template: a ``str.format`` template with a ``{question}`` field.

    Raises:
        ValueError: the template has no ``{question}`` field, the key lists differ in
            length, or an entry is not one string per row.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_llm.envs import GSM8KPrepareQuestion
        >>> out = GSM8KPrepareQuestion(template="Q: {question}\\nA:")(
        ...     TensorDict(query=["What is 2+2?"], batch_size=[1]))
        >>> print(out["query"][0])
        Q: What is 2+2?
        A:
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        template: str = GSM8K_QUESTION_TEMPLATE,
    ) -> None:
        in_keys = list(in_keys) if in_keys is not None else [QUERY]
        out_keys = list(out_keys) if out_keys is not None else list(in_keys)
        if len(in_keys) != len(out_keys):
            raise ValueError(
                f"GSM8KPrepareQuestion: expected as many out_keys as in_keys, got {out_keys} "
                f"for {in_keys}."
            )
        try:
            template.format(question="")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(
                f"GSM8KPrepareQuestion: expected a template whose only field is {{question}}, "
                f"got {template!r} ({type(err).__name__}: {err})."
            ) from err
        if "{question}" not in template:
            raise ValueError(
                f"GSM8KPrepareQuestion: expected a template with a {{question}} field, got "
                f"{template!r}."
            )
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self.template = template

    def _rewrite(self, tensordict: TensorDictBase) -> TensorDictBase:
        for key_in, key_out in zip(self.in_keys, self.out_keys):
            value = tensordict.get(key_in, None)
            if value is None:
                continue
            rows = value.tolist() if hasattr(value, "tolist") else value
            if isinstance(rows, str):
                rows = [rows]
            if not isinstance(rows, list) or not all(isinstance(q, str) for q in rows):
                raise ValueError(
                    f"GSM8KPrepareQuestion: expected one question string per row at {key_in!r}, "
                    f"got {type(value).__name__}."
                )
            prompts = [self.template.format(question=q) for q in rows]
            tensordict.set(key_out, NonTensorStack(*prompts) if prompts else NonTensorStack())
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._rewrite(tensordict)

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._rewrite(tensordict_reset)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict
