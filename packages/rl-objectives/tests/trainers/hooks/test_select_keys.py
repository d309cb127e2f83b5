import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import SelectKeys


def test_keeps_only_the_keys():
    batch = TensorDict({"a": torch.zeros(2), ("next", "r"): torch.ones(2), "b": torch.ones(2)}, [2])
    out = SelectKeys(["a", ("next", "r")])(batch)
    assert set(out.keys(include_nested=True, leaves_only=True)) == {"a", ("next", "r")}


def test_errors():
    with pytest.raises(TypeError, match=r"wrap one key in a list: SelectKeys\(\[key\]\)"):
        SelectKeys("a")
    with pytest.raises(ValueError, match="keys is empty"):
        SelectKeys([])
    with pytest.raises(TypeError, match="each key must be a str or a tuple of str, got 3"):
        SelectKeys([3])
    with pytest.raises(KeyError, match=r"the batch lacks \['c'\]"):
        SelectKeys(["c"])(TensorDict(a=torch.zeros(2), batch_size=[2]))
