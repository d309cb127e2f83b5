"""Greedy actions from distributional Q-values (C51): DistributionalQValueModule and -Actor."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase, TensorDictSequential
from torch import nn

from rl_core.keys import ACTION, ACTION_VALUE, CHOSEN_ACTION_VALUE, OBSERVATION, NestedKey
from rl_core.modules import QValueModule
from rl_core.modules.qvalue import greedy_action
from rl_core.specs import MultiOneHot, TensorSpec

#: TorchRL's names of the multi-one-hot action space
_MULTI_ONE_HOT = ("mult_one_hot", "mult-one-hot", "multi_one_hot", "multi-one-hot")


def expected_action_value(log_probs: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """The mean of each action's value distribution: ``sum_i exp(log_probs[..., i, a]) * z_i``.

    Args:
        log_probs: log-probabilities of the atoms, ``[*B, n_atoms, n_actions]`` (a
            log-softmax over dim ``-2``).
        support: the atoms' values ``z``, ``[n_atoms]``.

    Returns:
        The expected values, ``[*B, n_actions]``.

    Examples:
        >>> import torch
        >>> log_probs = torch.tensor([[0.5, 1.0], [0.5, 0.0]]).log()
        >>> expected_action_value(log_probs, torch.tensor([-1.0, 1.0])).tolist()
        [0.0, -1.0]
    """
    return (log_probs.exp() * support.to(log_probs).unsqueeze(-1)).sum(-2)


class DistributionalQValueModule(QValueModule):
    """Writes the greedy action from the value distributions of the actions (C51).

    Reads ``action_value_key``: log-probabilities of the atoms of each action's value,
    ``[*B, n_atoms, n_actions]`` (a log-softmax over dim ``-2``, as in Bellemare et al.,
    2017, "A Distributional Perspective on Reinforcement Learning"). The action maximises
    the expected value ``sum_i p_i(a) z_i`` over the allowed actions (``action_mask_key``,
    ``[*B, n_actions]``, True = allowed). Writes ``out_keys``: the action, encoded like the
    action space, and the log-probabilities (unchanged).

    A multi-one-hot action (several sub-actions, each one-hot; TorchRL's ``"mult_one_hot"``)
    reads the values of each sub-action side by side, ``[*B, n_atoms, sum(var_nums)]``, and
    picks each sub-action's best choice independently.

    Args:
        action_space: ``"one_hot"``, ``"categorical"`` or ``"mult_one_hot"`` (also spelled
            ``"mult-one-hot"``), or the action spec (``OneHot``, ``Categorical`` or
            ``MultiOneHot``, or a Composite holding one at the action key).
        support: the atoms' values ``z``, ``[n_atoms]`` (a buffer of the module).

    Keyword Args:
        spec: the action spec, when ``action_space`` is a string or ``None``.
        var_nums: the number of choices of each sub-action of a multi-one-hot action (the
            spec's ``nvec``); needed for ``"mult_one_hot"`` without a spec.
        action_value_key: where the log-probabilities are read. Defaults to
            ``"action_value"`` (also for ``None``).
        out_keys: ``[action, action_value]`` keys. Defaults to
            ``["action", action_value_key]``.
        action_mask_key: where the action mask is read, or ``None`` for no mask.
        safe: whether to project the action into the spec. Defaults to ``False``.

    Raises:
        ValueError: no support, ``out_keys`` not two keys, ``var_nums`` missing for
            ``"mult_one_hot"``, not positive ints, given for another action space or not the
            spec's ``nvec``, or (when called) values that are not log-probabilities or whose
            atom dim does not match the support.
        TypeError: a multi-categorical spec (not supported here).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> module = DistributionalQValueModule("categorical", torch.tensor([-1.0, 0.0, 1.0]))
        >>> log_probs = torch.full((3, 2), 1e-3).index_put_(
        ...     (torch.tensor([0, 2]), torch.tensor([0, 1])), torch.tensor(1.0)
        ... ).log_softmax(-2)
        >>> module(TensorDict(action_value=log_probs))["action"]
        tensor(1)
    """

    def __init__(
        self,
        action_space: str | TensorSpec | None = None,
        support: torch.Tensor | None = None,
        *,
        spec: TensorSpec | None = None,
        action_value_key: NestedKey | None = ACTION_VALUE,
        out_keys: Sequence[NestedKey] | None = None,
        action_mask_key: NestedKey | None = None,
        safe: bool = False,
        var_nums: Sequence[int] | torch.Tensor | None = None,
    ) -> None:
        where = "DistributionalQValueModule"
        nvec = _check_var_nums(where, var_nums)
        if isinstance(action_space, str) and action_space.lower() in _MULTI_ONE_HOT:
            if spec is None:
                if nvec is None:
                    raise ValueError(
                        f"{where}: action_space={action_space!r} needs var_nums (the number "
                        f"of choices of each sub-action) or a MultiOneHot spec, got neither."
                    )
                spec = MultiOneHot(nvec)
            action_space = None  # the spec names the space (rl-core takes no multi string)
            multi_named = True
        else:
            multi_named = False
        if support is None:
            raise ValueError(
                f"{where}: expected support, the values of the atoms (e.g. "
                f"torch.linspace(v_min, v_max, n_atoms)), got None."
            )
        action_value_key = ACTION_VALUE if action_value_key is None else action_value_key
        out_keys = [ACTION, action_value_key] if out_keys is None else list(out_keys)
        if len(out_keys) != 2:
            raise ValueError(
                f"{where}: expected 2 out_keys (action, action value), got {out_keys}."
            )
        super().__init__(
            action_space,
            spec=spec,
            action_value_key=action_value_key,
            out_keys=[*out_keys, CHOSEN_ACTION_VALUE],
            action_mask_key=action_mask_key,
            safe=safe,
        )
        if self.action_space == "multi_categorical":
            raise TypeError(
                f"{where}: multi-categorical action spaces are not supported; expected a "
                f"OneHot, Categorical or MultiOneHot action spec."
            )
        if multi_named and self.action_space != "multi_one_hot":
            raise ValueError(
                f"{where}: action_space='mult_one_hot' contradicts the "
                f"{type(self.action_spec).__name__} spec."
            )
        self.var_nums: list[int] | None = None
        if self.action_space == "multi_one_hot":
            spec_nvec = [int(n) for n in self.action_spec.nvec.reshape(-1).tolist()]
            if nvec is not None and nvec != spec_nvec:
                raise ValueError(
                    f"{where}: var_nums={nvec} differs from the MultiOneHot spec's nvec "
                    f"{spec_nvec}."
                )
            self.var_nums = spec_nvec
        elif nvec is not None:
            raise ValueError(
                f"{where}: var_nums is for a multi-one-hot action space; this one is "
                f"{self.action_space!r}. Drop var_nums or pass action_space='mult_one_hot'."
            )
        self.out_keys = out_keys
        support = torch.as_tensor(support)
        if support.ndim != 1 or not support.is_floating_point():
            raise ValueError(
                f"{where}: expected support to be a 1-d floating tensor of atom values, got "
                f"shape {tuple(support.shape)} and dtype {support.dtype}."
            )
        self.register_buffer("support", support)

    def _write(self, tensordict: TensorDictBase) -> TensorDictBase:
        log_probs = tensordict.get(self.action_value_key, None)
        if log_probs is None:
            raise KeyError(
                f"DistributionalQValueModule: the TensorDict has no entry "
                f"{self.action_value_key!r} (the atoms' log-probabilities)."
            )
        n_atoms = self.support.shape[0]
        if log_probs.ndim < 2 or log_probs.shape[-2] != n_atoms:
            raise ValueError(
                f"DistributionalQValueModule: expected action values of shape "
                f"[*B, n_atoms={n_atoms}, n_actions], got {tuple(log_probs.shape)}."
            )
        if bool((log_probs > 0).any()):
            raise ValueError(
                f"DistributionalQValueModule: expected log-probabilities (<= 0, a log-softmax "
                f"over dim -2) at {self.action_value_key!r}, got a maximum of "
                f"{log_probs.max().item():.4f}."
            )
        mask = None
        if self.action_mask_key is not None:
            mask = tensordict.get(self.action_mask_key)
            if mask.dtype is not torch.bool:
                raise TypeError(
                    f"DistributionalQValueModule: expected a bool action mask at "
                    f"{self.action_mask_key!r}, got {mask.dtype}."
                )
        values = expected_action_value(log_probs, self.support)
        if self.var_nums is not None:
            action = self._multi_one_hot(values, mask)
        else:
            action, _ = self._single(values, mask)
        if self.safe and self.action_spec is not None:
            spec = self.action_spec
            extra = action.ndim - spec.ndim  # data may carry more leading dims than the spec
            if extra > 0:
                spec = spec.expand(*action.shape[:extra], *spec.shape)
            action = spec.project(action)
        key_action, key_values = self.out_keys
        tensordict.set(key_action, action)
        if key_values != self.action_value_key:
            tensordict.set(key_values, log_probs)
        return tensordict

    def _multi_one_hot(self, values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Each sub-action's greedy choice, one-hot, side by side: ``[*B, sum(var_nums)]``."""
        nvec = self.var_nums
        if values.shape[-1] != sum(nvec):
            raise ValueError(
                f"DistributionalQValueModule: expected the values of sum(var_nums)={sum(nvec)} "
                f"actions (var_nums={nvec}) in the last dim, got {values.shape[-1]}."
            )
        masks = [None] * len(nvec) if mask is None else mask.split(nvec, -1)
        blocks = []
        for part, part_mask in zip(values.split(nvec, -1), masks):
            index, _ = greedy_action(part, part_mask)
            blocks.append(torch.nn.functional.one_hot(index, part.shape[-1]))
        return torch.cat(blocks, -1).to(self.action_spec.dtype)


def _check_var_nums(where: str, var_nums: object) -> list[int] | None:
    """``var_nums`` as a list of positive ints (``None`` stays ``None``)."""
    if var_nums is None:
        return None
    if isinstance(var_nums, torch.Tensor):
        values = var_nums.reshape(-1).tolist()
    elif isinstance(var_nums, Sequence) and not isinstance(var_nums, str):
        values = list(var_nums)
    else:
        values = None
    if not values or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values
    ):
        raise ValueError(
            f"{where}: expected var_nums to be a non-empty sequence of positive ints (the "
            f"number of choices of each sub-action), got {var_nums!r}."
        )
    return values


class _LogSoftmax(nn.Module):
    """A log-softmax over the atoms (dim -2) of distributional Q-values."""

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.log_softmax(-2)


class DistributionalQValueActor(TensorDictSequential):
    """A distributional Q-network followed by a :class:`DistributionalQValueModule`.

    The network maps ``in_keys`` to logits ``[*B, n_atoms, n_actions]``; with
    ``make_log_softmax`` a log-softmax over the atoms (dim ``-2``) follows it, so the entry
    at ``action_value_key`` holds log-probabilities; the greedy action maximises the
    expected value over ``support``.

    Args:
        module: the network, or a TensorDict module that writes ``action_value_key``.
        support: the atoms' values ``z``, ``[n_atoms]``.
        in_keys: keys the network reads. Defaults to ``("observation",)`` (also for
            ``None``). Ignored for a TensorDict module.
        spec: the action spec (``OneHot``, ``Categorical``, ``MultiOneHot`` or a Composite
            holding one).

    Keyword Args:
        action_space: ``"one_hot"``, ``"categorical"`` or ``"mult_one_hot"`` when no spec is
            given.
        var_nums: the number of choices of each sub-action of a multi-one-hot action; see
            :class:`DistributionalQValueModule`.
        action_value_key: where the log-probabilities go. Defaults to ``"action_value"``
            (also for ``None``).
        action_mask_key: where the action mask is read, or ``None``.
        safe: whether to project the action into the spec. Defaults to ``False``.
        make_log_softmax: apply a log-softmax over dim ``-2`` to the network's output.
            Defaults to ``True``; set it to ``False`` for a network that ends in one.

    Raises:
        ValueError: a TensorDict ``module`` does not write ``action_value_key``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP
        >>> from rl_objectives.modules import DistributionalQValueActor
        >>> from rl_core.specs import OneHot
        >>> net = MLP(4, (5, 3), depth=1, num_cells=8)  # 5 atoms, 3 actions
        >>> actor = DistributionalQValueActor(net, torch.linspace(-1, 1, 5), spec=OneHot(3))
        >>> td = actor(TensorDict(observation=torch.zeros(2, 4), batch_size=[2]))
        >>> td["action"].shape, td["action_value"].shape
        (torch.Size([2, 3]), torch.Size([2, 5, 3]))
    """

    def __init__(
        self,
        module: nn.Module,
        support: torch.Tensor,
        in_keys: NestedKey | Sequence[NestedKey] | None = (OBSERVATION,),
        spec: TensorSpec | None = None,
        *,
        action_space: str | None = None,
        action_value_key: NestedKey | None = ACTION_VALUE,
        action_mask_key: NestedKey | None = None,
        safe: bool = False,
        make_log_softmax: bool = True,
        var_nums: Sequence[int] | torch.Tensor | None = None,
    ) -> None:
        action_value_key = ACTION_VALUE if action_value_key is None else action_value_key
        value_net = _value_network(module, in_keys, action_value_key)
        qvalue = DistributionalQValueModule(
            action_space,
            support,
            spec=spec,
            action_value_key=action_value_key,
            action_mask_key=action_mask_key,
            safe=safe,
            var_nums=var_nums,
        )
        modules: list[TensorDictModuleBase] = [value_net]
        if make_log_softmax:
            modules.append(
                TensorDictModule(
                    _LogSoftmax(), in_keys=[action_value_key], out_keys=[action_value_key]
                )
            )
        super().__init__(*modules, qvalue)
        self.spec = qvalue.spec
        self.make_log_softmax = make_log_softmax
        self.register_buffer("support", qvalue.support)

    @property
    def qvalue_module(self) -> DistributionalQValueModule:
        """The :class:`DistributionalQValueModule` at the end of the sequence."""
        return self.module[-1]


__all__ = ["DistributionalQValueModule", "DistributionalQValueActor", "expected_action_value"]


def _value_network(
    module: nn.Module,
    in_keys: NestedKey | Sequence[NestedKey] | None,
    action_value_key: NestedKey,
) -> TensorDictModuleBase:
    """``module`` itself when it is a TensorDict module writing ``action_value_key``, else
    ``module`` wrapped to read ``in_keys`` (the observation when ``None``) and write it."""
    if isinstance(module, TensorDictModuleBase):
        if action_value_key not in module.out_keys:
            raise ValueError(
                f"DistributionalQValueActor: the TensorDict module writes {module.out_keys}, "
                f"expected it to write the action values at {action_value_key!r}. Set "
                f"action_value_key or the module's out_keys."
            )
        return module
    in_keys = (OBSERVATION,) if in_keys is None else in_keys
    keys = [in_keys] if isinstance(in_keys, str | tuple) else list(in_keys)
    return TensorDictModule(module, in_keys=keys, out_keys=[action_value_key])
