"""FlattenTensorDict: a replay buffer's transform that flattens the batch dims of what it stores."""

from __future__ import annotations

from typing import NoReturn

from tensordict import TensorDictBase

from rl_core import Transform

_ENV_ERROR = (
    "FlattenTensorDict flattens the batch of data written to a replay buffer; it cannot sit in "
    "an env. Use BatchSizeTransform to reshape an env's batch."
)


class FlattenTensorDict(Transform):
    """Flattens the batch dims of a TensorDict into one (TorchRL's ``FlattenTensorDict``).

    Meant for a replay buffer: with ``inverse=True`` (the default) the inverse path (run when
    data is written, e.g. by ``extend``) flattens a ``[N, T]`` batch of transitions to
    ``[N * T]`` and the forward path (run on samples) leaves data as it is; with
    ``inverse=False`` the forward path flattens and the inverse path does nothing. A
    TensorDict without batch dims comes out with batch ``[1]``.

    Args:
        inverse: which path flattens (see above). Defaults to True.

    Raises:
        RuntimeError: when put in an env (at its specs).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict(observation=torch.arange(12.0).reshape(2, 3, 2), batch_size=[2, 3])
        >>> t = FlattenTensorDict()
        >>> t.inv(data).batch_size, t(data).batch_size
        (torch.Size([6]), torch.Size([2, 3]))
        >>> t.inv(data)["observation"][4].tolist()  # row 1, step 1
        [8.0, 9.0]
    """

    def __init__(self, inverse: bool = True) -> None:
        super().__init__()
        self.inverse = bool(inverse)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict if self.inverse else tensordict.reshape(-1)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.reshape(-1) if self.inverse else tensordict

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The inverse path; the input is left as it is (``reshape`` makes a new TensorDict)."""
        return self._inv_call(tensordict)

    @property
    def has_inverse(self) -> bool:
        return self.inverse

    def _refuse(self, *args: object) -> NoReturn:
        raise RuntimeError(_ENV_ERROR)

    transform_output_spec = _refuse  # type: ignore[assignment]
    transform_input_spec = _refuse  # type: ignore[assignment]

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(_ENV_ERROR)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        raise RuntimeError(_ENV_ERROR)

    def extra_repr(self) -> str:
        return f"inverse={self.inverse}"


__all__ = ["FlattenTensorDict"]
