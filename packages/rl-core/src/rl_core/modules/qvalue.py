"""Greedy action selection from Q-values: QValueModule and QValueActor."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase, TensorDictSequential, dispatch
from torch import nn
from torch.nn.functional import one_hot

from rl_core._accel.seam import get_leaf, set_leaf
from rl_core.keys import ACTION, ACTION_VALUE, CHOSEN_ACTION_VALUE, OBSERVATION, NestedKey
from rl_core.modules._spec_utils import as_composite, expand_to, leaf_spec
from rl_core.specs import Categorical, MultiCategorical, MultiOneHot, OneHot, TensorSpec

# The spaces a string can name; the multi spaces need the spec for their ``nvec``.
_SPACES = {
    "one_hot": "one_hot",
    "one-hot": "one_hot",
    "onehot": "one_hot",
    "categorical": "categorical",
}
_SPEC_SPACES: tuple[tuple[type[TensorSpec], str], ...] = (
    (OneHot, "one_hot"),
    (Categorical, "categorical"),
    (MultiOneHot, "multi_one_hot"),
    (MultiCategorical, "multi_categorical"),
)


def greedy_action(
    action_value: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Picks the highest-valued allowed action.

    Args:
        action_value: Q-values of shape ``[*B, n]``.
        mask: optional boolean tensor broadcastable to ``[*B, n]``, True for allowed
            actions. Every row needs at least one allowed action.

    Returns:
        ``(index, chosen_value)``: the int64 argmax of shape ``[*B]`` (ties go to the lower
        index) and its Q-value of shape ``[*B, 1]``.

    Examples:
        >>> import torch
        >>> q = torch.tensor([[1.0, 3.0, 2.0], [0.0, 5.0, 4.0]])
        >>> greedy_action(q, mask=torch.tensor([True, False, True]))
        (tensor([2, 2]), tensor([[2.],
                [4.]]))
    """
    if mask is None:
        # One op for both (ties and NaNs pick the same index as argmax: the first).
        chosen, index = action_value.max(-1, keepdim=True)
        return index.squeeze(-1), chosen
    index = action_value.masked_fill(~mask, float("-inf")).argmax(-1)
    return index, action_value.gather(-1, index.unsqueeze(-1))


