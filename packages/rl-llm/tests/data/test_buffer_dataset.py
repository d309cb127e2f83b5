import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import TorchRLBufferDataset


def _buffer(n=6):
    rl_buffers = pytest.importorskip("rl_buffers", reason="needs the rl-buffers package")
    buffer = rl_buffers.ReplayBuffer(storage=rl_buffers.LazyTensorStorage(n))
    buffer.extend(
        TensorDict(
            input_ids=torch.arange(n * 3).reshape(n, 3),
            meta={"score": torch.arange(n, dtype=torch.float32)},
            batch_size=[n],
        )
    )
    return buffer


def test_yields_each_sampled_item_as_a_flat_dict():
    torch.manual_seed(0)
    dataset = TorchRLBufferDataset(_buffer(), batch_size=4, num_batches=2)
    items = list(dataset)
    assert len(items) == 8
    assert sorted(items[0]) == ["input_ids", "meta.score"]
    for item in items:
        i = int(item["meta.score"])
        # Each item is one row of the buffer, its entries kept together.
        assert item["input_ids"].tolist() == [3 * i, 3 * i + 1, 3 * i + 2]
    only = list(TorchRLBufferDataset(_buffer(), batch_size=2, keys=[("meta", "score")]))
    assert [sorted(item) for item in only] == [["meta.score"], ["meta.score"]]
    stream = iter(TorchRLBufferDataset(_buffer(), batch_size=2, num_batches=None))
    assert len([next(stream) for _ in range(11)]) == 11  # endless


class _TextBuffer:
    """A buffer of prompts (any object with sample(n) is a replay buffer here)."""

    def sample(self, n):
        return TensorDict(
            input_ids=torch.arange(3 * n).reshape(n, 3),
            prompt=[f"p{i}" for i in range(n)],
            batch_size=[n],
        )


def test_non_tensor_entries_are_yielded_as_python_values():
    items = list(TorchRLBufferDataset(_TextBuffer(), batch_size=2))
    assert items[1]["prompt"] == "p1"
    assert items[1]["input_ids"].tolist() == [3, 4, 5]


def test_as_hf_dataset_yields_the_same_items():
    pytest.importorskip("datasets", reason='needs pip install "rl-llm[datasets]"')
    hf = TorchRLBufferDataset(_TextBuffer(), batch_size=3).as_hf_dataset()
    rows = list(hf)
    assert len(rows) == 3
    assert [row["prompt"] for row in rows] == ["p0", "p1", "p2"]
    assert [list(row["input_ids"]) for row in rows] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


def test_bad_arguments_are_named():
    with pytest.raises(
        TypeError, match=r"expected replay_buffer to be a replay buffer .* got list"
    ):
        TorchRLBufferDataset([1, 2], batch_size=2)
    with pytest.raises(ValueError, match="expected batch_size to be a positive integer, got 0"):
        TorchRLBufferDataset(_buffer(), batch_size=0)
    with pytest.raises(ValueError, match="expected num_batches to be a positive integer or None"):
        TorchRLBufferDataset(_buffer(), batch_size=2, num_batches=0)
    with pytest.raises(KeyError, match=r"the key 'labels' is not in the sampled items; they hold"):
        list(TorchRLBufferDataset(_buffer(), batch_size=2, keys=["labels"]))
