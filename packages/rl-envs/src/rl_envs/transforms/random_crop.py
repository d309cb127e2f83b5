"""RandomCropTensorDict: a random window of fixed length from each trajectory of a batch."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_core.keys import NestedKey


class RandomCropTensorDict(Transform):
    """Cuts a random sub-trajectory of ``sub_seq_len`` steps out of each trajectory.

    For replay-buffer samples and modules (not an env transform): along ``sample_dim``
    (time), each trajectory of the batch gets its own start, drawn uniformly among the
    starts whose window fits in the trajectory (with ``mask_key``: in its valid part, the
    leading True steps of the mask). Randomness comes from torch's global generator.

    Args:
        sub_seq_len: the window length.
        sample_dim: the time dim; negative (counted from the last batch dim) is preferred.
            Defaults to -1.
        mask_key: a boolean entry shaped like the batch, True on the valid (leading) steps of
            each trajectory; the window is drawn inside them. Defaults to ``None`` (every
            step is valid).

    Raises:
        ValueError: ``sub_seq_len`` < 1; a trajectory (or its valid part) shorter than the
            window.
        RuntimeError: (on the specs) the transform was put in an env.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(obs=torch.arange(20).reshape(2, 10), batch_size=[2, 10])
        >>> out = RandomCropTensorDict(4)(td)
        >>> out.batch_size, bool((out["obs"].diff(dim=-1) == 1).all())
        (torch.Size([2, 4]), True)
    """

    def __init__(
        self, sub_seq_len: int, sample_dim: int = -1, mask_key: NestedKey | None = None
    ) -> None:
        if isinstance(sub_seq_len, bool) or not isinstance(sub_seq_len, int) or sub_seq_len < 1:
            raise ValueError(
                f"RandomCropTensorDict: expected sub_seq_len as an int >= 1, got {sub_seq_len!r}."
            )
        super().__init__()
        self.sub_seq_len = sub_seq_len
        self.sample_dim = sample_dim
        self.mask_key = mask_key

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        ndim = tensordict.batch_dims
        if not -ndim <= self.sample_dim < ndim:
            raise ValueError(
                f"RandomCropTensorDict: sample_dim={self.sample_dim} is out of range for batch "
                f"size {tuple(tensordict.batch_size)}."
            )
        dim = self.sample_dim % ndim
        td = tensordict.transpose(dim, ndim - 1) if dim != ndim - 1 else tensordict
        shape = td.batch_size
        if self.mask_key is not None:
            mask = tensordict.get(self.mask_key)
            if dim != ndim - 1:
                mask = mask.transpose(dim, ndim - 1)
            lengths = mask.reshape(shape).sum(-1)
        else:
            lengths = torch.full(shape[:-1], shape[-1], device=td.device)
        if bool((lengths < self.sub_seq_len).any()):
            raise ValueError(
                f"RandomCropTensorDict: a trajectory has {int(lengths.min())} valid steps, "
                f"fewer than sub_seq_len={self.sub_seq_len}."
            )
        # Uniform start in [0, length - sub_seq_len] for each trajectory.
        starts = (
            (torch.rand(lengths.shape, device=lengths.device) * (lengths - self.sub_seq_len + 1))
            .floor()
            .long()
        )
        index = starts.unsqueeze(-1) + torch.arange(self.sub_seq_len, device=starts.device)
        out = td.gather(index=index.expand(*shape[:-1], self.sub_seq_len), dim=ndim - 1)
        return out.transpose(dim, ndim - 1) if dim != ndim - 1 else out

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.forward(tensordict)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        raise RuntimeError(
            "RandomCropTensorDict: crops sampled trajectories (a replay buffer's transform); "
            "it cannot be put in an env."
        )


__all__ = ["RandomCropTensorDict"]
