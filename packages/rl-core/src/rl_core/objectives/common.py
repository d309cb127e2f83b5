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
from tensordict import TensorDict, TensorDictBase, make_tensordict
from tensordict.nn import TensorDictParams
from tensordict.utils import unravel_key
from torch import nn

from rl_core._accel.seam import SwapPlanCache, loaded
from rl_core.exploration import set_recurrent_mode
from rl_core.keys import NestedKey


class _UnknownKeyError(KeyError, ValueError):
    """A key name a loss does not accept: a ``KeyError`` here, a ``ValueError`` in TorchRL."""


def _is_nested_key(value: object) -> bool:
    if isinstance(value, str):
        return True
    return (
        isinstance(value, tuple) and len(value) > 0 and all(isinstance(part, str) for part in value)
    )


def _unique_keys(keys: list[NestedKey]) -> list[NestedKey]:
    """``keys`` without repeats (``("a",)`` and ``"a"`` are one key), first occurrence kept."""
    seen: set[NestedKey] = set()
    out: list[NestedKey] = []
    for key in keys:
        key = unravel_key(key)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _cuda_devices(batch: TensorDictBase) -> list[int]:
    """The CUDA devices whose RNG a forward on ``batch`` may draw from (none on CPU)."""
    device = batch.device
    if device is not None and device.type == "cuda":
        return [device.index if device.index is not None else torch.cuda.current_device()]
    return []


