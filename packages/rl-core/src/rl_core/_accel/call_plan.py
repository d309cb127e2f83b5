"""PolicyCallPlan: ``policy(td)`` with the call machinery of plain TensorDict modules resolved once.

Calling a ``TensorDictModule`` on a TensorDict goes through ``nn.Module.__call__``, the
``dispatch`` decorator, the ``skip_existing`` decorator, the key handling of ``forward`` and
a validated ``set`` per output: on a small policy (an MLP on a batch of 8) that costs about as
much as the network itself. The plan looks at the policy once, and for the modules whose call
it knows exactly (below) reads the inputs, calls the wrapped network and writes the outputs
directly; it gives the same TensorDict as ``policy(td)``, and calls ``policy(td)`` itself
wherever it could not be sure of that.

The fast path covers, recursively:

* ``TensorDictModule``, and rl_core's ``Actor`` and ``ValueOperator``, whose in_keys go to the
  network positionally and whose outputs are written in place (the defaults): no
  ``in_keys`` dict, ``method``, ``get_kwargs``, ``inplace=False`` or ``select_out_keys``;
* ``TensorDictSequential`` and rl_core's ``QValueActor`` with ``inplace`` ``True`` or ``None``
  and without ``partial_tolerant`` or selected out keys: each module of the sequence gets its
  own plan (fast or not);
* rl_core's ``QValueModule``;
* rl_core's ``ProbabilisticActor`` while the interaction type is ``RANDOM`` (the collectors'
  default): its parameter module gets its own plan, then the head's distribution is built and
  drawn from as ``policy(td)`` does (``probabilistic_plan.py`` states the exact conditions).

Anything else (a subclass, another probabilistic module, an exploration module, a plain
callable) is called as it is. At every call the plan also takes the generic path for the whole policy
when the input is not a plain ``TensorDict``, a ``set_skip_existing`` block is active, a global
module hook is registered or a JIT trace runs, and for one module when that module has a
hook, a compiled call (``module.compile()``), a ``forward`` set on the instance, or an input
that is missing or not a tensor. The module configuration (keys, ``inplace``, the sequence's
modules) is read when the plan is built: build a new plan after changing it (the collectors
build one per batch, ``EnvBase.rollout`` one per rollout).
"""

from __future__ import annotations

from collections.abc import Callable
from textwrap import indent
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential, skip_existing
from tensordict.utils import unravel_key_list
from torch import nn
from torch.nn.modules import module as _torch_module

from rl_core._accel.fast_td import get_leaf, module_io_keys, sequence_children, set_leaf
from rl_core._accel.policy_classes import REGISTERED, PolicyClasses
from rl_core._accel.probabilistic_plan import probabilistic_node

_Node = Callable[[TensorDictBase], TensorDictBase]


def _global_hooks() -> bool:
    # The module hooks that ``nn.Module.__call__`` runs for every module (torch keeps them in
    # module-level dicts of torch.nn.modules.module).
    return bool(
        _torch_module._global_forward_hooks
        or _torch_module._global_forward_pre_hooks
        or _torch_module._global_backward_hooks
        or _torch_module._global_backward_pre_hooks
    )


def _calls_forward(module: nn.Module) -> bool:
    """Whether ``module(x)`` is its class's ``forward(x)``: no hook, no compiled call, no
    ``forward`` on the instance (what ``nn.Module.__call__`` checks, per module)."""
    state = module.__dict__
    return not (
        state.get("_forward_hooks")
        or state.get("_forward_pre_hooks")
        or state.get("_backward_hooks")
        or state.get("_backward_pre_hooks")
        or "forward" in state
        or state.get("_compiled_call_impl") is not None
    )


def _failure(module: TensorDictModule) -> RuntimeError:
    # The context that TensorDictModule.forward chains to an error of its network.
    inner = indent(str(module.module), 4 * " ")
    in_keys = indent(f"in_keys={module.in_keys}", 4 * " ")
    out_keys = indent(f"out_keys={module.out_keys}", 4 * " ")
    return RuntimeError(f"TensorDictModule failed with operation\n{inner}\n{in_keys}\n{out_keys}.")


class _Generic:
    """Calls the module as it is."""

    __slots__ = ("module",)

    def __init__(self, module: Callable[[TensorDictBase], TensorDictBase]) -> None:
        self.module = module

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.module(tensordict)