class QValueModule(TensorDictModuleBase):
    """Writes the greedy action, and its value, from the action values in a TensorDict.

    Reads ``action_value_key`` (``[*B, n]``) and, if set, ``action_mask_key`` (bool,
    ``[*B, n]``, True = allowed; masked actions are never chosen). Writes ``out_keys``:
    the action encoded like the action space (one-hot or categorical index), the action
    values, and the chosen action's value (``[*B, 1]``).

    With a ``MultiOneHot`` or ``MultiCategorical`` spec, the action values (and the mask)
    are those of each sub-action concatenated, ``[*B, sum(nvec)]``; each sub-action is chosen
    independently and the chosen value has one entry per sub-action, ``[*B, len(nvec)]``
    (the rule of the specs' ``index``).

    Args:
        action_space: ``"one_hot"`` or ``"categorical"``, or the action spec (``OneHot``,
            ``Categorical``, ``MultiOneHot``, ``MultiCategorical``, or a Composite holding
            one at the action key). A spec sets the dtype of the action (``OneHot`` defaults
            to bool) and, for a ``Categorical`` whose shape ends in a singleton, the trailing
            ``1`` of the action. Without a spec, a one-hot action is bool and an index is
            int64.

    Keyword Args:
        spec: the action spec, when ``action_space`` is a string or ``None``.
        action_value_key: where the Q-values are read. Defaults to ``"action_value"`` (also
            for ``None``).
        out_keys: ``[action, action_value, chosen_action_value]`` keys. Defaults to
            ``["action", "action_value", "chosen_action_value"]``.
        action_mask_key: where the action mask is read, or ``None`` for no mask.
        safe: whether to project the action into the spec. Defaults to ``False``.

    Raises:
        ValueError: neither an action space nor a spec is given, the space is unknown, or
            ``out_keys`` does not have three keys.
        TypeError: the spec is not one of the four discrete specs above.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import QValueModule
        >>> from rl_core.specs import OneHot
        >>> module = QValueModule(OneHot(3), action_mask_key="action_mask")
        >>> td = TensorDict(
        ...     action_value=torch.tensor([[1.0, 3.0, 2.0]]),
        ...     action_mask=torch.tensor([[True, False, True]]),
        ...     batch_size=[1],
        ... )
        >>> td = module(td)
        >>> td["action"], td["chosen_action_value"]
        (tensor([[False, False,  True]]), tensor([[2.]]))
    """

    def __init__(
        self,
        action_space: str | TensorSpec | None = None,
        *,
        spec: TensorSpec | None = None,
        action_value_key: NestedKey | None = ACTION_VALUE,
        out_keys: Sequence[NestedKey] | None = None,
        action_mask_key: NestedKey | None = None,
        safe: bool = False,
    ) -> None:
        super().__init__()
        where = "QValueModule"
        if action_value_key is None:  # an explicit None asks for the default, as in TorchRL
            action_value_key = ACTION_VALUE
        if isinstance(action_space, TensorSpec):
            if spec is not None:
                raise ValueError(f"{where}: pass the spec once, as action_space or as spec=.")
            spec, action_space = action_space, None
        out_keys = [ACTION, ACTION_VALUE, CHOSEN_ACTION_VALUE] if out_keys is None else out_keys
        out_keys = list(out_keys)
        if len(out_keys) != 3:
            raise ValueError(
                f"{where}: expected 3 out_keys (action, action value, chosen action value), "
                f"got {out_keys}."
            )
        action_spec = None if spec is None else leaf_spec(spec, out_keys[0], where)
        self.action_space = self._resolve_space(action_space, action_spec, where)
        self.action_spec = action_spec
        self.spec = as_composite(spec, out_keys, where)
        self.safe = safe
        self.action_value_key = action_value_key
        self.action_mask_key = action_mask_key
        self.in_keys = [action_value_key] + ([action_mask_key] if action_mask_key else [])
        self.out_keys = out_keys
        # ``arange(n)`` per (n, device): a bool one-hot is ``index == arange(n)`` (see _single).
        self._columns: dict[tuple[int, torch.device], torch.Tensor] = {}

    @staticmethod
    def _resolve_space(space: str | None, spec: TensorSpec | None, where: str) -> str:
        from_spec = None
        if spec is not None:
            from_spec = next((name for cls, name in _SPEC_SPACES if isinstance(spec, cls)), None)
            if from_spec is None:
                raise TypeError(
                    f"{where}: expected a OneHot, Categorical, MultiOneHot or MultiCategorical "
                    f"action spec, got {type(spec).__name__}."
                )
        if space is None:
            if from_spec is None:
                raise ValueError(
                    f"{where}: expected an action space ('one_hot' or 'categorical') or an "
                    f"action spec, got neither."
                )
            return from_spec
        resolved = _SPACES.get(space.lower()) if isinstance(space, str) else None
        if resolved is None:
            raise ValueError(
                f"{where}: unknown action space {space!r}; expected 'one_hot' or "
                f"'categorical', or pass the action spec (MultiOneHot and MultiCategorical "
                f"need it for their nvec)."
            )
        if from_spec is not None and resolved != from_spec:
            raise ValueError(
                f"{where}: action_space={space!r} contradicts the {type(spec).__name__} spec."
            )
        return resolved

    def _single(
        self, action_value: torch.Tensor, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        spec = self.action_spec
        if self.action_space == "one_hot":
            # The one-hot vector of the greedy index: a scatter into zeros (``one_hot`` also
            # checks the index range, which an argmax always satisfies). Without a mask the
            # index comes from ``max`` with its last dim kept, as ``scatter_`` takes it.
            if mask is None:
                chosen, index = action_value.max(-1, keepdim=True)
            else:
                index, chosen = greedy_action(action_value, mask)
                index = index.unsqueeze(-1)
            dtype = torch.bool if spec is None else spec.dtype
            if dtype is torch.bool and action_value.is_contiguous():
                # The same tensor as the scatter below, in one op: column j is index == j.
                return index == self._arange(action_value), chosen
            return torch.zeros_like(action_value, dtype=dtype).scatter_(-1, index, 1), chosen
        index, chosen = greedy_action(action_value, mask)
        if spec is None:
            return index, chosen
        # A Categorical(shape=(..., 1)) keeps a trailing singleton that the Q-values lack.
        if spec.shape[-1:] == (1,) and action_value.shape[-1 - spec.ndim : -1] != spec.shape:
            index = index.unsqueeze(-1)
        return index.to(spec.dtype), chosen

    def _arange(self, action_value: torch.Tensor) -> torch.Tensor:
        key = (action_value.shape[-1], action_value.device)
        columns = self._columns.get(key)
        if columns is None:
            columns = torch.arange(key[0], device=key[1])
            self._columns[key] = columns
        return columns

    def _multi(
        self, action_value: torch.Tensor, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        spec = self.action_spec
        nvec = spec.nvec.tolist()
        if action_value.shape[-1] != sum(nvec):
            raise ValueError(
                f"QValueModule.forward: expected action values of last dim sum(nvec)="
                f"{sum(nvec)} (the values of each sub-action, concatenated), got "
                f"{action_value.shape[-1]}."
            )
        masks = [None] * len(nvec) if mask is None else mask.split(nvec, -1)
        picks = [greedy_action(v, m) for v, m in zip(action_value.split(nvec, -1), masks)]
        chosen = torch.cat([c for _, c in picks], -1)
        if self.action_space == "multi_one_hot":
            blocks = [one_hot(i, n) for (i, _), n in zip(picks, nvec)]
            return torch.cat(blocks, -1).to(spec.dtype), chosen
        return torch.stack([i for i, _ in picks], -1).to(spec.dtype), chosen

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Writes the greedy action, the action values and the chosen value."""
        return self._write(tensordict)

    def _write(self, tensordict: TensorDictBase) -> TensorDictBase:
        # The body of ``forward`` (which :class:`PolicyCallPlan` calls without the dispatch).
        key = self.action_value_key
        action_value = get_leaf(tensordict, (key,) if type(key) is str else key)
        mask = None
        if self.action_mask_key is not None:
            mask = tensordict.get(self.action_mask_key)
            if mask.dtype is not torch.bool:
                raise TypeError(
                    f"QValueModule.forward: expected a bool action mask at "
                    f"{self.action_mask_key!r}, got {mask.dtype}."
                )
        if self.action_space.startswith("multi"):
            action, chosen = self._multi(action_value, mask)
        else:
            action, chosen = self._single(action_value, mask)
        if self.safe and self.action_spec is not None:
            action = expand_to(self.action_spec, action.shape).project(action)
        key_action, key_values, key_chosen = self.out_keys
        # ``tensordict.set`` for each (the checks are skipped where the value already fits).
        # The values go back where they were read from unless ``out_keys`` names another key:
        # setting an entry to the tensor it holds changes nothing (and a locked TensorDict
        # already raised on the action).
        set_leaf(tensordict, key_action, action)
        if key_values != key:
            set_leaf(tensordict, key_values, action_value)
        set_leaf(tensordict, key_chosen, chosen)
        return tensordict


class QValueActor(TensorDictSequential):
    """A Q-value network followed by a :class:`QValueModule`: observation in, greedy action out.

    Args:
        module: the network mapping ``in_keys`` to Q-values ``[*B, n]``, or a TensorDict module
            that writes ``action_value_key`` itself.
        in_keys: keys the network reads. Defaults to ``("observation",)`` (also for ``None``).
            Ignored for a TensorDict module.
        spec: the action spec (``OneHot``, ``Categorical`` or a Composite holding one).

    Keyword Args:
        action_space: ``"one_hot"`` or ``"categorical"`` when no spec is given.
        action_value_key: where the Q-values go. Defaults to ``"action_value"`` (also for
            ``None``).
        action_mask_key: where the action mask is read, or ``None``.
        safe: whether to project the action into the spec. Defaults to ``False``.

    Raises:
        ValueError: a TensorDict ``module`` does not write ``action_value_key``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, QValueActor
        >>> from rl_core.specs import Categorical
        >>> actor = QValueActor(MLP(4, 3, depth=1, num_cells=8), spec=Categorical(3))
        >>> td = actor(TensorDict(observation=torch.zeros(5, 4), batch_size=[5]))
        >>> td["action"].shape, td["action_value"].shape, td["chosen_action_value"].shape
        (torch.Size([5]), torch.Size([5, 3]), torch.Size([5, 1]))
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: NestedKey | Sequence[NestedKey] | None = (OBSERVATION,),
        spec: TensorSpec | None = None,
        *,
        action_space: str | None = None,
        action_value_key: NestedKey | None = ACTION_VALUE,
        action_mask_key: NestedKey | None = None,
        safe: bool = False,
    ) -> None:
        # An explicit None asks for the default, as in TorchRL.
        action_value_key = ACTION_VALUE if action_value_key is None else action_value_key
        value_net = _action_value_network("QValueActor", module, in_keys, action_value_key)
        qvalue = QValueModule(
            action_space,
            spec=spec,
            action_value_key=action_value_key,
            action_mask_key=action_mask_key,
            safe=safe,
        )
        super().__init__(value_net, qvalue)
        self.spec = qvalue.spec

    @property
    def qvalue_module(self) -> QValueModule:
        """The :class:`QValueModule` at the end of the sequence."""
        return self.module[-1]


__all__ = ["QValueModule", "QValueActor", "greedy_action"]


def _action_value_network(
    owner: str,
    module: nn.Module,
    in_keys: NestedKey | Sequence[NestedKey] | None,
    action_value_key: NestedKey,
) -> TensorDictModuleBase:
    """The network of a Q-value actor: ``module`` itself when it is a TensorDict module
    writing ``action_value_key``, else ``module`` wrapped to read ``in_keys`` (the observation
    when ``None``) and write ``action_value_key``."""
    in_keys = (OBSERVATION,) if in_keys is None else in_keys
    if isinstance(module, TensorDictModuleBase):
        if action_value_key not in module.out_keys:
            raise ValueError(
                f"{owner}: the TensorDict module writes {module.out_keys}, expected it to "
                f"write the action values at {action_value_key!r}. Set action_value_key or the "
                f"module's out_keys."
            )
        return module
    keys = [in_keys] if isinstance(in_keys, str | tuple) else list(in_keys)
    return TensorDictModule(module, in_keys=keys, out_keys=[action_value_key])
