"""ObservationTransform: the base of transforms that map an env's observations."""

from __future__ import annotations

from collections.abc import Sequence

from rl_core import Composite, Transform
from rl_core.keys import NestedKey

_Keys = NestedKey | Sequence[NestedKey] | None


class ObservationTransform(Transform):
    """A transform of observations (TorchRL's ``ObservationTransform`` base).

    ``in_keys`` default to ``["observation", "pixels"]``; keys the data or the env does not
    have are skipped, so the same transform serves vector and pixel envs. A subclass
    implements ``_apply_transform(value)``; the output spec of each ``in_keys`` entry the
    env has is, by default, the input's spec written at the out key (override
    :meth:`transform_observation_spec` when the transform changes shapes, dtypes or bounds).

    Args:
        in_keys: the observations read. Defaults to ``["observation", "pixels"]``.
        out_keys: where they are written; default ``in_keys``.
        in_keys_inv: the env entries the inverse path writes.
        out_keys_inv: what the policy writes, read by the inverse path.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> class Double(ObservationTransform):
        ...     def _apply_transform(self, value):
        ...         return 2 * value
        >>> Double()(TensorDict(observation=torch.tensor([1.0, 2.0])))["observation"].tolist()
        [2.0, 4.0]
    """

    def __init__(
        self,
        in_keys: _Keys = None,
        out_keys: _Keys = None,
        in_keys_inv: _Keys = None,
        out_keys_inv: _Keys = None,
    ) -> None:
        if in_keys is None:
            in_keys = ["observation", "pixels"]
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        present = set(observation_spec.keys(include_nested=True, leaves_only=True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in present and out_key != in_key:
                observation_spec[out_key] = observation_spec[in_key].clone()
        return observation_spec


__all__ = ["ObservationTransform"]
