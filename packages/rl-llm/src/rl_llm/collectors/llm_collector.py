"""LLMCollector: runs a language-model policy in a chat env and yields batches of dialog turns."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import EnvBase, step_mdp
from rl_llm.collectors._padding import pad_and_cat


class LLMCollector:
    """Iterates over batches of at least ``dialog_turns_per_batch`` dialog turns.

    Each env step runs the policy on every dialog of the env's batch (``B`` turns); steps are
    gathered until the batch is full, then concatenated along the batch dim (token entries are
    padded to common widths, see the layout of :class:`~rl_llm.data.Tokens`) and yielded as one
    ``[N]`` TensorDict of transitions in the TED layout (``"next"`` holds reward and done).
    Finished dialogs are reset between steps. Steps are concatenated, so their histories must
    have one number of messages: true for single-turn envs such as
    :class:`~rl_llm.envs.GSM8KEnv`, or with ``dialog_turns_per_batch`` equal to ``B``.

    Args:
        env: a chat env (a :class:`~rl_llm.envs.ChatEnv` or a ``TransformedEnv`` of one).
        policy: a generating policy (:class:`~rl_llm.modules.TransformersWrapper`).
        dialog_turns_per_batch: turns per yielded batch (rounded up to whole env steps).
        total_dialog_turns: stop after this many turns; ``-1`` runs forever.
        postproc: applied to each batch before it is yielded (e.g. ``MCAdvantage``).
        weight_updater: an object with ``update(weights)`` (e.g.
            :class:`TransformersWeightUpdater`) used by :meth:`update_policy_weights_`.

    Examples:
        >>> from rl_llm.collectors import LLMCollector
        >>> from rl_llm.envs import GSM8KEnv, make_arithmetic_dataset
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> env = GSM8KEnv(make_arithmetic_dataset(8), batch_size=(2,), repeats=2)
        >>> policy = TransformersWrapper(model, tokenizer, generate_kwargs={"max_new_tokens": 3})
        >>> collector = LLMCollector(env, policy, dialog_turns_per_batch=4, total_dialog_turns=8)
        >>> [batch["next", "reward"].shape for batch in collector]
        [torch.Size([4, 1]), torch.Size([4, 1])]
    """

    def __init__(
        self,
        env: EnvBase,
        policy: Callable[[TensorDictBase], TensorDictBase],
        *,
        dialog_turns_per_batch: int,
        total_dialog_turns: int = -1,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        weight_updater: Any = None,
    ) -> None:
        if len(env.batch_size) != 1:
            raise ValueError(
                f"LLMCollector: expected an env with a 1-d batch (B,), got {tuple(env.batch_size)}."
            )
        if dialog_turns_per_batch < 1:
            raise ValueError(
                f"LLMCollector: expected dialog_turns_per_batch >= 1, got {dialog_turns_per_batch}."
            )
        self.env = env
        self.policy = policy
        self.dialog_turns_per_batch = dialog_turns_per_batch
        self.total_dialog_turns = total_dialog_turns
        self.postproc = postproc
        self.weight_updater = weight_updater
        self._root: TensorDictBase | None = None
        self._collected = 0
        tokenizer = getattr(policy, "tokenizer", None)
        self._pad_token_id = getattr(policy, "pad_token_id", None)
        if self._pad_token_id is None and tokenizer is not None:
            self._pad_token_id = tokenizer.pad_token_id

    def update_policy_weights_(self, weights: Any) -> None:
        """Loads ``weights`` into the inference model through the weight updater."""
        if self.weight_updater is None:
            raise RuntimeError(
                "LLMCollector.update_policy_weights_: no weight_updater was given; build the "
                "collector with weight_updater=TransformersWeightUpdater(model)."
            )
        self.weight_updater.update(weights)

    def _one_step(self) -> TensorDictBase:
        if self._root is None:
            self._root = self.env.reset()
        with torch.no_grad():
            td = self.env.step(self.policy(self._root))
        nxt = step_mdp(td)
        done = nxt.get("done").reshape(-1)
        if bool(done.any()) and not bool(done.all()):
            raise RuntimeError(
                "LLMCollector: some dialogs of the batch ended and others did not; partial "
                "resets of chat envs are not supported (end all dialogs of a step together)."
            )
        self._root = self.env.reset() if bool(done.all()) else nxt
        return td

    def __iter__(self) -> Iterator[TensorDictBase]:
        step = self.env.batch_size[0]
        while self.total_dialog_turns < 0 or self._collected < self.total_dialog_turns:
            steps, turns = [], 0
            while turns < self.dialog_turns_per_batch:
                steps.append(self._one_step())
                turns += step
            self._collected += turns
            batch = pad_and_cat(steps, self._pad_token_id or 0)
            if self.postproc is not None:
                batch = self.postproc(batch)
            yield batch

    def shutdown(self) -> None:
        """Closes the env."""
        self.env.close()
