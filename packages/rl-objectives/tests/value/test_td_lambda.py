import functools
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _data import trajectories, value_net
from _reference import apply_per_sequence, seq_td_lambda

from rl_objectives.value import TDLambdaEstimator


@pytest.mark.parametrize("vectorized", [False, True])
def test_td_lambda_estimator_matches_reference(vectorized):
    net = value_net()
    td = trajectories(batch=(3, 2, 7))
    TDLambdaEstimator(0.9, 0.7, net, vectorized=vectorized)(td)
    (ref,) = apply_per_sequence(
        functools.partial(seq_td_lambda, 0.9, 0.7),
        2,
        td["next", "state_value"],
        td["next", "reward"],
        td["next", "done"],
        td["next", "terminated"],
    )
    torch.testing.assert_close(td["value_target"].double(), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(td["advantage"], td["value_target"] - td["state_value"])


def test_td_lambda_rejects_lmbda():
    with pytest.raises(
        ValueError, match=r"TDLambdaEstimator: expected lmbda in \[0, 1\], got -1.0"
    ):
        TDLambdaEstimator(0.9, -1.0, None)
