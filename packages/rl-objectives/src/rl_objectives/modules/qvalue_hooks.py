"""QValueHook and DistributionalQValueHook: forward hooks turning a plain network's action values
into TorchRL's ``(action, action_value, chosen_action_value)`` outputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict
from torch import nn

from rl_core.keys import NestedKey
from rl_core.modules import QValueModule
from rl_objectives.modules.distributional_qvalue import DistributionalQValueModule


def _no_mask(where: str, action_mask_key: NestedKey | None) -> None:
    if action_mask_key is not None:
        raise ValueError(
            f"{where}: a forward hook sees only the network's output, so action_mask_key="
            f"{action_mask_key!r} cannot be read; put the network and a QValueModule (or "
            f"DistributionalQValueModule) with the mask key in a TensorDictSequential instead."
        )


class QValueHook:
    """A forward hook (``net.register_forward_hook(QValueHook("one_hot"))``) that makes a
    network returning action values ``[*B, n]`` return TorchRL's Q-value triple
    ``(action, action_value, chosen_action_value)``: the greedy action encoded as
    ``action_space`` says, the values unchanged, and the greedy value ``[*B, 1]`` (TorchRL's
    ``QValueHook``; the rule is :class:`~rl_core.modules.QValueModule`'s).

    Args:
        action_space: ``"one_hot"`` or ``"categorical"`` (``"one-hot"`` also reads), or an
            action spec.
        var_nums: TorchRL's multi-one-hot cardinalities; give a ``MultiOneHot`` spec as
            ``action_space`` instead (kept for TorchRL's signature, must be None).
        action_value_key: the name of the values inside the module. Defaults to
            ``"action_value"``.
        action_mask_key: must be None (a hook cannot read a mask).
        out_keys: the three names inside the module. Defaults to
            ``["action", "action_value", "chosen_action_value"]``.

    Raises:
        ValueError: ``action_mask_key`` or ``var_nums`` is given; an unknown action space.

    Examples:
        >>> import torch
        >>> net = torch.nn.Linear(2, 3)
        >>> _ = net.register_forward_hook(QValueHook("categorical"))
        >>> action, values, chosen = net(torch.zeros(4, 2))
        >>> action.shape, values.shape, chosen.shape
        (torch.Size([4]), torch.Size([4, 3]), torch.Size([4, 1]))
    """

    def __init__(
        self,
        action_space: Any,
        var_nums: int | None = None,
        action_value_key: NestedKey | None = None,
        action_mask_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        _no_mask("QValueHook", action_mask_key)
        if var_nums is not None:
            raise ValueError(
                f"QValueHook: var_nums={var_nums!r} is not read here; give the action spec "
                f"(MultiOneHot(nvec)) as action_space."
            )
        if isinstance(action_space, str):
            action_space = action_space.replace("-", "_")
        self.qvalue_model = QValueModule(
            action_space, action_value_key=action_value_key, out_keys=out_keys
        )
        self.action_value_key = self.qvalue_model.in_keys[0]

    def __call__(
        self, net: nn.Module, observation: Any, values: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        td = TensorDict({self.action_value_key: values}, batch_size=values.shape[:-1])
        td = self.qvalue_model(td)
        return tuple(td.get(key) for key in self.qvalue_model.out_keys)


class DistributionalQValueHook(QValueHook):
    """The distributional form of :class:`QValueHook` (TorchRL's
    ``DistributionalQValueHook``): the network returns log-probabilities of the atoms of each
    action's value, ``[*B, n_atoms, n_actions]``; the hook returns ``(action, action_value)``,
    the action maximising ``sum_i p_i(a) support_i`` (the rule of
    :class:`~rl_objectives.modules.DistributionalQValueModule`).

    Args:
        action_space: ``"one_hot"``, ``"categorical"`` or ``"mult_one_hot"``, or a spec.
        support: the atoms' values, ``[n_atoms]``.
        var_nums: the sub-action sizes of ``"mult_one_hot"``.
        action_value_key: the name of the values inside the module.
        action_mask_key: must be None (a hook cannot read a mask).
        out_keys: the two names inside the module. Defaults to ``["action",
            "action_value"]``.

    Raises:
        ValueError: ``action_mask_key`` is given; what the module refuses.

    Examples:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(2, 6), torch.nn.Unflatten(-1, (3, 2)),
        ...                           torch.nn.LogSoftmax(-2))
        >>> _ = net.register_forward_hook(
        ...     DistributionalQValueHook("categorical", torch.tensor([-1.0, 0.0, 1.0])))
        >>> action, log_probs = net(torch.zeros(4, 2))
        >>> action.shape, log_probs.shape
        (torch.Size([4]), torch.Size([4, 3, 2]))
    """

    def __init__(
        self,
        action_space: Any,
        support: torch.Tensor,
        var_nums: Sequence[int] | None = None,
        action_value_key: NestedKey | None = None,
        action_mask_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        _no_mask("DistributionalQValueHook", action_mask_key)
        if isinstance(action_space, str):
            action_space = action_space.replace("-", "_")
        self.qvalue_model = DistributionalQValueModule(
            action_space,
            support,
            var_nums=var_nums,
            action_value_key=action_value_key,
            out_keys=out_keys,
        )
        self.action_value_key = self.qvalue_model.in_keys[0]

    def __call__(
        self, net: nn.Module, observation: Any, values: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        td = TensorDict({self.action_value_key: values}, batch_size=values.shape[:-2])
        td = self.qvalue_model(td)
        return tuple(td.get(key) for key in self.qvalue_model.out_keys)


__all__ = ["DistributionalQValueHook", "QValueHook"]
