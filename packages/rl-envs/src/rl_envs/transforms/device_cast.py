"""DeviceCastTransform: an env's outputs shown on another device, actions moved back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Composite, TensorSpec, Transform
from rl_core.keys import NestedKey
from rl_envs.transforms._common import find_group, leaf_keys


def _as_device(device: Any, arg: str) -> torch.device:
    try:
        return torch.device(device)
    except (TypeError, RuntimeError) as err:
        raise TypeError(
            f"DeviceCastTransform: expected {arg} as a torch.device, a string such as 'cuda:0' "
            f"or an int, got {device!r}."
        ) from err


def _place(root: Composite, group: str, key: NestedKey, spec: TensorSpec) -> None:
    """Writes ``spec`` at ``root[group][key]`` after clearing the device of every Composite
    on the way (a Composite with a device moves what is set in it back there): the specs
    then hold entries of more than one device, as the data does."""
    root.device = None
    node = root[group]
    node.device = None
    for name in (key,) if isinstance(key, str) else tuple(key)[:-1]:
        child = node.get(name, None)
        if not isinstance(child, Composite):
            break
        child.device = None
        node = child
    root[group][key] = spec


class DeviceCastTransform(Transform):
    """Moves the env's outputs to ``device``, and the actions back to the env's device.

    Without keys (the default) the whole TensorDict moves: every reset and step output goes
    to ``device``, the specs (observations, rewards, done flags, actions, states) are shown
    there, so the transformed env's ``device`` is ``device``; the inverse path moves the whole
    input of a step (actions, states) to ``orig_device`` before the env below reads it. With
    ``in_keys`` and/or ``in_keys_inv``, only those entries move (their specs too, and the
    TensorDicts and Composites holding them lose their single device). On a plain TensorDict
    (a replay-buffer sample) the forward path casts it (or its ``in_keys``) to ``device``.

    Args:
        device: where the outputs go.
        orig_device: the device of the env below, where the inverse path moves actions.
            Defaults to that env's ``device`` (the CPU when it has none).
        in_keys: outputs to move; ``None`` with no ``in_keys_inv`` moves everything.
        out_keys: where the moved outputs go; default ``in_keys``.
        in_keys_inv: inputs the env below reads, moved to ``orig_device``.
        out_keys_inv: the keys the policy writes (on ``device``); default ``in_keys_inv``.

    Raises:
        TypeError: ``device`` or ``orig_device`` is not a device.
        KeyError: (on the specs) an ``in_keys`` entry is not an observation or reward of the
            env below, or an ``in_keys_inv`` entry is not one of its inputs.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DeviceCastTransform("meta")
        >>> t(TensorDict(observation=torch.zeros(3), batch_size=[])).device
        device(type='meta')
        >>> t = DeviceCastTransform("meta", in_keys=["pixels"])
        >>> td = t(TensorDict(pixels=torch.zeros(2), reward=torch.ones(1)))
        >>> td["pixels"].device.type, td["reward"].device.type
        ('meta', 'cpu')
    """

    def __init__(
        self,
        device: torch.device | str | int,
        orig_device: torch.device | str | int | None = None,
        *,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self.device = _as_device(device, "device")
        self.orig_device = None if orig_device is None else _as_device(orig_device, "orig_device")
        self.__dict__["_whole"] = in_keys is None and in_keys_inv is None

    def _env_device(self) -> torch.device:
        """Where the env below reads its inputs: ``orig_device``, else its device, else CPU."""
        if self.orig_device is not None:
            return self.orig_device
        found = self.__dict__.get("_found_device")
        if found is None:
            parent = self.parent
            found = parent.device if parent is not None else None
            if found is None:
                found = torch.device("cpu")
            self.__dict__["_found_device"] = found
        return found

    # ------------------------------------------------------------------ data
    def _move(
        self,
        tensordict: TensorDictBase,
        pairs: list[tuple[NestedKey, NestedKey]],
        device: torch.device,
    ) -> TensorDictBase:
        if tensordict.device is not None and tensordict.device != device:
            tensordict.clear_device_()  # else ``set`` would move the entries back
        for source, target in pairs:
            value = tensordict.get(source, None)
            if value is not None:
                tensordict.set(target, value.to(device, non_blocking=True))
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._whole:
            return tensordict.to(self.device, non_blocking=True)
        return self._move(tensordict, list(zip(self.in_keys, self.out_keys)), self.device)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        device = self._env_device()
        if self._whole:
            return tensordict.to(device, non_blocking=True)
        return self._move(tensordict, list(zip(self.out_keys_inv, self.in_keys_inv)), device)

    @property
    def has_inverse(self) -> bool:
        return self._whole or bool(self.in_keys_inv)

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self._whole:
            return output_spec.to(self.device)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            group = find_group(output_spec, in_key, "DeviceCastTransform")
            _place(output_spec, group, out_key, output_spec[group][in_key].to(self.device))
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if self._whole:
            return input_spec.to(self.device)
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            for group in ("full_action_spec", "full_state_spec"):
                if in_key in leaf_keys(input_spec[group]):
                    spec = input_spec[group][in_key].to(self.device)
                    if out_key != in_key:
                        del input_spec[group][in_key]
                    _place(input_spec, group, out_key, spec)
                    break
            else:
                raise KeyError(
                    f"DeviceCastTransform: in_keys_inv entry {in_key!r} is not an input of the "
                    f"env below it (it has {leaf_keys(input_spec['full_action_spec'])} and "
                    f"{leaf_keys(input_spec['full_state_spec'])})."
                )
        return input_spec

    def extra_repr(self) -> str:
        inner = super().extra_repr()
        head = f"device={self.device}, orig_device={self.orig_device}"
        return f"{head}, {inner}" if inner else head


__all__ = ["DeviceCastTransform"]
