"""A batch without an entry a loss needs, or with an action of the wrong width, raises an
error naming the entry and the loss (the diagnosis lives in ``LossModule.__call__``)."""

import re
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, q_critic, tanh_actor
from _nets import N_ACT, OBS, categorical_actor, offpolicy_batch, onpolicy_batch, value_critic

from rl_core.modules import MLP, Actor, QValueActor
from rl_objectives import (
    A2CLoss,
    ClipPPOLoss,
    CQLLoss,
    DDPGLoss,
    DQNLoss,
    IQLLoss,
    SACLoss,
    TD3Loss,
)


def _continuous_batch():
    return offpolicy_batch(action=torch.rand(8, ACT) * 2 - 1)


def _dqn_batch():
    return offpolicy_batch(action=torch.eye(N_ACT)[torch.arange(8) % N_ACT])


def _det_actor():
    torch.manual_seed(0)
    return Actor(MLP(OBS, ACT, depth=1, num_cells=8))


# ("next", "terminated") is not among them: without it, done stands for it (as in TorchRL)
NEXT_OFF = [("next", "observation"), ("next", "reward")]
NEXT_ON = [("next", "observation"), ("next", "reward"), ("next", "done")]

# name: (make the loss, make a complete batch, the entries it cannot do without)
CASES = {
    "ClipPPOLoss": (
        lambda: ClipPPOLoss(categorical_actor()[0], value_critic()[0]),
        onpolicy_batch,
        ["observation", "action", "action_log_prob", *NEXT_ON],
    ),
    "A2CLoss": (
        lambda: A2CLoss(categorical_actor()[0], value_critic()[0]),
        onpolicy_batch,
        ["observation", "action", *NEXT_ON],
    ),
    "SACLoss": (
        lambda: SACLoss(tanh_actor()[0], q_critic()),
        _continuous_batch,
        ["observation", "action", *NEXT_OFF],
    ),
    "TD3Loss": (
        lambda: TD3Loss(_det_actor(), q_critic(), bounds=(-1.0, 1.0)),
        _continuous_batch,
        ["observation", "action", *NEXT_OFF],
    ),
    "DDPGLoss": (
        lambda: DDPGLoss(_det_actor(), q_critic()),
        _continuous_batch,
        ["observation", "action", *NEXT_OFF],
    ),
    "IQLLoss": (
        lambda: IQLLoss(tanh_actor()[0], q_critic(), value_critic()[0]),
        _continuous_batch,
        ["observation", "action", *NEXT_OFF],
    ),
    "CQLLoss": (
        lambda: CQLLoss(tanh_actor()[0], q_critic()),
        _continuous_batch,
        ["observation", "action", *NEXT_OFF],
    ),
    "DQNLoss": (
        lambda: DQNLoss(QValueActor(MLP(OBS, N_ACT, depth=1, num_cells=8), action_space="one-hot")),
        _dqn_batch,
        ["observation", "action", *NEXT_OFF],
    ),
}
PAIRS = [(name, key) for name, (_, _, keys) in CASES.items() for key in keys]


@pytest.mark.parametrize(("name", "key"), PAIRS, ids=[f"{n}-{k}" for n, k in PAIRS])
def test_missing_entry_raises_key_error_naming_key_and_loss(name, key):
    make_loss, make_batch, _ = CASES[name]
    loss, batch = make_loss(), make_batch()
    loss(batch.clone())  # the complete batch works
    del batch[key]
    with pytest.raises(KeyError, match=rf"{name}: .*{re.escape(repr(key))}"):
        loss(batch)


@pytest.mark.parametrize("name", list(CASES))
def test_missing_entry_is_in_in_keys(name):
    make_loss, _, keys = CASES[name]
    in_keys = make_loss().in_keys
    assert all(key in in_keys for key in keys), (keys, in_keys)


@pytest.mark.parametrize("name", list(CASES))
def test_action_of_wrong_width_names_action_expected_and_got(name):
    make_loss, make_batch, _ = CASES[name]
    loss, batch = make_loss(), make_batch()
    action = batch["action"]
    width = action.shape[-1]
    batch["action"] = torch.cat([action, action[..., :1]], -1)
    pattern = (
        rf"{name}: the action \(entry 'action'\) has shape \({width + 1},\) per sample, "
        rf"expected \({width},\)"
    )
    if name == "DQNLoss":  # the loss's own check names the action, expected and got
        pattern = (
            rf"DQNLoss: expected a one-hot action of shape \(8, {width}\).* \(8, {width + 1}\)"
        )
    with pytest.raises(ValueError, match=pattern):
        loss(batch)


def test_optional_entry_missing_is_not_an_error():
    # the old values are read only with clip_value; TD(0) does not read ("next", "done")
    loss, make_batch, _ = CASES["ClipPPOLoss"]
    batch = make_batch()
    del batch["state_value"]
    loss()(batch)
    sac, make_batch, _ = CASES["SACLoss"]
    batch = make_batch()
    del batch["next", "done"]
    sac()(batch)


def test_other_failures_propagate_unchanged():
    loss = CASES["SACLoss"][0]()
    batch = _continuous_batch()
    batch["observation"] = torch.randn(8, OBS + 1)  # a network input of the wrong width
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        loss(batch)


@pytest.mark.parametrize("name", ["ClipPPOLoss", "A2CLoss"])
def test_action_of_wrong_width_is_caught_without_distribution_checks(name):
    # torch.compile turns torch.distributions' argument checks off for the whole process; a
    # log-prob of a wrong-width action may then broadcast instead of failing.
    make_loss, make_batch, _ = CASES[name]
    loss, batch = make_loss(), make_batch()
    previous = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        loss(batch.clone())  # a good batch first: its action shape is remembered
        state = torch.random.get_rng_state()
        action = batch["action"]
        batch["action"] = torch.cat([action, action[..., :1]], -1)
        with pytest.raises(ValueError, match=rf"{name}: the action \(entry 'action'\)"):
            loss(batch)
        assert torch.equal(torch.random.get_rng_state(), state)  # the check drew nothing
    finally:
        torch.distributions.Distribution.set_default_validate_args(previous)


@pytest.mark.parametrize("name", ["SACLoss", "DQNLoss", "ClipPPOLoss"])
def test_without_terminated_done_stands_for_it(name):
    make_loss, make_batch, _ = CASES[name]
    batch = make_batch()
    as_done = batch.clone()
    as_done["next", "terminated"] = batch["next", "done"].clone()
    torch.manual_seed(0)
    out = make_loss()(batch.exclude(("next", "terminated")))
    torch.manual_seed(0)
    ref = make_loss()(as_done)
    for key, value in ref.items():
        torch.testing.assert_close(out[key], value)