def _feature_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` without trailing singleton dims: ``(2, 1)`` and ``(2,)`` hold the same action."""
    shape = tuple(shape)
    while shape and shape[-1] == 1:
        shape = shape[:-1]
    return shape


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
    - :meth:`_in_keys`: the entries it reads from its input. They give :attr:`in_keys`, the
      keyword names of a call with tensors (``loss(observation=..., action=...)``, as
      TorchRL's dispatch), and the error a call raises when the batch lacks one of them.

    Bad input. The entries are not checked before each call (that would cost every update).
    When a call fails, the loss looks for the cause once: an entry of :meth:`_in_keys` that
    the batch lacks raises a ``KeyError`` naming the entry and the loss; an action whose
    shape per sample differs from the one the loss's actor (the converted network that
    writes ``tensor_keys.action``) writes raises a ``ValueError`` naming ``action``, the
    expected and the given shape. Any other failure, and a ``KeyError`` or ``ValueError``
    the loss raised itself (its message starts with the loss's name), propagates unchanged.

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
    (rl-objectives' ``SoftUpdate`` and ``HardUpdate``) find
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # As TorchRL: ``forward`` and the public ``*loss`` methods run their networks in
        # sequence mode (``set_recurrent_mode(True)``), so a recurrent policy reads [*B, T].
        super().__init_subclass__(**kwargs)
        for name, value in list(cls.__dict__.items()):
            public_loss = not name.startswith("_") and name.endswith("loss")
            if callable(value) and (name == "forward" or public_loss):
                setattr(cls, name, set_recurrent_mode(True)(value))

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
        self._plain_networks: set[str] = set()  # converted with functional=False

    # Calls.

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs :meth:`forward` on a TensorDict, or on tensors passed by keyword.

        ``loss(td)`` returns the TensorDict of :meth:`forward`. ``loss(observation=obs,
        action=act, next_reward=r, ...)`` builds the batch from the keyword tensors (a nested
        key's parts joined by ``_``; the names are :attr:`in_keys`; the batch size is the
        leading dims the tensors share) and returns the output's entries as a tuple, in the
        order of the output (one entry: the tensor itself).

        Raises:
            KeyError: the batch lacks an entry the loss reads (named in the message).
            ValueError: the action's shape per sample is not the one the actor writes.
            TypeError: a keyword names no input of the loss.
        """
        if kwargs and not args and "tensordict" not in kwargs:
            return self._call_with_tensors(kwargs)
        batch = args[0] if args else kwargs.get("tensordict")
        # Not traced by torch.compile: a compiled loss checks nothing here (eager calls do).
        if (
            self._scores_actions
            and isinstance(batch, TensorDictBase)
            and not torch.compiler.is_compiling()
        ):
            self._check_action_shape(batch)
        try:
            return super().__call__(*args, **kwargs)
        except Exception as error:
            if isinstance(batch, TensorDictBase):
                self._explain_failure(batch, error)
            raise

    #: Whether the loss scores the batch's actions under the actor's distribution (a
    #: log-prob). A wrong-width action need not make such a loss fail: with distribution
    #: checks off (as ``torch.compile`` leaves them for the whole process) a log-prob may
    #: broadcast. Such losses have their action's shape checked before each call.
    _scores_actions: bool = False

    def _check_action_shape(self, batch: TensorDictBase) -> None:
        """Raises a ``ValueError`` when the batch's action is not shaped as the actor's.

        The per-sample shape is compared with the shapes already found good (one set lookup
        a call); only a new shape runs the actor once (under a forked RNG, so the training's
        random stream is untouched) to tell a bad action from a good one.
        """
        key = getattr(getattr(self, "tensor_keys", None), "action", None)
        action = batch.get(key, None) if key is not None else None
        if not isinstance(action, torch.Tensor):
            return
        got = _feature_shape(tuple(action.shape[batch.batch_dims :]))
        if got in self.__dict__.setdefault("_good_action_shapes", set()):
            return
        try:
            with torch.random.fork_rng(devices=_cuda_devices(batch)):
                found = self._action_shapes(batch)
        except Exception:  # the diagnosis must not fail a call the loss itself may handle
            found = None
        if found is not None:
            raise self._action_shape_error(*found)
        self.__dict__["_good_action_shapes"].add(got)

    def _action_shape_error(
        self, key: NestedKey, network: str, expected: tuple[int, ...], got: tuple[int, ...]
    ) -> ValueError:
        return ValueError(
            f"{type(self).__name__}: the action (entry {key!r}) has shape {got} per sample, "
            f"expected {expected} (what {network} writes). Give the action of the environment's "
            f"action spec, or build the actor for this action shape."
        )

    def _call_with_tensors(self, kwargs: dict[str, Any]) -> Any:
        names = {"_".join(key) if isinstance(key, tuple) else key: key for key in self.in_keys}
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(
                f"{type(self).__name__}: unexpected keyword argument(s) {unknown}; a call with "
                f"tensors takes the loss's in_keys, nested keys joined by '_': {sorted(names)}."
            )
        batch = make_tensordict(
            {names[name]: value for name, value in kwargs.items()}, auto_batch_size=True
        )
        out = self(batch)
        values = tuple(out.values())
        return values[0] if len(values) == 1 else values

    def _explain_failure(self, batch: TensorDictBase, error: Exception) -> None:
        """Raises a ``KeyError`` or ``ValueError`` naming the bad input that made a call fail;
        returns if it finds none (the caller re-raises ``error``)."""
        name = type(self).__name__
        message = error.args[0] if error.args else None
        if isinstance(error, KeyError | ValueError) and f"{message}".startswith(f"{name}:"):
            return  # the loss named the bad input itself
        try:
            missing = [
                key for key in _unique_keys(self._in_keys(batch)) if batch.get(key, None) is None
            ]
        except Exception:  # the diagnosis must not hide the original error
            return
        if missing:
            raise KeyError(
                f"{name}: the batch has no entry {missing[0]!r}, which this loss reads"
                f"{self._rename_hint(missing[0])}. Missing: {missing}; the loss reads "
                f"{self.in_keys}."
            ) from error
        try:
            found = self._action_shapes(batch)
        except Exception:
            return
        if found is not None:
            raise self._action_shape_error(*found) from error

    def _rename_hint(self, key: NestedKey) -> str:
        for field in dataclasses.fields(self.tensor_keys):
            value = unravel_key(getattr(self.tensor_keys, field.name))
            if key == value or key == ("next", *((value,) if isinstance(value, str) else value)):
                return f" (rename it with set_keys({field.name}=...))"
        return ""

    def _action_shapes(
        self, batch: TensorDictBase
    ) -> tuple[NestedKey, str, tuple[int, ...], tuple[int, ...]] | None:
        """``(key, network, expected, got)`` when the batch's action is not shaped as the
        action the network writing ``tensor_keys.action`` produces; ``None`` otherwise."""
        key = getattr(self.tensor_keys, "action", None)
        action = batch.get(key, None) if key is not None else None
        if not isinstance(action, torch.Tensor):
            return None
        for network in self._network_names:
            out_keys = getattr(self.__dict__[network], "out_keys", None) or []
            if unravel_key(key) not in [unravel_key(k) for k in out_keys]:
                continue
            with torch.no_grad(), self.use_network(network) as net:
                written = net(batch.exclude(key)).get(key)
            expected = tuple(written.shape[batch.batch_dims :])
            got = tuple(action.shape[batch.batch_dims :])
            if _feature_shape(expected) != _feature_shape(got):
                return key, network, expected, got
            return None
        return None

    # Inputs.

    @property
    def in_keys(self) -> list[NestedKey]:
        """Every entry the loss may read from its input (TorchRL's ``in_keys``)."""
        return _unique_keys(self._in_keys(None))

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        """Hook: the entries the loss reads from its input.

        Args:
            tensordict: ``None`` for every entry the loss may read; a batch for the entries
                it needs to compute its loss on that batch (e.g. not the estimator's inputs
                when the batch carries the advantage already).

        Returns:
            The keys; the base class reads none.
        """
        return []

    def _network_in_keys(self, name: str, *, under: str | None = None) -> list[NestedKey]:
        """The ``in_keys`` of the converted network ``name`` (``[]`` if it declares none),
        each under the sub-TensorDict ``under`` (e.g. ``"next"``) when given."""
        keys = [unravel_key(k) for k in getattr(self.__dict__[name], "in_keys", None) or []]
        if under is None:
            return keys
        return [(under, *((k,) if isinstance(k, str) else k)) for k in keys]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Computes the loss terms (``loss_*`` entries) and diagnostics for a batch.

        Subclasses override it; the base class can be built (as TorchRL's) to use the
        network and key helpers, and raises ``NotImplementedError`` here.

        Args:
            tensordict: the batch of transitions.

        Returns:
            A TensorDict of scalars (or of tensors a trainer can reduce).
        """
        raise NotImplementedError(
            f"{type(self).__name__}.forward: a loss computes its terms in forward(); this "
            f"class does not define it."
        )

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            # As TorchRL: without a target copy, ``target_{net}_params`` reads the online
            # parameters, detached (the same storage: updates show through).
            net = name[7:-7] if name.startswith("target_") and name.endswith("_params") else ""
            if net and net in self.__dict__.get("_network_names", ()):
                return super().__getattr__(f"{net}_params").data
            raise

    # Networks and their targets.

    def convert_to_functional(
        self,
        module: nn.Module,
        name: str,
        *,
        create_target_params: bool = False,
        functional: bool = True,
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
            functional: ``False`` keeps ``module`` itself as a submodule at ``self.{name}``
                (no structure-only copy, its parameters registered under ``{name}.``), as
                TorchRL's ``functional=False``: the network runs with its own parameters,
                which suits wrappers that own their parameters (DDP, FSDP).
                ``self.{name}_params`` is then a plain TensorDict of those parameters (not
                registered again), for calls that load other parameters. No target copy.
                Defaults to ``True``.

        Raises:
            TypeError: ``module`` is not an ``nn.Module`` or ``name`` not a string.
            ValueError: ``name`` is not an identifier, or is already taken on this loss, or
                ``create_target_params`` is asked of a non-functional network.
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
        if not functional:
            if create_target_params:
                raise ValueError(
                    f"{owner}: a network kept with functional=False has no target copy; pass "
                    f"create_target_params=False or functional=True for {name!r}."
                )
            self.add_module(name, module)
            # the same object in __dict__, so that self.__dict__[name] is the network in
            # either mode; the parameters stay registered once, through the submodule
            self.__dict__[name] = module
            self.__dict__[f"{name}_params"] = params
            self._network_names.append(name)
            self._plain_networks.add(name)
            return
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
        if params is None and not target and name in self._plain_networks:
            yield self.__dict__[name]  # runs with its own parameters
            return
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
            KeyError: a name is not a field of ``_AcceptedKeys`` (also a ``ValueError``, which
                TorchRL raises).
            TypeError: a value is not a string or a non-empty tuple of strings.
        """
        accepted = [field.name for field in dataclasses.fields(self.tensor_keys)]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise _UnknownKeyError(
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
