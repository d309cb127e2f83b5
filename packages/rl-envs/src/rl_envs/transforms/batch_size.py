"""BatchSizeTransform: the batch size of an env set (stateless envs) or reshaped."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Composite, Transform


class BatchSizeTransform(Transform):
    """Changes the batch size an env shows.

    Two uses. With ``batch_size``: an env whose batch size is ``[]`` but whose step works on
    any batch (a stateless env such as ``PendulumEnv()``) gets a batch size, so that
    collectors and rollouts run it batched; its reset output is expanded to ``batch_size``
    (or built by ``reset_func``). With ``reshape_fn``: the env's batch is reshaped
    (``reshape``, ``flatten``, ``unflatten``, ``squeeze``, ``unsqueeze``): ``reshape_fn`` is
    applied to the outputs and to the specs, and actions are reshaped back to the env's
    batch size. It stands in for the reset of the env below (see ``intercept_reset``), so
    put it first in the transform list.

    Args:
        batch_size: the new batch size; the env's must expand to it. Exclusive with
            ``reshape_fn``.
        reshape_fn: ``(TensorDict or spec) -> same``, a reshape of the batch dims.
        reset_func: ``(tensordict, tensordict_reset) -> TensorDict``: the reset output (with
            ``env_kwarg``, called with ``env=`` the env below too).
        env_kwarg: pass ``env=`` to ``reset_func``. Defaults to ``False``.

    Raises:
        ValueError: both or neither of ``batch_size`` and ``reshape_fn``; (on the specs) an
            env whose batch size does not expand to ``batch_size``.

    Examples:
        >>> from rl_core import TransformedEnv
        >>> from rl_envs import PendulumEnv
        >>> env = TransformedEnv(PendulumEnv(), BatchSizeTransform(batch_size=[4]))
        >>> env.batch_size, env.rollout(3).batch_size
        (torch.Size([4]), torch.Size([4, 3]))
    """

    def __init__(
        self,
        *,
        batch_size: torch.Size | list[int] | tuple[int, ...] | None = None,
        reshape_fn: Callable | None = None,
        reset_func: Callable[..., TensorDictBase] | None = None,
        env_kwarg: bool = False,
    ) -> None:
        super().__init__()
        if (batch_size is None) == (reshape_fn is None):
            raise ValueError(
                "BatchSizeTransform: expected exactly one of batch_size and reshape_fn, got "
                f"batch_size={batch_size!r}, reshape_fn={reshape_fn!r}."
            )
        self.batch_size = None if batch_size is None else torch.Size(batch_size)
        self.reshape_fn = reshape_fn
        self.reset_func = reset_func
        self.env_kwarg = env_kwarg

    # ------------------------------------------------------------------ batch size and specs
    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        if self.batch_size is not None:
            return self.batch_size
        return self.reshape_fn(TensorDict(batch_size=batch_size, device="meta")).batch_size

    def _map_spec(self, spec: Composite) -> Composite:
        if self.reshape_fn is not None:
            return self.reshape_fn(spec)
        old = spec.shape
        try:
            torch.empty(old, device="meta").expand(self.batch_size)
        except RuntimeError:
            raise ValueError(
                f"BatchSizeTransform: the env's batch size {tuple(old)} does not expand to "
                f"{tuple(self.batch_size)}."
            ) from None
        return spec.expand(self.batch_size)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._map_spec(output_spec)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self._map_spec(input_spec)

    # ------------------------------------------------------------------ data
    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.reshape_fn is not None:
            return self.reshape_fn(tensordict)
        if tensordict.batch_size != self.batch_size:
            # A stateless env computes on the whole batch but reports its own batch size.
            tensordict.batch_size = self.batch_size
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if self.reset_func is not None:
            kwargs = {"env": self.parent} if self.env_kwarg else {}
            tensordict_reset = self.reset_func(tensordict, tensordict_reset, **kwargs)
        elif self.batch_size is not None and tensordict_reset.batch_size != self.batch_size:
            tensordict_reset = tensordict_reset.expand(self.batch_size).clone()
        return self._call(tensordict_reset)

    def intercept_reset(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        """Resets the env below with its own batch size: only its ``"_reset"`` masks are
        passed on (reshaped back with ``reshape_fn``; dropped with ``batch_size``, where the
        env below is reset whole). The rows not reset keep their entries: the reset of the
        env holding this transform merges them back."""
        if tensordict is None:
            return None
        parent = self.parent
        if parent is None:
            return None
        masks = tensordict.select(*parent.reset_keys, strict=False)
        if self.batch_size is not None or masks.is_empty():
            return parent.reset()
        return parent.reset(masks.reshape(parent.batch_size))

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.reshape_fn is None:
            return tensordict
        parent = self.parent
        if parent is None:
            return tensordict
        return tensordict.reshape(parent.batch_size)

    def extra_repr(self) -> str:
        if self.batch_size is not None:
            return f"batch_size={tuple(self.batch_size)}"
        return f"reshape_fn={self.reshape_fn!r}"


__all__ = ["BatchSizeTransform"]
