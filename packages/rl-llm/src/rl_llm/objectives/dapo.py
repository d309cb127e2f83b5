"""DAPO (Yu et al. 2025): GRPO with Clip-Higher, token-level loss and overlong reward shaping.

The paper's four parts, and where each lives here:

- Clip-Higher, decoupled clip ranges ``[1 - eps_low, 1 + eps_high]``: :class:`DAPO`'s
  ``clip_epsilon=(0.2, 0.28)``;
- token-level policy-gradient loss (every response token weighs the same): ``aggregation=
  "token"``;
- dynamic sampling (drop groups whose responses are all right or all wrong):
  ``MCAdvantage(..., keep_return_bounds=(0, 1))``, with oversampling through
  ``candidate_group_size`` and :class:`MCAdvantageSelector`;
- soft overlong punishment: :func:`overlong_penalty` and :class:`OverlongRewardShaping`.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm.keys import MASKS, TOKENS
from rl_llm.objectives.grpo import GRPOLoss
from rl_llm.objectives.loss_outputs import DAPOLossOutput, LLMLossOutput


class DAPO(GRPOLoss):
    """DAPO's loss: :class:`GRPOLoss` with decoupled clip ranges, token-level mean, no KL.

    Defaults follow the paper: ``clip_epsilon=(0.2, 0.28)`` (Clip-Higher), ``aggregation=
    "token"`` and no KL penalty (``kl_to_ref_coeff=None``). Dynamic sampling and overlong
    shaping act on the data before the loss (see the module's docstring). The output is a
    :class:`DAPOLossOutput`.

    Args:
        actor_network: the policy (see :class:`GRPOLoss`).
        clip_epsilon: ``(eps_low, eps_high)`` (or one ``eps``).
        kl_to_ref_coeff: weight of a KL penalty to a reference model; the paper has none.
        entropy_coeff: weight of an entropy bonus.
        aggregation: ``"token"`` (the paper's) or ``"sequence"``.

    Examples:
        >>> from rl_llm.modules import TransformersWrapper
        >>> from rl_llm.objectives import DAPO
        >>> from rl_llm.testing import build_tiny_chat_model
        >>> model, tokenizer = build_tiny_chat_model()
        >>> DAPO(TransformersWrapper(model, tokenizer)).clip_bounds
        (0.2, 0.28)
    """

    output_type: type[LLMLossOutput] = DAPOLossOutput

    def __init__(
        self,
        actor_network: Any,
        *,
        clip_epsilon: float | tuple[float, float] = (0.2, 0.28),
        kl_to_ref_coeff: float | None = None,
        entropy_coeff: float = 0.0,
        aggregation: str = "token",
    ) -> None:
        super().__init__(
            actor_network,
            clip_epsilon=clip_epsilon,
            kl_to_ref_coeff=kl_to_ref_coeff,
            entropy_coeff=entropy_coeff,
            aggregation=aggregation,
        )


def overlong_penalty(lengths: torch.Tensor, *, max_length: int, cache_length: int) -> torch.Tensor:
    """DAPO's soft overlong punishment (Eq. 13) of responses of ``lengths`` tokens.

    ``0`` up to ``max_length - cache_length`` tokens, then ``((max_length - cache_length) -
    length) / cache_length`` (falling linearly to -1 at ``max_length``), ``-1`` beyond.

    Args:
        lengths: ``[N]`` response lengths in tokens.
        max_length: ``L_max``, the longest response that is not punished fully.
        cache_length: ``L_cache``, the width of the soft punishment band (``<= max_length``).

    Returns:
        ``[N]`` float penalties in ``[-1, 0]``, added to the rewards.

    Raises:
        ValueError: ``cache_length`` is not in ``[1, max_length]``.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import overlong_penalty
        >>> overlong_penalty(torch.tensor([10, 14, 16, 20]), max_length=16, cache_length=4).tolist()
        [0.0, -0.5, -1.0, -1.0]
    """
    if not 1 <= cache_length <= max_length:
        raise ValueError(
            f"overlong_penalty: expected 1 <= cache_length <= max_length, got cache_length="
            f"{cache_length}, max_length={max_length}."
        )
    lengths = lengths.to(torch.get_default_dtype()) if not lengths.is_floating_point() else lengths
    soft = ((max_length - cache_length) - lengths) / cache_length
    return soft.clamp(-1.0, 0.0)


class OverlongRewardShaping(Transform):
    """Adds :func:`overlong_penalty` of each response's length to its reward (DAPO).

    Apply it to a collected batch before :class:`MCAdvantage` (or as a collector
    ``postproc`` inside a :class:`~rl_core.Compose`). A response's length is its number of
    assistant tokens: ``assistant_mask[..., -W:]`` summed, ``W`` the width of the response
    tokens.

    Args:
        max_length: ``L_max``.
        cache_length: ``L_cache``.
        reward_key: the ``[N, 1]`` reward of each dialog.
        response_tokens_key: the ``[N, W]`` response tokens (for their width).
        assistant_mask_key: the ``[N, L]`` assistant mask over the full sequence.

    Raises:
        ValueError: bad lengths (see :func:`overlong_penalty`), or a reward with more than one
            value per dialog.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.objectives import OverlongRewardShaping
        >>> mask = torch.tensor([[0, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
        >>> batch = TensorDict({("tokens", "response"): torch.zeros(2, 3, dtype=torch.long),
        ...     ("masks", "all_assistant_mask"): mask,
        ...     ("next", "reward"): torch.ones(2, 1)}, batch_size=[2])
        >>> OverlongRewardShaping(4, 2)(batch)["next", "reward"].squeeze(-1).tolist()
        [1.0, 0.5]
    """

    def __init__(
        self,
        max_length: int,
        cache_length: int,
        *,
        reward_key: NestedKey = ("next", "reward"),
        response_tokens_key: NestedKey = (TOKENS, "response"),
        assistant_mask_key: NestedKey = (MASKS, "all_assistant_mask"),
    ) -> None:
        super().__init__(in_keys=[reward_key], out_keys=[reward_key])
        overlong_penalty(torch.zeros(0), max_length=max_length, cache_length=cache_length)
        self.max_length = max_length
        self.cache_length = cache_length
        self.reward_key = reward_key
        self.response_tokens_key = response_tokens_key
        self.assistant_mask_key = assistant_mask_key

    def _require(self, tensordict: TensorDictBase, key: NestedKey) -> torch.Tensor:
        value = tensordict.get(key, None)
        if value is None:
            raise KeyError(
                f"OverlongRewardShaping: expected the entry {key!r} in the batch (the policy's "
                f"tokens and masks and the env's reward)."
            )
        return value

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        reward = self._require(tensordict, self.reward_key)
        width = self._require(tensordict, self.response_tokens_key).shape[-1]
        mask = self._require(tensordict, self.assistant_mask_key)
        n = tensordict.shape[0] if tensordict.batch_dims else 1
        if reward.numel() != n:
            raise ValueError(
                f"OverlongRewardShaping: expected one reward per dialog at {self.reward_key!r}, "
                f"got shape {tuple(reward.shape)} for {n} dialogs."
            )
        lengths = mask[..., -width:].sum(-1).reshape(-1)
        penalty = overlong_penalty(
            lengths, max_length=self.max_length, cache_length=self.cache_length
        )
        tensordict.set(self.reward_key, reward + penalty.to(reward.dtype).reshape(reward.shape))
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "OverlongRewardShaping works on collected batches: call it on the batch (or pass "
            "it as a collector postproc)."
        )

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset
