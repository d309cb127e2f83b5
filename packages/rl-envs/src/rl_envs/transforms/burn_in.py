"""BurnInTransform: recurrent states refreshed on the first steps of replayed sequences."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase

from rl_core.keys import NEXT, NestedKey, key_path
from rl_core.modules import GRUModule, LSTMModule
from rl_core.transforms import Transform


def _unpath(path: tuple[str, ...]) -> NestedKey:
    return path[0] if len(path) == 1 else path


class BurnInTransform(Transform):
    """Burns in recurrent states on the first ``burn_in`` steps of replayed sequences.

    A replay-buffer transform (R2D2's burn-in): states stored at collection time are stale
    once the network has been trained. On a sample of shape ``[*B, T]`` (time last) it runs
    ``modules`` without gradients on the first ``burn_in`` steps, starting from the states
    stored at step 0 (zeros where none are stored, and restarting wherever ``is_init`` is
    True), and returns the remaining ``T - burn_in`` steps with each ``out_keys`` entry at
    their first step replaced by the burnt-in state (the modules' ``("next", key)`` at the
    last burn-in step). The other steps keep their stored values; a recurrent module in
    sequence mode reads the state at the first step only.

    Args:
        modules: the modules to burn in, run in order on the burn-in steps; each must handle
            ``[*B, T]`` sequences (recurrent modules in sequence mode:
            ``lstm.set_recurrent_mode(True)``).
        burn_in: the number of steps burnt in and removed, at least 1.
        out_keys: the state keys to refresh. Defaults to every ``("next", key)`` output of
            the modules, as ``key``.

    Raises:
        ValueError: ``burn_in`` is not a positive int, a module holds a recurrent module in
            step mode, no state key is given or found, or (when called) the sample has at
            most ``burn_in`` steps.
        TypeError: a module is not a TensorDict module.
        RuntimeError: used as an env transform (it is meant for replay buffers).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import GRUModule
        >>> gru = GRUModule(3, 8, in_key="obs", out_key="features", recurrent_mode=True)
        >>> burn = BurnInTransform([gru], burn_in=4)
        >>> out = burn(TensorDict(obs=torch.randn(2, 10, 3), batch_size=[2, 10]))
        >>> out.batch_size, out["recurrent_state"].shape
        (torch.Size([2, 6]), torch.Size([2, 6, 1, 8]))
    """

    def __init__(
        self,
        modules: Sequence[TensorDictModuleBase],
        burn_in: int,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        if isinstance(modules, TensorDictModuleBase):
            modules = [modules]
        modules = list(modules)
        for i, module in enumerate(modules):
            if not isinstance(module, TensorDictModuleBase):
                raise TypeError(
                    f"BurnInTransform: expected TensorDict modules, got {type(module).__name__} "
                    f"at position {i}. Wrap it in a TensorDictModule."
                )
            for sub in module.modules():
                if isinstance(sub, (LSTMModule, GRUModule)) and not sub.recurrent_mode:
                    raise ValueError(
                        f"BurnInTransform: module {i} holds a {type(sub).__name__} in step "
                        f"mode; burn-in runs on [*B, T] sequences. Pass the module built "
                        f"with set_recurrent_mode(True)."
                    )
        if isinstance(burn_in, bool) or not isinstance(burn_in, int) or burn_in < 1:
            raise ValueError(f"BurnInTransform: expected burn_in an int >= 1, got {burn_in!r}.")
        if out_keys is None:
            out_keys = [
                _unpath(key_path(key)[1:])
                for module in modules
                for key in module.out_keys
                if len(key_path(key)) > 1 and key_path(key)[0] == NEXT
            ]
        out_keys = list(out_keys)
        if not out_keys:
            raise ValueError(
                "BurnInTransform: expected state keys to refresh, got none: the modules write "
                "no ('next', key) entry. Pass out_keys=."
            )
        super().__init__(in_keys=[], out_keys=[])
        self.out_keys = out_keys
        self.burn_in = burn_in
        self.burn_in_modules = torch.nn.ModuleList(modules)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Burns in the first ``burn_in`` steps; returns the ``[*B, T - burn_in]`` rest.

        The input is not modified.
        """
        return self._call(tensordict)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.batch_dims == 0 or tensordict.shape[-1] <= self.burn_in:
            raise ValueError(
                f"BurnInTransform: expected a [*B, T] TensorDict (time last) with more than "
                f"burn_in={self.burn_in} steps, got batch_size {list(tensordict.batch_size)}."
            )
        time_dim = tensordict.batch_dims - 1
        burn = tensordict[..., : self.burn_in].copy()
        out = tensordict[..., self.burn_in :].copy()
        with torch.no_grad():
            for module in self.burn_in_modules:
                burn = module(burn)
        for key in self.out_keys:
            state = burn.get((NEXT, *key_path(key))).select(time_dim, -1)
            stored = out.get(key, None)
            if stored is None:
                new = state.new_zeros((*out.batch_size, *state.shape[time_dim:]))
            else:
                new = stored.clone()
            new.select(time_dim, 0).copy_(state)
            out.set(key, new)
        return out

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "BurnInTransform: it transforms replayed sequences, not env steps. Append it to a "
            "replay buffer (buffer.append_transform(...)) instead of an env."
        )

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._step(tensordict_reset, tensordict_reset)

    def extra_repr(self) -> str:
        return f"burn_in={self.burn_in}, out_keys={self.out_keys}"


__all__ = ["BurnInTransform"]
