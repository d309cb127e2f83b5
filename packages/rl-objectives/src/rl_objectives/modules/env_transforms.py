"""get_env_transforms_from_module: the env transforms a (recurrent) policy needs."""

from __future__ import annotations

from torch import nn

from rl_core import Compose, InitTracker, Transform
from rl_core.keys import NestedKey
from rl_core.modules import get_primers_from_module


def get_env_transforms_from_module(module: nn.Module, init_key: NestedKey = "is_init") -> Transform:
    """The transforms to put in a ``TransformedEnv`` for ``module`` (TorchRL's
    ``get_env_transforms_from_module``): ``Compose(InitTracker(init_key), primer)`` when it
    holds recurrent modules (the primer of all their hidden states, from
    :func:`~rl_core.modules.get_primers_from_module`), else the ``InitTracker`` alone.

    Args:
        module: the policy (any module; its submodules with ``make_tensordict_primer`` are
            the recurrent ones).
        init_key: where ``InitTracker`` marks episode starts; the recurrent modules' is-init
            key. Defaults to ``"is_init"``.

    Returns:
        A :class:`~rl_core.Compose` or an :class:`~rl_core.InitTracker`.

    Examples:
        >>> from rl_core.modules import LSTMModule
        >>> t = get_env_transforms_from_module(LSTMModule(3, 8, in_key="obs", out_key="h"))
        >>> [type(part).__name__ for part in t]
        ['InitTracker', 'TensorDictPrimer']
    """
    tracker = InitTracker(init_key=init_key)
    if not any(hasattr(part, "make_tensordict_primer") for part in module.modules()):
        return tracker
    return Compose(tracker, get_primers_from_module(module))


__all__ = ["get_env_transforms_from_module"]
