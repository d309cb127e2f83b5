"""``GymStepPlan.step_and_maybe_reset`` builds the next root from the step row itself (issue
57): what ``step_mdp`` gives, other root entries included, against the reference code."""

import sys

import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import reference_only
from rl_core.ted import StepMdpPlan

pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')

from rl_envs.libs import GymEnv


def _walk(env, steps):
    """``steps`` transitions with extra root entries (a recurrent state, a group, a stale
    reward) carried through ``step_and_maybe_reset``."""
    torch.manual_seed(3)
    env.set_seed(0)
    td = env.reset()
    out = []
    for i in range(steps):
        td = env.rand_action(td)
        td["hidden"] = torch.full((2,), float(i))
        td["group"] = TensorDict({"x": torch.ones(3)}, batch_size=[])
        td["reward"] = torch.zeros(1)
        transition, td = env.step_and_maybe_reset(td)
        out.append((transition.clone(), td.clone(), sorted(td.keys()), sorted(transition.keys())))
    return out


def test_the_next_root_is_what_step_mdp_gives_with_other_root_entries():
    env = GymEnv("CartPole-v1")
    planned = _walk(env, 60)  # episodes of random CartPole end within 60 steps
    with reference_only():
        reference = _walk(env, 60)
    assert any(t["next", "done"].item() for t, *_ in planned)
    for (t, root, keys, tkeys), (t_ref, root_ref, keys_ref, tkeys_ref) in zip(
        planned, reference, strict=True
    ):
        assert keys == keys_ref
        assert tkeys == tkeys_ref
        assert (t == t_ref).all()
        assert (root == root_ref).all()
        assert "reward" not in root.keys()
        assert "action" not in root.keys()
        assert torch.equal(root["hidden"], t["hidden"])
    env.close()


@pytest.mark.parametrize("num_envs", [0, 2])
def test_step_and_maybe_reset_does_not_run_the_step_mdp_plan(num_envs):
    # Before issue 57's second round the route called the env's StepMdpPlan every step.
    env = GymEnv("CartPole-v1", num_envs=num_envs)
    env.set_seed(0)
    td = env.reset()
    merge = StepMdpPlan.__call__.__code__
    codes = set()

    def trace(frame, event, arg):
        if event == "call":
            codes.add(frame.f_code)

    sys.setprofile(trace)
    try:
        for _ in range(30):
            _, td = env.step_and_maybe_reset(env.rand_action(td))
    finally:
        sys.setprofile(None)
    assert merge not in codes
    env.close()
