import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import mask_batch


def test_keeps_the_masked_steps_in_order():
    mask = torch.tensor([[True, False, True], [False, True, True]])
    batch = TensorDict({"x": torch.arange(6.0).reshape(2, 3), ("collector", "mask"): mask}, [2, 3])
    out = mask_batch(batch)
    assert out.batch_size == torch.Size([4])
    assert out["x"].tolist() == [0.0, 2.0, 4.0, 5.0]  # hand-picked by the mask


def test_no_mask_returns_the_batch_and_bad_masks_fail():
    batch = TensorDict(x=torch.zeros(2, 3), batch_size=[2, 3])
    assert mask_batch(batch) is batch
    batch.set(("collector", "mask"), torch.ones(2, 3))
    with pytest.raises(
        TypeError, match=r"\('collector', 'mask'\) must be a torch.bool tensor, got torch.float32"
    ):
        mask_batch(batch)
    with pytest.raises(TypeError, match="expected a TensorDict, got dict"):
        mask_batch({})
