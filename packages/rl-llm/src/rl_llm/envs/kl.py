"""RetrieveLogProb, KLComputation and RetrieveKL: per-token KL to a reference model."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Compose, Transform
from rl_core.keys import NestedKey
from rl_llm.keys import HISTORY, LOG_PROBS, MASKS, TOKENS


class _StepInputTransform(Transform):
    """A transform that writes into the step's input (the policy's output) at each env step,
    or into a collected batch through ``transform(batch)``; resets pass through."""

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self._call(tensordict)
        return next_tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset


class RetrieveLogProb(_StepInputTransform):
    """Scores the current dialog's tokens with a model and writes their per-token log-probs.

    At each env step (or on a collected batch, ``transform(batch)``) it scores, with ``model``
    (a wrapper built with ``generate=False``), the tokens the generating policy wrote
    (``("tokens", "prompt")``/``("tokens", "response")`` and ``("masks", ...)``), or, without
    them, ``("history", "full")`` tokenised by the model (``input_mode="history"``). It writes
    ``[B, L]`` log-probs aligned with ``("tokens", "full")`` at ``log_probs_full_key``,
    zeroed outside the assistant's tokens when ``assistant_only`` (and always at padding).

    Args:
        model: a :class:`~rl_llm.modules.TransformersWrapper` with ``generate=False``.
        log_probs_full_key: where to write; defaults to ``("log_probs", "full")``.
        assistant_only: keep only the assistant tokens' log-probs (default True).
        tokenizer_kwargs: unused here (the model tokenises); kept for TorchRL's signature.
        detach: score without gradients (default True).
        device: unused (the model's device is used); kept for TorchRL's signature.
        tokenizer: unused (the model's tokenizer is used).
        padding_side: the padding of the written tensor; only ``"left"`` (the token layout).

    Raises:
        ValueError: the model generates, or ``padding_side`` is not ``"left"``.
    """

    def __init__(
        self,
        model: Any,
        *,
        log_probs_full_key: NestedKey | None = None,
        assistant_only: bool = True,
        tokenizer_kwargs: dict | None = None,
        detach: bool = True,
        device: torch.device | None = None,
        tokenizer: Any = None,
        padding_side: str = "left",
    ) -> None:
        super().__init__()
        if getattr(model, "generate", False):
            raise ValueError(
                "RetrieveLogProb: expected a model that scores (built with generate=False), got "
                f"a generating {type(model).__name__}."
            )
        if padding_side != "left":
            raise ValueError(
                f"RetrieveLogProb: expected padding_side='left' (the token layout of rl-llm), "
                f"got {padding_side!r}."
            )
        self.model = model
        self.log_probs_full_key = log_probs_full_key or (LOG_PROBS, "full")
        self.assistant_only = assistant_only
        self.detach = detach
        self.padding_side = padding_side

    def log_probs(self, tensordict: TensorDictBase) -> torch.Tensor:
        """``[B, L]`` log-probs of the dialog's tokens under the model (masked as configured)."""
        keys = [(TOKENS, "prompt"), (TOKENS, "response"), (MASKS, "all_attention_mask")]
        if all(tensordict.get(k, None) is not None for k in keys):
            source = tensordict.select(*keys, (MASKS, "all_assistant_mask"), strict=False)
        elif tensordict.get((HISTORY, "full"), None) is not None:
            source = TensorDict(
                {(HISTORY, "full"): tensordict.get((HISTORY, "full"))},
                batch_size=tensordict.batch_size,
            )
        else:
            raise KeyError(
                "RetrieveLogProb: expected the generating policy's ('tokens', 'prompt'/"
                "'response') and ('masks', ...), or ('history', 'full'); found neither."
            )
        with torch.set_grad_enabled(not self.detach and torch.is_grad_enabled()):
            out = self.model(source.clone(False))
        lp = out.get((LOG_PROBS, "full"))
        mask = out.get((MASKS, "all_attention_mask"))
        if self.assistant_only:
            mask = mask & out.get((MASKS, "all_assistant_mask"))
        return lp.masked_fill(~mask, 0.0)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict.set(self.log_probs_full_key, self.log_probs(tensordict))
        return tensordict


class KLComputation(Transform):
    """``kl = sum_t (log pi_gen(y_t) - log pi_ref(y_t))`` per dialog, optionally off the reward.

    Reads two ``[B, L]`` log-prob tensors with one layout (written by two
    :class:`RetrieveLogProb`), writes the per-dialog sum ``[B, 1]`` at ``kl_key`` in the step
    output and, with ``add_to_reward``, subtracts ``coeff * kl`` from the reward. On a
    collected batch (``transform(batch)``) it acts on ``batch["next"]``.

    Args:
        gen_log_probs_full_key: defaults to ``("log_probs", "full")``.
        ref_log_probs_full_key: defaults to ``("ref_log_probs", "full")``.
        kl_key: defaults to ``"kl_penalty"``.
        add_to_reward: subtract ``coeff * kl`` from the reward (default True).
        coeff: the KL coefficient (default 1.0); a KL controller may set ``kl_coef``.
        padding_side: the padding of both tensors when their widths differ (default "left").

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.envs import KLComputation
        >>> td = TensorDict({("log_probs", "full"): torch.tensor([[0.0, -1.0, -2.0]]),
        ...     ("ref_log_probs", "full"): torch.tensor([[0.0, -1.5, -1.0]]),
        ...     ("next", "reward"): torch.ones(1, 1)}, batch_size=[1])
        >>> out = KLComputation(coeff=0.5)(td)
        >>> out["next", "kl_penalty"].item(), out["next", "reward"].item()
        (-0.5, 1.25)
    """

    def __init__(
        self,
        gen_log_probs_full_key: NestedKey = (LOG_PROBS, "full"),
        ref_log_probs_full_key: NestedKey = ("ref_log_probs", "full"),
        *,
        kl_key: NestedKey = "kl_penalty",
        add_to_reward: bool = True,
        coeff: float = 1.0,
        padding_side: str = "left",
    ) -> None:
        super().__init__()
        if padding_side not in ("left", "right"):
            raise ValueError(
                f"KLComputation: expected padding_side 'left' or 'right', got {padding_side!r}."
            )
        self.gen_log_probs_full_key = gen_log_probs_full_key
        self.ref_log_probs_full_key = ref_log_probs_full_key
        self.kl_key = kl_key
        self.add_to_reward = add_to_reward
        self.coeff = coeff
        self.padding_side = padding_side

    @property
    def kl_coef(self) -> float:
        """The coefficient (an alias of ``coeff`` that KL controllers write)."""
        return self.coeff

    @kl_coef.setter
    def kl_coef(self, value: float) -> None:
        self.coeff = float(value)

    def kl(self, tensordict: TensorDictBase) -> torch.Tensor:
        """``[B, 1]`` summed log-ratio."""
        gen = tensordict.get(self.gen_log_probs_full_key, None)
        ref = tensordict.get(self.ref_log_probs_full_key, None)
        if gen is None or ref is None:
            missing = [
                k
                for k, v in ((self.gen_log_probs_full_key, gen), (self.ref_log_probs_full_key, ref))
                if v is None
            ]
            raise KeyError(
                f"KLComputation: expected log-probs at {missing}; put RetrieveLogProb "
                f"transforms (or RetrieveKL) before it."
            )
        if gen.shape != ref.shape:
            width = max(gen.shape[-1], ref.shape[-1])
            gen, ref = (self._pad(x, width) for x in (gen, ref))
        return (gen - ref).sum(-1, keepdim=True)

    def _pad(self, x: torch.Tensor, width: int) -> torch.Tensor:
        pad = x.new_zeros(*x.shape[:-1], width - x.shape[-1])
        return torch.cat([pad, x] if self.padding_side == "left" else [x, pad], -1)

    def _apply(self, tensordict: TensorDictBase, target: TensorDictBase) -> None:
        kl = self.kl(tensordict)
        target.set(self.kl_key, kl)
        if self.add_to_reward:
            reward = target.get("reward")
            target.set("reward", reward - self.coeff * kl.to(reward.dtype).reshape(reward.shape))

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        self._apply(tensordict, tensordict.get("next"))
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self._apply(tensordict, next_tensordict)
        return next_tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset


class _CollectorLogProb(_StepInputTransform):
    """The generating policy's own log-probs, laid out like ``("tokens", "full")``.

    A generating wrapper writes ``("log_probs", "response")`` (``[B, Lr]``, aligned with
    ``("tokens", "response")``). This transform writes them at ``log_probs_full_key`` with
    ``Lp = ("tokens", "prompt").shape[-1]`` zeros in front, the layout
    :class:`RetrieveLogProb` writes, so :class:`KLComputation` compares them token by token
    with a reference model's. The prompt positions hold no generation log-prob, so only the
    assistant's (response) tokens enter the KL. An entry already present at
    ``log_probs_full_key`` is kept as it is.
    """

    def __init__(self, log_probs_full_key: NestedKey) -> None:
        super().__init__()
        self.log_probs_full_key = log_probs_full_key

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.get(self.log_probs_full_key, None) is not None:
            return tensordict
        response = tensordict.get((LOG_PROBS, "response"), None)
        prompt = tensordict.get((TOKENS, "prompt"), None)
        if response is None or prompt is None:
            raise KeyError(
                "RetrieveKL(gen_model='from_collector'): expected the generating policy's "
                "('log_probs', 'response') and ('tokens', 'prompt') in the step's input (a "
                "wrapper built with return_log_probs=True), got "
                f"log_probs.response={'missing' if response is None else 'present'}, "
                f"tokens.prompt={'missing' if prompt is None else 'present'}."
            )
        zeros = response.new_zeros(*response.shape[:-1], prompt.shape[-1])
        tensordict.set(self.log_probs_full_key, torch.cat([zeros, response], -1))
        return tensordict


class RetrieveKL(Compose):
    """The KL of a generating model to a reference one, in one transform.

    A :class:`~rl_core.Compose` of :class:`RetrieveLogProb` (``gen_model`` ->
    ``("log_probs", "full")``), :class:`RetrieveLogProb` (``ref_model`` ->
    ``("ref_log_probs", "full")``) and :class:`KLComputation`. Both models must score with
    the same tokenizer (they score the same tokens).

    With ``gen_model="from_collector"`` (the default, as in TorchRL) the generating model is
    not run again: the log-probs the policy wrote while sampling (``("log_probs",
    "response")``, from a wrapper built with ``return_log_probs=True``) are used, laid out
    over the full sequence with zeros at the prompt. Only the assistant's tokens then carry a
    generation log-prob, so ``assistant_only`` must stay True.

    Args:
        gen_model: ``"from_collector"`` (default), or the policy's model wrapped with
            ``generate=False`` to score the dialog again.
        ref_model: the frozen reference model wrapped with ``generate=False``.
        assistant_only: keep only the assistant tokens (default True).
        gen_log_probs_full_key: defaults to ``("log_probs", "full")``.
        ref_log_probs_full_key: defaults to ``("ref_log_probs", "full")``.
        kl_key: defaults to ``"kl_penalty"``.
        add_to_reward: subtract ``coeff * kl`` from the reward (default True).
        coeff: the KL coefficient (default 1.0).
        padding_side: see :class:`KLComputation`.

    Raises:
        ValueError: no ``ref_model``; ``gen_model`` is a string other than
            ``"from_collector"``; ``"from_collector"`` with ``assistant_only=False``.
    """

    def __init__(
        self,
        gen_model: Any = "from_collector",
        ref_model: Any = None,
        *,
        assistant_only: bool = True,
        gen_log_probs_full_key: NestedKey = (LOG_PROBS, "full"),
        ref_log_probs_full_key: NestedKey = ("ref_log_probs", "full"),
        kl_key: NestedKey = "kl_penalty",
        add_to_reward: bool = True,
        coeff: float = 1.0,
        padding_side: str = "left",
    ) -> None:
        if ref_model is None or gen_model is None:
            raise ValueError(
                "RetrieveKL: expected a ref_model (a wrapper built with generate=False) and "
                f"gen_model='from_collector' or a scoring wrapper, got gen_model={gen_model!r}, "
                f"ref_model={ref_model!r}."
            )
        if isinstance(gen_model, str):
            if gen_model != "from_collector":
                raise ValueError(
                    "RetrieveKL: expected gen_model='from_collector' or a wrapper built with "
                    f"generate=False, got the string {gen_model!r}."
                )
            if not assistant_only:
                raise ValueError(
                    "RetrieveKL: gen_model='from_collector' has log-probs for the response "
                    "tokens only, so it needs assistant_only=True; got assistant_only=False "
                    "(pass a scoring wrapper as gen_model to score the prompt too)."
                )
            gen: Transform = _CollectorLogProb(gen_log_probs_full_key)
        else:
            gen = RetrieveLogProb(
                gen_model, log_probs_full_key=gen_log_probs_full_key, assistant_only=assistant_only
            )
        super().__init__(
            gen,
            RetrieveLogProb(
                ref_model, log_probs_full_key=ref_log_probs_full_key, assistant_only=assistant_only
            ),
            KLComputation(
                gen_log_probs_full_key,
                ref_log_probs_full_key,
                kl_key=kl_key,
                add_to_reward=add_to_reward,
                coeff=coeff,
                padding_side=padding_side,
            ),
        )
