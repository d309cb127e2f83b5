"""The outputs of the LLM losses: TensorDicts whose entries are also read as attributes.

Each output is a :class:`~tensordict.TensorDict` (``out["loss_objective"]``, ``out.keys()``,
``out.sum(reduce=True)`` all work as for every other loss of the stack) whose fields are also
attributes, as TorchRL's tensorclass outputs are read (``out.loss_objective``, ``out.ESS``).
An optional field that the loss did not compute reads ``None`` and is not a key.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict


def _field(name: str, doc: str) -> property:
    def read(self: TensorDict) -> torch.Tensor | None:
        return self.get(name, None)

    return property(read, doc=doc)


class LLMLossOutput(TensorDict):
    """The common output of the policy-gradient LLM losses (GRPO, DAPO, CISPO).

    Fields (``loss_*`` carry gradients, the others are detached diagnostics):

    - ``loss_objective``: the policy objective;
    - ``clip_fraction``: the share of response tokens whose importance weight was clipped;
    - ``kl_approx``: the mean over response tokens of ``old - new`` log-probabilities;
    - ``ESS``: the normalised effective sample size of the token importance weights,
      ``(sum w)^2 / (n * sum w^2)`` over the ``n`` response tokens (1 when all are equal);
    - ``entropy``/``loss_entropy``: the mean token entropy and ``-coeff * entropy``;
    - ``kl_to_ref``/``loss_kl_to_ref``: the mean k3 estimate of KL(new || ref) and
      ``coeff * kl_to_ref``.

    Examples:
        >>> import torch
        >>> from rl_llm.objectives import GRPOLossOutput
        >>> out = GRPOLossOutput(loss_objective=torch.tensor(0.5), ESS=torch.tensor(1.0))
        >>> out.loss_objective.item(), out["ESS"].item(), out.entropy
        (0.5, 1.0, None)
    """

    loss_objective = _field("loss_objective", "The policy objective (with gradients).")
    clip_fraction = _field("clip_fraction", "Share of response tokens with a clipped weight.")
    kl_approx = _field("kl_approx", "Mean of old - new log-probabilities over response tokens.")
    ESS = _field("ESS", "Normalised effective sample size of the token importance weights.")
    entropy = _field("entropy", "Mean entropy of the policy over response tokens.")
    loss_entropy = _field("loss_entropy", "-entropy_coeff * entropy (with gradients).")
    loss_kl_to_ref = _field("loss_kl_to_ref", "kl_to_ref_coeff * kl_to_ref (with gradients).")
    kl_to_ref = _field("kl_to_ref", "Mean k3 estimate of KL(new || ref) over response tokens.")


class GRPOLossOutput(LLMLossOutput):
    """The output of :class:`~rl_llm.objectives.GRPOLoss` (fields of :class:`LLMLossOutput`)."""


class DAPOLossOutput(LLMLossOutput):
    """The output of :class:`~rl_llm.objectives.DAPO` (fields of :class:`LLMLossOutput`)."""


class CISPOLossOutput(LLMLossOutput):
    """The output of :class:`~rl_llm.objectives.CISPOLoss` (fields of :class:`LLMLossOutput`)."""


class SFTLossOutput(TensorDict):
    """The output of :class:`~rl_llm.objectives.SFTLoss`.

    Fields: ``loss_sft`` (the mean negative log-likelihood, with gradients) and ``num_tokens``
    (the number of tokens it averages over).
    """

    loss_sft = _field("loss_sft", "Mean negative log-likelihood of the trained tokens.")
    num_tokens = _field("num_tokens", "Number of tokens the loss averages over.")


class DistillationLossOutput(TensorDict):
    """The output of :class:`~rl_llm.objectives.DistillationLoss`.

    Fields: ``loss_distill`` (``distill_coeff`` times the reduced k3 estimate of
    KL(student || teacher), with gradients) and ``kl_to_teacher`` (the mean per-token
    estimate over the trained tokens, detached).
    """

    loss_distill = _field("loss_distill", "The scaled distillation loss (with gradients).")
    kl_to_teacher = _field("kl_to_teacher", "Mean per-token k3 estimate of KL(student || teacher).")


class RewardModelLossOutput(TensorDict):
    """The output of :class:`~rl_llm.objectives.RewardModelLoss`.

    Fields: ``loss_reward_model`` (the Bradley-Terry loss), ``loss_center`` (the centering
    term, when asked for) and ``accuracy`` (share of pairs whose chosen response scores
    higher, detached).
    """

    loss_reward_model = _field("loss_reward_model", "The Bradley-Terry pairwise loss.")
    loss_center = _field("loss_center", "center_coeff * (r_chosen^2 + r_rejected^2).")
    accuracy = _field("accuracy", "Share of pairs ranked right (detached).")
