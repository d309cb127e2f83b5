"""value_chunk_size= / num_chunks= / value_chunk_dim= / deactivate_vmap= of the estimators."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _data import trajectories, value_net

from rl_objectives.value import GAE, TD0Estimator, TD1Estimator, TDLambdaEstimator

ESTIMATORS = [
    (TD0Estimator, {"gamma": 0.9}),
    (TD1Estimator, {"gamma": 0.9}),
    (TDLambdaEstimator, {"gamma": 0.9, "lmbda": 0.95}),
    (GAE, {"gamma": 0.9, "lmbda": 0.95}),
]


class _Counting(torch.nn.Module):
    """The value network, recording the batch shape of each call."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.in_keys, self.out_keys = net.in_keys, net.out_keys
        self.calls = []

    def forward(self, td):
        self.calls.append(tuple(td.batch_size))
        return self.net(td)


@pytest.mark.parametrize(("cls", "kwargs"), ESTIMATORS)
@pytest.mark.parametrize(
    ("chunks", "calls"),
    [
        # batch [2, 9]: 4 entries per piece along dim 1 -> 4, 4, 1; 3 pieces of dim 1 ->
        # 3, 3, 3; along dim 0, 3 pieces of 2 rows -> 2 (fewer pieces than asked)
        ({"value_chunk_size": 4, "value_chunk_dim": 1}, [(2, 4), (2, 4), (2, 1)]),
        ({"num_chunks": 3, "value_chunk_dim": -1}, [(2, 3), (2, 3), (2, 3)]),
        ({"num_chunk": 3}, [(1, 9), (1, 9)]),
    ],
)
@pytest.mark.parametrize("shifted", [False, True])
def test_chunked_calls_give_the_unchunked_estimates(cls, kwargs, chunks, calls, shifted):
    plain = trajectories()
    cls(**kwargs, value_network=value_net(), shifted=shifted, deactivate_vmap=True)(plain)
    counting = _Counting(value_net())
    chunked = trajectories()
    cls(**kwargs, value_network=counting, shifted=shifted, **chunks)(chunked)
    torch.testing.assert_close(chunked["advantage"], plain["advantage"])
    torch.testing.assert_close(chunked["value_target"], plain["value_target"])
    torch.testing.assert_close(chunked["state_value"], plain["state_value"])
    assert counting.calls == calls * 2  # the states' pieces, then the next states'


def test_bad_chunk_options():
    net = value_net()
    with pytest.raises(ValueError, match="value_chunk_size and num_chunks cannot both be set"):
        GAE(0.9, 0.95, net, value_chunk_size=3, num_chunks=2)
    with pytest.raises(ValueError, match=r"num_chunks and num_chunk .* got 2 and 3"):
        GAE(0.9, 0.95, net, num_chunks=2, num_chunk=3)
    with pytest.raises(ValueError, match="expected value_chunk_size >= 1, got 0"):
        GAE(0.9, 0.95, net, value_chunk_size=0)
    with pytest.raises(TypeError, match=r"expected num_chunks to be an int or None, got 2\.0"):
        GAE(0.9, 0.95, net, num_chunks=2.0)
    with pytest.raises(ValueError, match=r"value_chunk_dim=2 is not a batch dim .* \[2, 9\]"):
        GAE(0.9, 0.95, net, num_chunks=3, value_chunk_dim=2)(trajectories())
