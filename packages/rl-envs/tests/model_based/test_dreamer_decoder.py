"""DreamerDecoder: the DreamerEnv's obs_decoder run at every step and reset."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import TensorDictModule

from rl_core import Compose, StepCounter, TransformedEnv
from rl_core.specs import Bounded
from rl_envs.model_based import DreamerDecoder, DreamerEnv


def _env(with_decoder: bool = True) -> DreamerEnv:
    # state' = state + action, belief' = 2 * belief, reward = -|state|; decoded = state + 1 + belief_0
    model = TensorDictModule(
        lambda s, b, a: (s + a, 2 * b, -s.abs()),
        ["state", "belief", "action"],
        ["state", "belief", "reward"],
    )
    decoder = TensorDictModule(lambda s, b: s + 1 + b[..., :1], ["state", "belief"], ["reco"])
    env = DreamerEnv(
        model,
        prior_shape=(1,),
        belief_shape=(2,),
        obs_decoder=decoder if with_decoder else None,
        batch_size=[1],
    )
    env.action_spec = Bounded(-1.0, 1.0, shape=(1,))
    return env


def test_steps_and_resets_carry_the_decoded_observation():
    env = TransformedEnv(_env(), Compose(StepCounter(), DreamerDecoder()))
    reset = env.reset()  # zero latents
    assert reset["reco"].tolist() == [[1.0]]
    traj = env.rollout(
        3, lambda td: td.set("action", torch.ones(1, 1)), tensordict=reset, auto_reset=False
    )
    # states 1, 2, 3 (beliefs stay 0): decoded 2, 3, 4
    assert traj["next", "reco"].squeeze(-1).tolist() == [[2.0, 3.0, 4.0]]
    assert traj["next", "step_count"].squeeze(-1).tolist() == [[1, 2, 3]]


def test_without_a_decoder_below_it_is_refused():
    env = TransformedEnv(_env(with_decoder=False), DreamerDecoder())
    with pytest.raises(ValueError, match="expected a DreamerEnv built with an obs_decoder"):
        env.reset()
