"""Policies and value functions as TensorDict modules: Actor, ProbabilisticActor, ValueOperator."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tensordict import TensorDictBase
from tensordict.nn import (
    InteractionType,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictModuleBase,
    dispatch,
)
from torch import nn

from rl_core.keys import ACTION, OBSERVATION, STATE_ACTION_VALUE, STATE_VALUE, NestedKey
from rl_core.modules._spec_utils import as_composite, project_into
from rl_core.specs import Composite, TensorSpec


def _key_list(
    keys: NestedKey | Sequence[NestedKey] | None,
    where: str,
    arg: str,
    default: Sequence[NestedKey] | None = None,
) -> list[NestedKey]:
    if keys is None and default is not None:  # TorchRL's None: the default keys
        return list(default)
    if isinstance(keys, str | tuple):
        return [keys]
    keys = list(keys)
    if not keys:
        raise ValueError(f"{where}: {arg} must name at least one key, got an empty list.")
    return keys


def _checked_spec(
    spec: TensorSpec | None, out_keys: list[NestedKey], safe: bool, where: str
) -> Composite | None:
    composite = as_composite(spec, out_keys, where)
    if safe and composite is None:
        raise ValueError(
            f"{where}: safe=True projects the outputs into the spec, but got spec=None. Pass "
            f"the action spec or set safe=False."
        )
    return composite


class _SafeProbabilisticModule(ProbabilisticTensorDictModule):
    """A ``ProbabilisticTensorDictModule`` that projects its sample into a spec when ``safe``."""

    def __init__(self, *, spec: Composite | None, safe: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.safe = safe

    @dispatch(auto_batch_size=False)
    def forward(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        _requires_sample: bool = True,
    ) -> TensorDictBase:
        """Samples (see ``ProbabilisticTensorDictModule``), then projects into the spec."""
        out = super().forward(tensordict, tensordict_out, _requires_sample=_requires_sample)
        if self.safe:
            project_into(out, self.spec)
        return out


class Actor(TensorDictModule):
    """A deterministic policy: reads observations, writes the action.

    Args:
        module: the network (or any callable), called with the tensors at ``in_keys`` (in
            order).
        in_keys: keys the network reads. Defaults to ``("observation",)`` (also for ``None``).
        out_keys: keys of the network's outputs. Defaults to ``("action",)`` (also for ``None``).

    Keyword Args:
        spec: the action spec (for ``out_keys[0]``) or a Composite keyed by output key. Kept
            as a Composite in :attr:`spec`.
        safe: whether to project the outputs into the spec (``Bounded`` values are clamped).
            Defaults to ``False``.

    Raises:
        ValueError: ``safe=True`` without a spec, or empty keys.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, Actor
        >>> from rl_core.specs import Bounded
        >>> actor = Actor(MLP(3, 2, depth=1, num_cells=8))
        >>> td = actor(TensorDict(observation=torch.zeros(5, 3), batch_size=[5]))
        >>> td["action"].shape
        torch.Size([5, 2])
        >>> clipped = Actor(lambda obs: 10 * obs, spec=Bounded(-1.0, 1.0, shape=(3,)), safe=True)
        >>> clipped(observation=torch.ones(3))
        tensor([1., 1., 1.])
    """

    def __init__(
        self,
        module: nn.Module | Callable[..., Any],
        in_keys: NestedKey | Sequence[NestedKey] | None = (OBSERVATION,),
        out_keys: NestedKey | Sequence[NestedKey] | None = (ACTION,),
        *,
        spec: TensorSpec | None = None,
        safe: bool = False,
    ) -> None:
        in_keys = _key_list(in_keys, "Actor", "in_keys", (OBSERVATION,))
        out_keys = _key_list(out_keys, "Actor", "out_keys", (ACTION,))
        super().__init__(module, in_keys=in_keys, out_keys=out_keys)
        self.spec = _checked_spec(spec, out_keys, safe, "Actor")
        self.safe = safe

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase, *args: Any, **kwargs: Any) -> TensorDictBase:
        """Runs the network and writes its outputs, projected into the spec when ``safe``."""
        out = super().forward(tensordict, *args, **kwargs)
        if self.safe:
            project_into(out, self.spec)
        return out


class ProbabilisticActor(ProbabilisticTensorDictSequential):
    """A stochastic policy: a module writes distribution parameters, a head samples the action.

    Built as ``ProbabilisticTensorDictSequential(module, ProbabilisticTensorDictModule(...))``,
    so ``get_dist(td)``, ``log_prob(td)`` and the exploration context work as in tensordict:
    under ``ExplorationType.RANDOM`` the action is sampled, under ``DETERMINISTIC`` / ``MODE``
    / ``MEAN`` it is the matching statistic, and outside any block the
    ``default_interaction_type`` applies.

    Args:
        module: a TensorDict module that writes the distribution parameters at ``in_keys``.
        in_keys: the distribution parameters, as a list of keys whose last name is the
            distribution's argument (``["loc", "scale"]``), or a dict
            ``{"loc": ("agents", "loc"), ...}`` from argument name to key.
        out_keys: where the sample is written. Defaults to ``("action",)``.

    Keyword Args:
        spec: the action spec (for ``out_keys[0]``) or a Composite keyed by output key. Kept
            as a Composite in :attr:`spec`.
        safe: whether to project the sample into the spec (the log-probability stays that of
            the unprojected sample). Defaults to ``False``.
        distribution_class: the distribution class (``torch.distributions.Normal``,
            ``TanhNormal``...). Defaults to tensordict's ``Delta``.
        distribution_kwargs: extra keyword arguments for the distribution.
        return_log_prob: whether to write the sample's log-probability (at
            ``"action_log_prob"`` for the default out key). Defaults to ``False``.
        default_interaction_type: how the action is chosen outside any
            ``set_exploration_type`` block. Defaults to ``ExplorationType.DETERMINISTIC``.
        log_prob_key: a custom key for the log-probability.
        **kwargs: further keyword arguments for ``ProbabilisticTensorDictModule``.

    Raises:
        TypeError: ``module`` is not a TensorDict module.
        ValueError: ``safe=True`` without a spec.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.exploration import ExplorationType, set_exploration_type
        >>> from rl_core.modules import MLP, ProbabilisticActor
        >>> net = torch.nn.Sequential(MLP(3, 4, depth=1, num_cells=8), NormalParamExtractor())
        >>> params = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
        >>> actor = ProbabilisticActor(
        ...     params,
        ...     in_keys=["loc", "scale"],
        ...     distribution_class=torch.distributions.Normal,
        ...     return_log_prob=True,
        ... )
        >>> td = TensorDict(observation=torch.zeros(5, 3), batch_size=[5])
        >>> with set_exploration_type(ExplorationType.RANDOM):
        ...     td = actor(td)
        >>> td["action"].shape, td["action_log_prob"].shape
        (torch.Size([5, 2]), torch.Size([5, 2]))
    """

    def __init__(
        self,
        module: TensorDictModuleBase,
        in_keys: NestedKey | Sequence[NestedKey] | dict[str, NestedKey],
        out_keys: NestedKey | Sequence[NestedKey] | None = (ACTION,),
        *,
        spec: TensorSpec | None = None,
        safe: bool = False,
        distribution_class: type | None = None,
        distribution_kwargs: dict[str, Any] | None = None,
        return_log_prob: bool = False,
        default_interaction_type: InteractionType = InteractionType.DETERMINISTIC,
        log_prob_key: NestedKey | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(module, TensorDictModuleBase):
            raise TypeError(
                f"ProbabilisticActor: expected module to be a TensorDict module that writes the "
                f"distribution parameters, got {type(module).__name__}. Wrap it: "
                f"TensorDictModule(net, in_keys=['observation'], out_keys=['loc', 'scale'])."
            )
        if not isinstance(in_keys, dict):
            in_keys = _key_list(in_keys, "ProbabilisticActor", "in_keys")
        out_keys = _key_list(out_keys, "ProbabilisticActor", "out_keys", (ACTION,))
        composite = _checked_spec(spec, out_keys, safe, "ProbabilisticActor")
        if distribution_class is not None:
            kwargs["distribution_class"] = distribution_class
        head = _SafeProbabilisticModule(
            spec=composite,
            safe=safe,
            in_keys=in_keys,
            out_keys=out_keys,
            distribution_kwargs=distribution_kwargs,
            return_log_prob=return_log_prob,
            default_interaction_type=default_interaction_type,
            log_prob_key=log_prob_key,
            **kwargs,
        )
        super().__init__(module, head)
        self.spec = composite
        self.safe = safe


class ValueOperator(TensorDictModule):
    """A value function: writes ``"state_value"``, or ``"state_action_value"`` for Q(s, a).

    Args:
        module: the network, called with the tensors at ``in_keys`` (in order).
        in_keys: keys the network reads. Defaults to ``("observation",)`` (also for ``None``).
        out_keys: where the value is written. Defaults to ``("state_action_value",)`` when
            ``"action"`` is among ``in_keys``, else ``("state_value",)``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, ValueOperator
        >>> q = ValueOperator(MLP(5, 1, depth=1, num_cells=8), in_keys=["observation", "action"])
        >>> td = TensorDict(observation=torch.zeros(4, 3), action=torch.zeros(4, 2), batch_size=[4])
        >>> q(td)["state_action_value"].shape
        torch.Size([4, 1])
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: NestedKey | Sequence[NestedKey] | None = (OBSERVATION,),
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        in_keys = _key_list(in_keys, "ValueOperator", "in_keys", (OBSERVATION,))
        if out_keys is None:
            out_keys = [STATE_ACTION_VALUE if ACTION in in_keys else STATE_VALUE]
        super().__init__(
            module, in_keys=in_keys, out_keys=_key_list(out_keys, "ValueOperator", "out_keys")
        )


__all__ = ["Actor", "ProbabilisticActor", "ValueOperator"]
