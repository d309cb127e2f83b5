import pytest
import torch
from tensordict import TensorDict

from rl_core.specs import Composite, Unbounded, make_composite_from_td


def test_describes_a_nested_tensordict():
    td = TensorDict(
        {
            "obs": torch.zeros(4, 3),
            "count": torch.zeros(4, dtype=torch.int64),
            "next": TensorDict({"done": torch.zeros(4, 2, 1, dtype=torch.bool)}, [4, 2]),
        },
        batch_size=[4],
    )
    spec = make_composite_from_td(td)
    assert isinstance(spec, Composite)
    assert spec.shape == (4,)
    assert spec["obs"] == Unbounded(shape=(4, 3), device="cpu")
    assert spec["count"].dtype is torch.int64
    assert spec["next"].shape == (4, 2)
    assert spec["next", "done"] == Unbounded(shape=(4, 2, 1), device="cpu", dtype=torch.bool)
    assert spec.is_in(td)
    assert spec.zero().batch_size == (4,)


def test_null_shapes():
    td = TensorDict({"scalar": torch.tensor(1.0), "n": {"s": torch.tensor(2)}}, [])
    assert make_composite_from_td(td)["scalar"].shape == (1,)
    assert make_composite_from_td(td)["n", "s"].shape == (1,)
    kept = make_composite_from_td(td, unsqueeze_null_shapes=False)
    assert kept["scalar"].shape == ()
    assert kept.is_in(td)


def test_device_follows_the_tensordict():
    td = TensorDict({"a": torch.zeros(2)}, [2], device="cpu")
    spec = make_composite_from_td(td)
    assert spec.device == torch.device("cpu")
    assert spec.rand().device == torch.device("cpu")


def test_rejects_non_tensordicts():
    with pytest.raises(TypeError, match=r"make_composite_from_td: expected a TensorDict, got dict"):
        make_composite_from_td({"a": torch.zeros(1)})


def test_non_tensor_leaves():
    from tensordict import NonTensorData, NonTensorStack

    from rl_core.specs import NonTensor

    td = TensorDict(
        {
            "text": NonTensorData("hi", batch_size=[2]),
            "names": NonTensorStack(NonTensorData("a"), NonTensorData("b")),
        },
        [2],
    )
    spec = make_composite_from_td(td)
    assert isinstance(spec["text"], NonTensor)
    assert spec["text"].example_data == "hi"
    assert spec["names"].example_data == "a"
    assert spec["names"].shape == (2,)
    assert spec.is_in(td)
