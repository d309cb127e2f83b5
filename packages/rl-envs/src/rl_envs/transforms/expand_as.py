"""ExpandAs: one entry expanded on the right to the shape of another."""

from __future__ import annotations

from tensordict import TensorDictBase
from tensordict.utils import expand_as_right

from rl_core import Composite, Transform
from rl_core.keys import NestedKey

_OUTPUTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")


class ExpandAs(Transform):
    """Writes ``in_key`` expanded on the right to the shape of ``ref_key`` at ``out_key``.

    E.g. an env-level ``"done"`` ``(*batch, 1)`` expanded to a per-agent reward's shape
    ``(*batch, n_agents, 1)``. Runs on the step and reset outputs and on plain TensorDicts;
    in an env the output spec of ``out_key`` is ``in_key``'s spec expanded to ``ref_key``'s
    shape (in the done specs when ``out_key`` is ``in_key``, a done flag, and among the
    observations otherwise).

    Args:
        in_key: the entry to expand.
        ref_key: the entry whose shape it takes.
        out_key: where the result goes. Defaults to ``in_key``.

    Raises:
        KeyError: ``in_key`` or ``ref_key`` is missing from a TensorDict (or from the
            env's output specs).
        ValueError: ``ref_key``'s shape does not start with ``in_key``'s shape up to
            trailing ones.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"done": torch.tensor([[True], [False]]),
        ...                  "reward": torch.zeros(2, 3, 1)}, batch_size=[2])
        >>> ExpandAs("done", "reward", "agent_done")(td)["agent_done"].shape
        torch.Size([2, 3, 1])
    """

    def __init__(
        self, in_key: NestedKey, ref_key: NestedKey, out_key: NestedKey | None = None
    ) -> None:
        super().__init__(in_keys=[in_key], out_keys=[in_key if out_key is None else out_key])
        self.in_key, self.out_key = self.in_keys[0], self.out_keys[0]
        self.ref_key = ref_key

    def _expand(self, tensordict: TensorDictBase, *, missing_ok: bool) -> TensorDictBase:
        value = tensordict.get(self.in_key, None)
        reference = tensordict.get(self.ref_key, None)
        for key, found in ((self.in_key, value), (self.ref_key, reference)):
            if found is None:
                if missing_ok:
                    return tensordict
                raise KeyError(f"ExpandAs: no entry {key!r} in the TensorDict.")
        try:
            tensordict.set(self.out_key, expand_as_right(value, reference))
        except RuntimeError as err:
            raise ValueError(
                f"ExpandAs: cannot expand {self.in_key!r} of shape {tuple(value.shape)} to the "
                f"shape {tuple(reference.shape)} of {self.ref_key!r}: the reference must start "
                f"with the entry's shape."
            ) from err
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._expand(tensordict, missing_ok=False)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._expand(next_tensordict, missing_ok=False)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        # A reset may lack the reference (rewards): the entry is expanded to its spec's shape.
        if self.ref_key in tensordict_reset.keys(True, True):
            return self._expand(tensordict_reset, missing_ok=True)
        value = tensordict_reset.get(self.in_key, None)
        parent = self.parent
        if value is None or parent is None:
            return tensordict_reset
        _, ref_spec = self._find(parent.output_spec, self.ref_key)
        tensordict_reset.set(self.out_key, expand_as_right(value, ref_spec.zero()))
        return tensordict_reset

    @staticmethod
    def _find(output_spec: Composite, key: NestedKey):
        for name in _OUTPUTS:
            specs = output_spec[name]
            if key in specs.keys(True, True):
                return name, specs[key]
        raise KeyError(
            f"ExpandAs: no entry {key!r} among the env's observations, rewards or done flags."
        )

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        _, ref_spec = self._find(output_spec, self.ref_key)
        name, spec = self._find(output_spec, self.in_key)
        if name == "full_done_spec" and self.out_key != self.in_key:
            name = "full_observation_spec"
        while spec.ndim < ref_spec.ndim:
            spec = spec.unsqueeze(-1)
        target = output_spec[name]
        target[self.out_key] = spec.expand(*ref_spec.shape)
        output_spec[name] = target
        return output_spec


__all__ = ["ExpandAs"]