class _Module:
    """A plain TensorDictModule (or Actor, ValueOperator): read, call the network, write."""

    __slots__ = ("actor", "in_paths", "module", "one_in", "out_keys", "project_into", "single")

    def __init__(
        self, module: TensorDictModule, in_paths: list, out_keys: list, classes: PolicyClasses
    ) -> None:
        self.module, self.in_paths, self.out_keys = module, in_paths, out_keys
        self.one_in = in_paths[0] if len(in_paths) == 1 else None
        self.single = out_keys[0] if len(out_keys) == 1 and out_keys[0] != "_" else None
        self.actor = type(module) is classes.actor
        self.project_into = classes.project_into

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        module = self.module
        if type(tensordict) is not TensorDict or not _calls_forward(module):
            return module(tensordict)
        if self.one_in is not None:
            value = get_leaf(tensordict, self.one_in, None)
            if type(value) is not torch.Tensor:
                return module(tensordict)  # missing or non-tensor: the generic lookup
            tensors: Any = (value,)
        else:
            tensors = []
            for path in self.in_paths:
                value = get_leaf(tensordict, path, None)
                if type(value) is not torch.Tensor:
                    return module(tensordict)
                tensors.append(value)
        network = module._modules.get("module")
        if network is None:
            network = module.module  # a plain callable
        try:
            out = network(*tensors)
            if self.single is not None and type(out) is torch.Tensor:
                set_leaf(tensordict, self.single, out)
            else:
                self._write(tensordict, out)
        except Exception as err:
            raise err from _failure(module)
        if self.actor and module.safe:
            self.project_into(tensordict, module.spec)
        return tensordict

    def _write(self, tensordict: TensorDictBase, out: Any) -> None:
        # Every output form that TensorDictModule.forward accepts, written as it writes them.
        keys = self.out_keys
        if out is None:
            out = ()
        if (
            type(out) is not torch.Tensor
            and type(out) is not tuple
            and isinstance(out, dict | TensorDictBase)
            and all(key in out for key in keys)
        ):
            if isinstance(out, dict):
                out = dict(zip(unravel_key_list(list(out.keys())), out.values(), strict=True))
            out = tuple(out.get(key) for key in keys)
        if not isinstance(out, tuple):
            out = (out,)
        if len(out) > len(keys):
            raise RuntimeError(f"There are more tensors ({len(out)=}) than out_keys ({keys=}).")
        if len(keys) > len(out):
            raise RuntimeError("There are more out_keys than tensors.")
        for key, value in zip(keys, out):
            if key == "_":
                continue
            if type(value) is not torch.Tensor:
                tensordict.set(key, TensorDict.from_any(value))
            else:
                set_leaf(tensordict, key, value)


class _QValue:
    """rl_core's QValueModule: its forward without the dispatch."""

    __slots__ = ("module",)

    def __init__(self, module: Any) -> None:
        self.module = module

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        module = self.module
        if type(tensordict) is not TensorDict or not _calls_forward(module):
            return module(tensordict)
        return module._write(tensordict)


class _Sequence:
    """A plain TensorDictSequential: its modules' plans in order on the same TensorDict."""

    __slots__ = ("module", "names", "nodes", "write_back")

    def __init__(
        self, module: TensorDictSequential, children: list[nn.Module], classes: PolicyClasses
    ) -> None:
        self.module = module
        self.nodes = [_plan(child, classes) for child in children]
        inner = module.module
        self.names = list(inner.keys()) if isinstance(inner, nn.ModuleDict) else None
        self.write_back = module.inplace is True

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        module = self.module
        if type(tensordict) is not TensorDict or not _calls_forward(module):
            return module(tensordict)
        current, index = tensordict, 0
        try:
            for node in self.nodes:
                current = node(current)
                index += 1
        except Exception as err:
            name = index if self.names is None else self.names[index]
            err.add_note(f"Failed while executing module '{name}'.")
            raise
        if not self.write_back:
            return current
        if current is not tensordict:
            tensordict.update(current, keys_to_update=module.out_keys)
        return tensordict


def _plan(module: Any, classes: PolicyClasses) -> _Node:
    kind = type(module)
    if kind is classes.qvalue_module:
        return _QValue(module)
    probabilistic = probabilistic_node(
        module, lambda part: _plan(part, classes), _calls_forward, classes
    )
    if probabilistic is not None:
        return probabilistic
    if kind is TensorDictModule or kind is classes.actor or kind is classes.value_operator:
        layout = module_io_keys(module)
        if layout is not None and layout[1]:
            return _Module(module, *layout, classes)
    elif kind is TensorDictSequential or kind is classes.qvalue_actor:
        children = sequence_children(module)
        if children is not None:
            return _Sequence(module, children, classes)
    return _Generic(module)


class PolicyCallPlan:
    """Calls a policy on a TensorDict: ``plan(td)`` gives what ``policy(td)`` gives, faster.

    Built once per policy (per batch in the collectors, per rollout in ``EnvBase.rollout``):
    the call machinery of plain ``TensorDictModule`` / ``TensorDictSequential`` /
    ``QValueModule`` parts of the policy is skipped, everything else is called as it is (see
    the module docstring for the exact rules). The result is the same TensorDict, with the
    same entries, as the generic call.

    Args:
        policy: any callable taking and returning a TensorDict (a TensorDict module, an actor,
            ``env.rand_action``).

    Raises:
        TypeError: ``policy`` is not callable.
    """

    def __init__(self, policy: Callable[[TensorDictBase], TensorDictBase]) -> None:
        if not callable(policy):
            raise TypeError(
                f"PolicyCallPlan: expected a callable policy (a TensorDict module), got "
                f"{type(policy).__name__}."
            )
        self.policy = policy
        classes = REGISTERED.classes
        self._root = _Generic(policy) if classes is None else _plan(policy, classes)

    @property
    def fast(self) -> bool:
        """Whether any part of the policy takes the fast path (``False``: the plan only calls
        the policy)."""
        return not isinstance(self._root, _Generic)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``policy(tensordict)``."""
        if (
            type(tensordict) is not TensorDict
            or skip_existing()
            or _global_hooks()
            or torch._C._get_tracing_state() is not None
        ):
            return self.policy(tensordict)
        return self._root(tensordict)

    def __repr__(self) -> str:
        return f"PolicyCallPlan({type(self.policy).__name__}, fast={self.fast})"


__all__ = ["PolicyCallPlan"]
