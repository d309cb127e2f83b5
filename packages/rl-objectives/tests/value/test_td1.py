import functools
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _data import trajectories, value_net
from _reference import apply_per_sequence, seq_td_lambda

from rl_objectives.value import TD1Estimator


@pytest.mark.parametrize("vectorized", [False, True])
def test_td1_estimator_matches_reference(vectorized):
    net = value_net()
    td = trajectories()
    TD1Estimator(0.9, net, vectorized=vectorized)(td)
    (ref,) = apply_per_sequence(
        functools.partial(seq_td_lambda, 0.9, 1.0),
        1,
        td["next", "state_value"],
        td["next", "reward"],
        td["next", "done"],
        td["next", "terminated"],
    )
    torch.testing.assert_close(td["value_target"].double(), ref, atol=1e-5, rtol=1e-5)
