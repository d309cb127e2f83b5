import functools
import sys
from pathlib import Path

import pytest
import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _data import trajectories, value_net
from _reference import apply_per_sequence, seq_vtrace

from rl_core.modules import ProbabilisticActor
from rl_objectives.value import VTrace


def test_vtrace_estimator_matches_reference():
    torch.manual_seed(0)
    net = TensorDictModule(
        torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor()),
        ["observation"],
        ["loc", "scale"],
    )
    actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=torch.distributions.Normal)
    td = trajectories()
    td["action_log_prob"] = torch.randn(2, 9) * 0.3  # behaviour log-probs without feature dim
    VTrace(0.9, value_net(), actor, rho_thresh=1.1, c_thresh=0.8)(td)
    with torch.no_grad():
        log_pi = actor.get_dist(td).log_prob(td["action"])
    (ref_adv, ref_vs) = apply_per_sequence(
        functools.partial(seq_vtrace, 0.9, 1.1, 0.8),
        1,
        log_pi,
        td["action_log_prob"].unsqueeze(-1),
        td["state_value"],
        td["next", "state_value"],
        td["next", "reward"],
        td["next", "done"],
        td["next", "terminated"],
    )
    torch.testing.assert_close(td["value_target"].double(), ref_vs, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(td["advantage"].double(), ref_adv, atol=1e-5, rtol=1e-5)


def test_vtrace_needs_a_probabilistic_actor():
    with pytest.raises(TypeError, match="VTrace: actor_network must be a probabilistic actor"):
        VTrace(0.9, None, torch.nn.Linear(1, 1))


def test_vtrace_names_a_missing_action():
    # V-trace scores the batch's own actions (IMPALA); TorchRL 0.14 samples new ones instead
    net = TensorDictModule(
        torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor()),
        ["observation"],
        ["loc", "scale"],
    )
    actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=torch.distributions.Normal)
    td = trajectories().exclude("action")
    td["action_log_prob"] = torch.zeros(2, 9)
    with pytest.raises(KeyError, match=r"VTrace: expected the batch's action at 'action'"):
        VTrace(0.9, value_net(), actor)(td)
