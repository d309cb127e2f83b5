"""Keeping a network out of the graph for a while: :class:`hold_out_net` and
:class:`hold_out_params`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from tensordict import TensorDictBase
from torch import Tensor, nn

__all__ = ["hold_out_net", "hold_out_params"]

F = TypeVar("F", bound=Callable[..., Any])


class _ContextDecorator:
    """A context manager that also decorates functions (run inside the context)."""

    def __enter__(self) -> Any:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapped  # type: ignore[return-value]


class hold_out_net(_ContextDecorator):
    """Freezes a network's parameters inside the context: gradients flow through its
    computations to its inputs, but none accumulate on its parameters (DDPG's actor update
    through the critic, say). Each parameter's ``requires_grad`` is restored on exit.

    Args:
        network: the module to hold out.

    Raises:
        TypeError: ``network`` is not an ``nn.Module``.

    Examples:
        >>> import torch
        >>> from rl_objectives import hold_out_net
        >>> critic = torch.nn.Linear(2, 1)
        >>> x = torch.ones(1, 2, requires_grad=True)
        >>> with hold_out_net(critic):
        ...     critic(x).sum().backward()
        >>> critic.weight.grad is None, x.grad is not None, critic.weight.requires_grad
        (True, True, True)
    """

    def __init__(self, network: nn.Module) -> None:
        if not isinstance(network, nn.Module):
            raise TypeError(
                f"hold_out_net: expected network to be an nn.Module, got {type(network).__name__}."
            )
        self.network = network
        self._saved: list[tuple[nn.Parameter, bool]] = []

    def __enter__(self) -> None:
        self._saved = [(p, p.requires_grad) for p in self.network.parameters()]
        for p, _ in self._saved:
            p.requires_grad_(False)

    def __exit__(self, *exc: object) -> None:
        for p, flag in self._saved:
            p.requires_grad_(flag)
        self._saved = []


class hold_out_params(_ContextDecorator):
    """Gives detached copies of parameters (sharing their storage) for the context's duration:
    ``with hold_out_params(params) as frozen: ...``.

    Args:
        params: a TensorDict of parameters (detached as a whole) or an iterable of tensors.

    Raises:
        TypeError: ``params`` is neither a TensorDict nor an iterable of tensors.

    Examples:
        >>> import torch
        >>> from rl_objectives import hold_out_params
        >>> net = torch.nn.Linear(2, 1)
        >>> with hold_out_params(net.parameters()) as frozen:
        ...     [p.requires_grad for p in frozen]
        [False, False]
    """

    def __init__(self, params: TensorDictBase | Iterable[Tensor]) -> None:
        if isinstance(params, TensorDictBase):
            self.params: TensorDictBase | tuple[Tensor, ...] = params.detach()
            return
        try:
            items = tuple(params)
        except TypeError:
            raise TypeError(
                f"hold_out_params: expected a TensorDict or an iterable of tensors, got "
                f"{type(params).__name__}."
            ) from None
        bad = [type(p).__name__ for p in items if not isinstance(p, Tensor)]
        if bad:
            raise TypeError(f"hold_out_params: expected tensors, got {sorted(set(bad))} in params.")
        self.params = tuple(p.detach() for p in items)

    def __enter__(self) -> TensorDictBase | tuple[Tensor, ...]:
        return self.params

    def __exit__(self, *exc: object) -> None:
        return None
