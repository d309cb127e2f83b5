import re
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _nets import assert_same_grads, grads

from rl_core.modules import QValueActor
from rl_objectives import QMixerLoss
from rl_objectives.mixers import QMixer, VDNMixer
from rl_objectives.modules import MultiAgentMLP

B, N, OBS, ACT, STATE = 6, 3, 4, 2, 5


def batch():
    g = torch.Generator().manual_seed(0)
    done = torch.rand(B, 1, generator=g) < 0.3
    return TensorDict(
        agents=TensorDict(
            observation=torch.randn(B, N, OBS, generator=g),
            action=torch.randint(ACT, (B, N), generator=g),
            batch_size=[B, N],
        ),
        state=torch.randn(B, STATE, generator=g),
        next=TensorDict(
            agents=TensorDict(observation=torch.randn(B, N, OBS, generator=g), batch_size=[B, N]),
            state=torch.randn(B, STATE, generator=g),
            reward=torch.randn(B, 1, generator=g),
            done=done,
            terminated=done & (torch.rand(B, 1, generator=g) < 0.5),
            batch_size=[B],
        ),
        batch_size=[B],
    )


@pytest.mark.parametrize("kind", ["qmix", "vdn"])
def test_qmixer_loss_matches_reference(kind):
    torch.manual_seed(0)
    mlp = MultiAgentMLP(
        OBS, ACT, n_agents=N, centralized=False, share_params=False, depth=1, num_cells=8
    )
    local = QValueActor(
        mlp,
        in_keys=[("agents", "observation")],
        action_space="categorical",
        action_value_key=("agents", "action_value"),
    )
    if kind == "qmix":
        mixer_net = QMixer((STATE,), 8, N)
        mixer = TensorDictModule(
            mixer_net, [("agents", "chosen_action_value"), "state"], ["chosen_action_value"]
        )
    else:
        mixer_net = VDNMixer(N)
        mixer = TensorDictModule(
            mixer_net, [("agents", "chosen_action_value")], ["chosen_action_value"]
        )
    loss = QMixerLoss(local, mixer, gamma=0.9)
    with torch.no_grad():
        loss.target_local_value_network_params.apply_(lambda x: x.mul_(0.5))
        loss.target_mixer_network_params.apply_(lambda x: x.mul_(0.5))
    td = batch()
    out = loss(td)

    def mix(net, q, state):
        return net(q, state) if kind == "qmix" else net(q)

    q_all = mlp(td["agents", "observation"])
    chosen = q_all.gather(-1, td["agents", "action"].unsqueeze(-1))
    pred = mix(mixer_net, chosen, td["state"])
    with torch.no_grad():
        with loss.target_local_value_network_params["module", "0", "module"].to_module(mlp):
            nq = mlp(td["next", "agents", "observation"]).max(-1, keepdim=True).values
        if kind == "qmix":
            with loss.target_mixer_network_params["module"].to_module(mixer_net):
                nv = mix(mixer_net, nq, td["next", "state"])
        else:
            nv = nq.sum(-2)
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nv
    ref = (pred - y).pow(2).mean()
    torch.testing.assert_close(out["loss"], ref)
    params = list(mlp.parameters()) + list(mixer_net.parameters())
    assert_same_grads(grads(out["loss"], params), grads(ref, params))
    assert td["td_error"].shape == (B,)


@pytest.mark.parametrize(
    "key", [("agents", "observation"), ("agents", "action"), "state", ("next", "state")]
)
def test_qmixer_missing_entry_names_it(key):
    torch.manual_seed(0)
    mlp = MultiAgentMLP(OBS, ACT, n_agents=N, centralized=False, share_params=False, depth=1)
    local = QValueActor(
        mlp,
        in_keys=[("agents", "observation")],
        action_space="categorical",
        action_value_key=("agents", "action_value"),
    )
    mixer = TensorDictModule(
        QMixer((STATE,), 8, N),
        [("agents", "chosen_action_value"), "state"],
        ["chosen_action_value"],
    )
    loss = QMixerLoss(local, mixer)
    assert ("agents", "chosen_action_value") not in loss.in_keys  # computed by the loss
    td = batch()
    del td[key]
    pattern = rf"QMixerLoss: the batch has no entry {re.escape(repr(key))}"
    with pytest.raises(KeyError, match=pattern):
        loss(td)
