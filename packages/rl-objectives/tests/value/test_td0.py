import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _data import trajectories, value_net

from rl_objectives.value import TD0Estimator


def test_td0_estimator_matches_equation():
    net = value_net()
    td = trajectories()
    TD0Estimator(0.9, net)(td)
    with torch.no_grad():
        v = net.module(td["observation"])
        nv = net.module(td["next", "observation"])
    nt = (~td["next", "terminated"]).float()
    target = td["next", "reward"] + 0.9 * nt * nv
    torch.testing.assert_close(td["value_target"], target)
    torch.testing.assert_close(td["advantage"], target - v)
