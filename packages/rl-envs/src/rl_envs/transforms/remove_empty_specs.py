"""RemoveEmptySpecs: drops the empty Composite specs of an env and the empty entries they hold."""

from __future__ import annotations

from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_core.keys import NestedKey

_OUTPUT_GROUPS = ("full_observation_spec", "full_reward_spec", "full_done_spec")
_INPUT_GROUPS = ("full_action_spec", "full_state_spec")


def empty_composites(spec: Composite, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The outermost Composite entries of ``spec`` holding no leaf, as paths."""
    found = []
    for name in list(spec.keys()):
        child = spec[name]
        if isinstance(child, Composite):
            path = (*prefix, name)
            if not child.keys(include_nested=True, leaves_only=True):
                found.append(path)
            else:
                found.extend(empty_composites(child, path))
    return found


def _drop_empty(tensordict: TensorDictBase) -> TensorDictBase:
    """Removes the sub-TensorDicts of ``tensordict`` that hold no tensor, innermost first."""
    for key in list(tensordict.keys()):
        value = tensordict.get(key)
        if isinstance(value, TensorDictBase):
            _drop_empty(value)
            if value.is_empty():
                del tensordict[key]
    return tensordict


class RemoveEmptySpecs(Transform):
    """Removes the empty Composite specs of an env (a group with no entry left, say) and the
    empty sub-TensorDicts of its step and reset outputs.

    The inverse path gives the env below back the empty inputs (actions or states) its
    specs declare, so an env that expects them is stepped as before.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.zeros(2), "info": TensorDict()})
        >>> list(RemoveEmptySpecs()(td).keys())
        ['obs']
    """

    def __init__(self) -> None:
        super().__init__()
        self.__dict__["_removed_inputs"] = None

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return _drop_empty(tensordict)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for group in _OUTPUT_GROUPS:
            leaves = output_spec[group]
            for path in empty_composites(leaves):
                del leaves[path]
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        removed: list[tuple[NestedKey, Composite]] = []
        for group in _INPUT_GROUPS:
            leaves = input_spec[group]
            for path in empty_composites(leaves):
                removed.append((path, leaves[path].clone()))
                del leaves[path]
        self.__dict__["_removed_inputs"] = removed
        return input_spec

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        removed = self._removed_inputs
        if removed is None:
            parent = self.parent
            if parent is None:
                return tensordict
            self.transform_input_spec(parent.input_spec.clone())
            removed = self._removed_inputs
        for path, spec in removed:
            if tensordict.get(path, None) is None:
                tensordict.set(path, spec.zero())
        return tensordict


__all__ = ["RemoveEmptySpecs"]
