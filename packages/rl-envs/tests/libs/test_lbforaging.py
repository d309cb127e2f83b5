"""Level-Based Foraging: LBForagingEnv against lbforaging driven by hand from the same seed."""

import functools

import numpy as np
import pytest
import torch

from rl_core import check_env_specs
from rl_envs import LBForagingEnv, LBForagingWrapper

from ._batched_checks import ParallelEnv

pytest.importorskip("lbforaging", reason='pip install "rl-envs[lbforaging]"')
gym = pytest.importorskip("gymnasium", reason='pip install "rl-envs[lbforaging]"')

NAME = "Foraging-5x5-2p-1f-v3"  # 5 x 5 grid, 2 players, 1 food item, 50 steps


@pytest.mark.parametrize(
    ("seed", "steps", "terminated"),
    [(7, 4, True), (10, 3, True), (0, 50, False)],  # food collected at steps 4 and 3; none by 50
)
def test_rollout_equals_lbforaging_driven_by_hand(seed, steps, terminated):
    env = LBForagingEnv(NAME)
    torch.manual_seed(seed)  # the random policy's actions
    env.set_seed(seed)
    traj = env.rollout(100)
    assert traj.batch_size == (steps,)
    ref = gym.make(NAME, disable_env_checker=True)
    obs, _ = ref.reset(seed=seed)
    np.testing.assert_array_equal(traj["agents", "observation"][0].numpy(), np.stack(obs))
    for t in range(steps):
        actions = tuple(traj["agents", "action"][t].tolist())
        obs, rewards, game_over, _, _ = ref.step(actions)
        np.testing.assert_array_equal(
            traj["next", "agents", "observation"][t].numpy(), np.stack(obs)
        )
        assert traj["next", "agents", "reward"][t].squeeze(-1).tolist() == pytest.approx(rewards)
        assert traj["next", "done"][t].item() == game_over
    assert traj["next", "terminated"][-1].item() is terminated
    assert traj["next", "truncated"][-1].item() is (not terminated)
    assert not traj["next", "done"][:-1].any()
    # the one food item's reward is split between the agents that loaded it, summing to 1
    assert traj["next", "agents", "reward"].sum().item() == pytest.approx(
        1.0 if terminated else 0.0
    )
    ref.close()


def test_specs_and_one_hot_actions():
    env = LBForagingEnv(NAME, seed=0)
    check_env_specs(env)
    assert env.full_observation_spec["agents", "observation"].shape == (2, 9)
    assert env.full_action_spec["agents", "action"].shape == (2,)
    assert env.full_reward_spec["agents", "reward"].shape == (2, 1)
    assert env.full_done_spec["done"].shape == (1,)
    check_env_specs(LBForagingEnv(NAME, categorical_actions=False, seed=0))
    # lbforaging's reset(seed=...) depends on the env's past episodes (its players keep their
    # old positions while new ones are drawn): compare fresh envs
    torch.manual_seed(7)
    traj = LBForagingEnv(NAME, seed=7).rollout(100)
    actions = torch.nn.functional.one_hot(traj["agents", "action"], 6).bool()
    taken = iter(range(len(actions)))
    one_hot = LBForagingEnv(NAME, categorical_actions=False, seed=7)
    replay = one_hot.rollout(100, lambda td: td.set(("agents", "action"), actions[next(taken)]))
    assert replay["next", "agents", "observation"].equal(traj["next", "agents", "observation"])
    assert replay["next", "terminated"].equal(traj["next", "terminated"])


def test_parallel_env_matches_each_env_alone():
    make = functools.partial(LBForagingEnv, NAME)
    checked = ParallelEnv(2, make)
    try:
        check_env_specs(checked)
    finally:
        checked.close()
    env = ParallelEnv(2, make)  # fresh sub-envs: see the note above on lbforaging's seeding
    try:
        env.set_seed(11)
        traj = env.rollout(6, break_when_any_done=False)
    finally:
        env.close()
    for i in range(2):
        single = make(seed=11 + i)
        steps = iter(traj[i]["agents", "action"])

        def replay(td, steps=steps):
            return td.set(("agents", "action"), next(steps))

        ref = single.rollout(6, replay, break_when_any_done=False)
        assert traj[i]["next", "agents", "observation"].equal(ref["next", "agents", "observation"])
        assert traj[i]["next", "agents", "reward"].equal(ref["next", "agents", "reward"])
        assert traj[i]["next", "done"].equal(ref["next", "done"])


def test_bad_constructor_arguments_are_named():
    with pytest.raises(ValueError, match="env_name 'Foraging-9x9-nope' is not a registered"):
        LBForagingEnv("Foraging-9x9-nope")
    with pytest.raises(TypeError, match=r"expected a Level-Based Foraging env .* got CartPoleEnv"):
        LBForagingWrapper(gym.make("CartPole-v1").unwrapped)
