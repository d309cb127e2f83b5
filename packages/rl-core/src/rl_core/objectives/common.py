"""The base of every loss: :class:`LossModule`."""

from __future__ import annotations

import abc
import copy
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn

from rl_core.keys import NestedKey
from rl_core.objectives._swap import SwapPlanCache, loaded


def _is_nested_key(value: object) -> bool:
    if isinstance(value, str):
        return True
    return (
        isinstance(value, tuple) and len(value) > 0 and all(isinstance(part, str) for part in value)
    )


class LossModule(nn.Module, abc.ABC):
    """The base class of the losses: it holds the networks, their target copies and key names.

    A loss reads a TensorDict of transitions and returns a TensorDict of scalars. By
    convention every entry whose name starts with ``"loss_"`` is a term to minimise (a trainer
    sums them before ``backward()``); every other entry is a diagnostic (an entropy, a
    clip fraction, ...) and should be detached.

    What a subclass writes:

    - ``forward(tensordict) -> TensorDict``.
    - A ``@dataclass class _AcceptedKeys`` whose fields are the key names it reads and writes,
      with their defaults (``value: NestedKey = "state_value"``); users rename them with
      :meth:`set_keys`, and the loss reads them from ``self.tensor_keys``.
    - In ``__init__``, one :meth:`convert_to_functional` call per network, with
      ``create_target_params=True`` for those that need a target copy.
    - If it uses a value estimator: ``default_value_estimator``, :meth:`_make_value_estimator`
      and :meth:`_forward_value_estimator_keys`.

    How networks are held. ``convert_to_functional(module, "value_network")`` stores the
    parameters and buffers of ``module`` as a :class:`~tensordict.nn.TensorDictParams` at
    ``self.value_network_params`` (the same ``nn.Parameter`` objects as in ``module``, so an
    optimizer over ``loss.parameters()`` trains the caller's module), and keeps at
    ``self.value_network`` a copy of the module whose parameters live on the ``meta`` device:
    structure only. A network runs with a set of parameters loaded into it::

        with self.value_network_params.to_module(self.value_network):
            value = self.value_network(td)
        with self.use_network("value_network", target=True) as net:  # the same, shorter
            target_value = net(next_td)

    Calling ``self.value_network`` outside such a block fails on meta tensors. With
    ``create_target_params=True``, ``self.target_value_network_params`` holds a detached copy
    whose entries are registered as buffers: they are in ``state_dict()`` and follow
    ``.to()``, but are not in ``parameters()``. Target updaters
    (:class:`~rl_core.objectives.SoftUpdate`, :class:`~rl_core.objectives.HardUpdate`) find
    them through :attr:`target_network_names`. Parameters shared by two converted networks
    (a common trunk) are the same objects, and ``parameters()`` lists them once.

    Examples:
        >>> import torch
        >>> from dataclasses import dataclass
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.keys import NestedKey
        >>> from rl_core.objectives import LossModule
        >>> class ValueLoss(LossModule):
        ...     @dataclass
        ...     class _AcceptedKeys:
        ...         value: NestedKey = "state_value"
        ...         value_target: NestedKey = "value_target"
        ...
        ...     def __init__(self, value_network):
        ...         super().__init__()
        ...         self.convert_to_functional(
        ...             value_network, "value_network", create_target_params=True
        ...         )
        ...
        ...     def forward(self, tensordict):
        ...         with self.use_network("value_network") as net:
        ...             value = net(tensordict.copy())[self.tensor_keys.value]
        ...         error = value - tensordict[self.tensor_keys.value_target]
        ...         return TensorDict(loss_value=error.pow(2).mean(), value_mean=value.mean().detach())
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> net = TensorDictModule(torch.nn.Linear(3, 1), ["observation"], ["state_value"])
        >>> loss = ValueLoss(net)
        >>> [name for name, _ in loss.named_parameters()]
        ['value_network_params.module.weight', 'value_network_params.module.bias']
        >>> sorted(loss.state_dict())[0]
        'target_value_network_params.module.bias'
        >>> td = TensorDict(observation=torch.randn(8, 3), value_target=torch.zeros(8, 1))
        >>> out = loss(td)
        >>> print(sorted(out.keys()), out["loss_value"].shape)
        ['loss_value', 'value_mean'] torch.Size([])
        >>> loss.set_keys(value_target=("next", "target")).tensor_keys.value_target
        ('next', 'target')
    """

    @dataclass
    class _AcceptedKeys:
        """The key names of the loss; the base reads none."""

    #: The value estimator that :meth:`make_value_estimator` builds without a ``value_type``.
    default_value_estimator: ClassVar[Any] = None

    def __init__(self) -> None:
        super().__init__()
        if not dataclasses.is_dataclass(self._AcceptedKeys):
            raise TypeError(
                f"{type(self).__name__}._AcceptedKeys must be a dataclass, got "
                f"{self._AcceptedKeys!r}. Decorate it with @dataclasses.dataclass."
            )
        self.tensor_keys = self._AcceptedKeys()
        self.value_type: Any = None
        self.value_estimator: Any = None
        self._network_names: list[str] = []
        self._target_network_names: list[str] = []

    @abc.abstractmethod
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Computes the loss terms (``loss_*`` entries) and diagnostics for a batch.

        Args:
            tensordict: the batch of transitions.

        Returns:
            A TensorDict of scalars (or of tensors a trainer can reduce).
        """

    # Networks and their targets.

    def convert_to_functional(
        self,
        module: nn.Module,
        name: str,
        *,
        create_target_params: bool = False,
    ) -> None:
        """Takes over the parameters of ``module`` and keeps a parameter-free copy of it.

        Sets ``self.{name}_params`` (a :class:`~tensordict.nn.TensorDictParams` of the
        module's own parameters and buffers), ``self.{name}`` (the structure-only copy) and,
        with ``create_target_params``, ``self.target_{name}_params`` (a detached clone, held as
        buffers). See the class docstring for how to run the network.

        Args:
            module: the network; any :class:`torch.nn.Module`.
            name: the attribute name, a Python identifier, e.g. ``"value_network"``.

        Keyword Args:
            create_target_params: also create the target copy. Defaults to ``False``.

        Raises:
            TypeError: ``module`` is not an ``nn.Module`` or ``name`` not a string.
            ValueError: ``name`` is not an identifier, or is already taken on this loss.
        """
        owner = f"{type(self).__name__}.convert_to_functional"
        if not isinstance(module, nn.Module):
            raise TypeError(f"{owner}: expected an nn.Module, got {type(module).__name__}.")
        if not isinstance(name, str) or not name.isidentifier():
            raise (TypeError if not isinstance(name, str) else ValueError)(
                f"{owner}: name must be a Python identifier such as 'value_network', got {name!r}."
            )
        for attribute in (name, f"{name}_params", f"target_{name}_params"):
            if hasattr(self, attribute):
                raise ValueError(
                    f"{owner}: this loss already has an attribute {attribute!r}. Convert each "
                    f"network once, under a name of its own."
                )
        params = TensorDict.from_module(module)
        with params.data.to("meta").to_module(module):
            structure = copy.deepcopy(module)
        structure.train(self.training)
        setattr(self, f"{name}_params", TensorDictParams(params, no_convert=True))
        # Stored outside _modules: the meta copy must not show up in parameters(),
        # state_dict() or .to(); train()/eval() reach it through LossModule.train.
        self.__dict__[name] = structure
        self._network_names.append(name)
        if create_target_params:
            target = TensorDictParams(params.data.clone(), no_convert=True)
            setattr(self, f"target_{name}_params", target)
            self._target_network_names.append(name)

    @property
    def network_names(self) -> tuple[str, ...]:
        """The names given to :meth:`convert_to_functional`, in order."""
        return tuple(self._network_names)

    @property
    def target_network_names(self) -> tuple[str, ...]:
        """The names of the networks that have a ``target_{name}_params`` copy."""
        return tuple(self._target_network_names)

    def _params_of(self, owner: str, name: str, *, target: bool) -> TensorDictParams:
        names = self._target_network_names if target else self._network_names
        if name not in names:
            kind = "target networks" if target else "networks"
            raise KeyError(
                f"{type(self).__name__}.{owner}: no {kind} named {name!r}; the loss has "
                f"{list(names)}. Convert it with convert_to_functional(..., {name!r}"
                f"{', create_target_params=True' if target else ''})."
            )
        return getattr(self, f"target_{name}_params" if target else f"{name}_params")

    @contextmanager
    def use_network(
        self, name: str, *, target: bool = False, params: TensorDictBase | None = None
    ) -> Iterator[nn.Module]:
        """Loads the online (or target, or given) parameters into the network ``name``.

        The tensors go in as they are (no new leaf ``Parameter`` is made), so gradients reach
        the loss's parameters, and a detached or target set computes no gradient. Outside
        ``torch.compile`` the loading follows a plan made on first use, a few dict
        assignments, which holds the parameter tensors: optimizer steps, target updaters,
        ``load_state_dict`` and ``.to()``/``.float()`` all update them in place (the plans
        are dropped on the last two anyway), but a tensor *assigned* into a parameter
        TensorDict after the first call is not seen (update it in place instead). Under
        ``torch.compile`` the TensorDict's ``to_module`` is used.

        Args:
            name: a name given to :meth:`convert_to_functional`.

        Keyword Args:
            target: load ``target_{name}_params`` instead of ``{name}_params``. Defaults to
                ``False``.
            params: load this TensorDict instead (the same structure, e.g. a detached copy of
                ``{name}_params``); its leaves must stay the same objects while it is used.

        Yields:
            The network, ready to call.

        Raises:
            KeyError: no (target) network has this name.
        """
        if params is None:
            params = self._params_of("use_network", name, target=target)
        elif name not in self._network_names:
            self._params_of("use_network", name, target=False)  # raises the KeyError
        module = self.__dict__[name]
        plan = None
        if not torch.compiler.is_compiling():
            cache = self.__dict__.get("_swap_plans")
            if cache is None:
                cache = self.__dict__["_swap_plans"] = SwapPlanCache()
            plan = cache.get(name, module, params)
        if plan is None:
            with params.to_module(module, preserve_module_state=False):
                yield module
        else:
            with loaded(plan, module):
                yield module

    def _drop_swap_plans(self) -> None:
        cache = self.__dict__.get("_swap_plans")
        if cache is not None:
            cache.clear()

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        # .to()/.float()/... may put new tensors in the parameter TensorDicts
        self._drop_swap_plans()
        return super()._apply(fn, *args, **kwargs)

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        # load_state_dict(assign=True) replaces the tensors
        self._drop_swap_plans()
        super()._load_from_state_dict(*args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        # copies and pickles rebuild their plans (a plan points into this loss's networks)
        state = dict(super().__getstate__())
        state.pop("_swap_plans", None)
        return state

    def target_parameters(self) -> Iterator[torch.Tensor]:
        """Yields every tensor of every target copy (parameters and buffers alike)."""
        for name in self._target_network_names:
            target = getattr(self, f"target_{name}_params")
            yield from target.values(include_nested=True, leaves_only=True)

    def train(self, mode: bool = True) -> Self:
        """Sets training mode on the loss, its submodules and the converted networks."""
        super().train(mode)
        for name in self._network_names:
            self.__dict__[name].train(mode)
        return self

    # Keys.

    def set_keys(self, **kwargs: NestedKey) -> Self:
        """Renames the entries the loss reads or writes.

        Args:
            **kwargs: field names of the loss's ``_AcceptedKeys`` mapped to the new keys
                (a string or a tuple of strings).

        Returns:
            The loss itself, for chaining.

        Raises:
            KeyError: a name is not a field of ``_AcceptedKeys``.
            TypeError: a value is not a string or a non-empty tuple of strings.
        """
        accepted = [field.name for field in dataclasses.fields(self.tensor_keys)]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise KeyError(
                f"{type(self).__name__}.set_keys: unknown key name(s) {unknown}; this loss "
                f"accepts {accepted}."
            )
        for key_name, key in kwargs.items():
            if not _is_nested_key(key):
                raise TypeError(
                    f"{type(self).__name__}.set_keys: {key_name} must be a string or a "
                    f"non-empty tuple of strings, got {key!r}."
                )
        for key_name, key in kwargs.items():
            setattr(self.tensor_keys, key_name, key)
        self._forward_value_estimator_keys(**kwargs)
        return self

    def _forward_value_estimator_keys(self, **kwargs: NestedKey) -> None:
        """Hook: passes renamed keys on to ``self.value_estimator``.

        Called by :meth:`set_keys` with the renamed keys, and by :meth:`make_value_estimator`
        with all keys once the estimator exists. The base does nothing: a loss whose estimator
        reads keys overrides it to call the estimator's ``set_keys`` with the keys it needs.
        """

    # Value estimation.

    def make_value_estimator(self, value_type: Any = None, **hyperparams: Any) -> Self:
        """Builds the value estimator of the loss and stores it at ``self.value_estimator``.

        Args:
            value_type: which estimator (TD(0), TD(lambda), GAE, ...); the names are defined
                where the estimators live (rl-objectives). Defaults to
                ``default_value_estimator``.
            **hyperparams: the estimator's hyperparameters (``gamma``, ``lmbda``, ...).

        Returns:
            The loss itself, for chaining.

        Raises:
            ValueError: no ``value_type`` is given and the loss has no default.
            NotImplementedError: the loss does not build value estimators.
        """
        if value_type is None:
            value_type = self.default_value_estimator
        if value_type is None:
            raise ValueError(
                f"{type(self).__name__}.make_value_estimator: no value_type given and the loss "
                f"sets no default_value_estimator. Pass value_type explicitly."
            )
        self.value_estimator = self._make_value_estimator(value_type, **hyperparams)
        self.value_type = value_type
        self._forward_value_estimator_keys(**dataclasses.asdict(self.tensor_keys))
        return self

    def _make_value_estimator(self, value_type: Any, **hyperparams: Any) -> Any:
        """Hook: returns a new estimator of kind ``value_type``; losses with one override it."""
        raise NotImplementedError(
            f"{type(self).__name__} does not build value estimators: it defines no "
            f"_make_value_estimator(value_type, **hyperparams). Override it to support "
            f"make_value_estimator({value_type!r})."
        )
