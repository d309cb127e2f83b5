"""TemplateTransform: renders chat histories to text for text-mode policies, and back."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm._utils import as_strings
from rl_llm.data import ChatHistory, History, Text
from rl_llm.keys import HISTORY, TEXT


class TemplateTransform(Transform):
    """Lets a text-mode policy drive a chat env: history -> prompt text, reply text -> history.

    After each reset and step it renders ``("history", "prompt")`` with the chat template
    (with the assistant's generation header) into ``("text", "prompt")``. Before each step
    (the inverse path) it parses ``("text", "full")`` (or prompt + ``("text", "response")``)
    written by a text-mode policy back into ``("history", "full")``, which the chat env reads.

    Args:
        tokenizer: a tokenizer whose template renders (optional with a template name).
        chat_template_name: a registered template (``"chatml_format"``, ``"llama3"``).
        chat_template: a Jinja template source.
        add_generation_prompt: end the prompt with the assistant header (default True).

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_core import TransformedEnv
        >>> from rl_llm.envs import ChatEnv, TemplateTransform
        >>> env = TransformedEnv(ChatEnv(batch_size=(1,)),
        ...     TemplateTransform(chat_template_name="chatml_format"))
        >>> td = env.reset(TensorDict(query=["Hi"], batch_size=[1]))
        >>> td["text"].prompt[0]
        '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n'
        >>> td["text"].response = ["Hello!<|im_end|>"]
        >>> env.step(td)["next", "history"].prompt[0, -1].content
        'Hello!'
    """

    def __init__(
        self,
        tokenizer: Any = None,
        chat_template_name: str | None = None,
        chat_template: str | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.chat_template_name = chat_template_name
        self.chat_template = chat_template
        self.add_generation_prompt = add_generation_prompt

    def _render(self, tensordict: TensorDictBase) -> TensorDictBase:
        history = tensordict.get((HISTORY, "prompt"), None)
        if history is None:
            return tensordict
        texts = history.apply_chat_template(
            self.tokenizer,
            add_generation_prompt=self.add_generation_prompt,
            chat_template_name=self.chat_template_name,
            chat_template=self.chat_template,
        )
        tensordict.set(TEXT, Text(prompt=texts, batch_size=tensordict.batch_size))
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._render(tensordict)

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._render(tensordict_reset)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._render(next_tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.get((HISTORY, "full"), None) is not None:
            return tensordict
        full = tensordict.get((TEXT, "full"), None)
        if full is None:
            prompt = tensordict.get((TEXT, "prompt"), None)
            response = tensordict.get((TEXT, "response"), None)
            if prompt is None or response is None:
                raise KeyError(
                    "TemplateTransform: expected ('history', 'full') or the policy's text "
                    "(('text', 'full') or ('text', 'prompt') and ('text', 'response'))."
                )
            full = [p + r for p, r in zip(as_strings(prompt), as_strings(response))]
        name = self.chat_template_name
        history = History.from_text(
            as_strings(full), chat_template_name=name, tokenizer=self.tokenizer
        )
        chat = tensordict.get(HISTORY, None)
        prompt = None if chat is None else chat.prompt
        # A new ChatHistory: the inverse path works on a shallow copy of the caller's input.
        tensordict.set(
            HISTORY, ChatHistory(prompt=prompt, full=history, batch_size=tensordict.batch_size)
        )
        return tensordict
