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


def test_without_terminated_done_stands_for_it():
    # TorchRL's estimators read ("next", "terminated") with done as the default
    from rl_objectives.value import GAE, TD1Estimator, TDLambdaEstimator

    net = value_net()
    td = trajectories()
    as_done = td.clone()
    as_done["next", "terminated"] = td["next", "done"].clone()
    for estimator in (
        TD0Estimator(0.9, net),
        TD1Estimator(0.9, net),
        TDLambdaEstimator(0.9, 0.8, net),
        GAE(0.9, 0.8, net),
    ):
        out = estimator(td.exclude(("next", "terminated")))
        ref = estimator(as_done.clone())
        torch.testing.assert_close(out["value_target"], ref["value_target"])
        torch.testing.assert_close(out["advantage"], ref["advantage"])
    # TD(0) by hand: no bootstrap wherever done
    out = TD0Estimator(0.9, net)(td.exclude(("next", "terminated")))
    with torch.no_grad():
        nv = net.module(td["next", "observation"])
    target = td["next", "reward"] + 0.9 * (~td["next", "done"]).float() * nv
    torch.testing.assert_close(out["value_target"], target)
