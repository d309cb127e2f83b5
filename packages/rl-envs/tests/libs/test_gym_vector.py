"""Vector envs in every gymnasium autoreset mode: rl-core's partial resets, no reset step in a
trajectory, final observations kept, and the same trajectories as independent gym envs."""

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core.testing import EnvConformanceSuite
from rl_envs.libs import GymEnv, GymWrapper

gym = pytest.importorskip("gymnasium")

MODES = ["NextStep", "SameStep", "Disabled"]
NUM_ENVS = 4


def _vector(mode: str, num_envs: int = NUM_ENVS) -> GymWrapper:
    envs = [lambda: gym.make("CartPole-v1")] * num_envs
    return GymWrapper(gym.vector.SyncVectorEnv(envs, autoreset_mode=mode))


def _rule(x, theta_dot):
    """Balance the pole near the centre, push back towards it when far: episodes of ~80-150."""
    return theta_dot > 0 if abs(x) < 0.5 else x < 0


def _lean_policy(td):
    obs = td["observation"]
    right = torch.where(obs[..., 0].abs() < 0.5, obs[..., 3] > 0, obs[..., 0] < 0)
    return td.set("action", torch.stack([~right, right], -1))


def _reference(seed: int, steps: int, num_envs: int = NUM_ENVS) -> dict[str, np.ndarray]:
    """The same episodes from independent gym envs, reset by hand when they finish."""
    out = {k: [] for k in ("observation", "next", "reward", "terminated", "truncated")}
    for i in range(num_envs):
        env = gym.make("CartPole-v1")
        env.reset(seed=seed + i)  # what set_seed does
        obs, _ = env.reset()  # what rollout's reset does
        rows = {k: [] for k in out}
        for _ in range(steps):
            action = int(_rule(obs[0], obs[3]))
            nxt, reward, terminated, truncated, _ = env.step(action)
            for key, value in zip(out, (obs, nxt, reward, terminated, truncated)):
                rows[key].append(value)
            obs = env.reset()[0] if terminated or truncated else nxt
        for key in out:
            out[key].append(np.array(rows[key]))
    return {key: np.stack(value) for key, value in out.items()}


@pytest.mark.parametrize("mode", MODES)
def test_trajectories_equal_independent_envs_in_every_autoreset_mode(mode):
    env = _vector(mode)
    env.set_seed(3)
    traj = env.rollout(300, policy=_lean_policy, break_when_any_done=False)
    ref = _reference(3, 300)
    assert traj["next", "terminated"].any(), "no episode ended: the test checks nothing"
    torch.testing.assert_close(traj["observation"], torch.from_numpy(ref["observation"]))
    torch.testing.assert_close(traj["next", "observation"], torch.from_numpy(ref["next"]))
    reward = torch.from_numpy(ref["reward"].astype(np.float32)).unsqueeze(-1)
    torch.testing.assert_close(traj["next", "reward"], reward)
    terminated = torch.from_numpy(ref["terminated"]).unsqueeze(-1)
    assert torch.equal(traj["next", "terminated"], terminated)


@pytest.mark.parametrize("mode", MODES)
def test_no_reset_step_leaks_and_final_observations_are_kept(mode):
    env = _vector(mode)
    env.set_seed(0)
    traj = env.rollout(400, break_when_any_done=False)
    # A reset step (NEXT_STEP's autoreset) would show up as a reward of 0.
    assert traj["next", "reward"].eq(1).all()
    done = traj["next", "done"].squeeze(-1)[:, :-1]
    assert done.sum() > 10
    continues = (traj["next", "observation"][:, :-1] == traj["observation"][:, 1:]).all(-1)
    assert continues[~done].all()
    assert not continues[done].any()
    # After a done the next root is a reset state (all entries within +-0.05) ...
    assert traj["observation"][:, 1:][done].abs().max() <= 0.05
    # ... and the final observation of a terminated episode is past CartPole's limits.
    terminated = traj["next", "terminated"].squeeze(-1)
    final = traj["next", "observation"][terminated]
    assert ((final[:, 0].abs() > 2.4) | (final[:, 2].abs() > 0.2094)).all()


def test_same_step_partial_reset_of_finished_and_running_sub_envs_matches_disabled():
    """SAME_STEP serves finished sub-envs the reset it already did and resets the others."""
    same, disabled = _vector("SameStep"), _vector("Disabled")
    roots = []
    for env in (same, disabled):
        env.set_seed(1)
        td = env.reset()
        for _ in range(200):
            td = env.step(_lean_policy(td))
            if td["next", "done"].any():
                break
        roots.append(td)
    finished = roots[0]["next", "done"].squeeze(-1)
    assert torch.equal(finished, roots[1]["next", "done"].squeeze(-1))
    assert finished.any()
    assert not finished.all()
    mask = finished.clone()
    mask[int((~finished).nonzero()[0])] = True  # also reset one running sub-env
    outs = []
    for env, td in zip((same, disabled), roots):
        root = td["next"].exclude("reward").set("_reset", mask.unsqueeze(-1))
        outs.append(env.reset(root))
    assert torch.equal(outs[0]["observation"], outs[1]["observation"])
    assert not outs[0]["done"].any()
    keep = ~mask
    assert torch.equal(outs[0]["observation"][keep], roots[0]["next", "observation"][keep])


def test_a_reset_mask_without_any_sub_env_leaves_the_state_as_it_is():
    env = GymEnv("CartPole-v1", num_envs=2)
    td = env.reset()
    before = td["observation"].clone()
    td.set("_reset", torch.zeros(2, 1, dtype=torch.bool))
    out = env.reset(td)
    assert torch.equal(out["observation"], before)


def test_gym_env_builds_its_vector_env_with_autoreset_disabled():
    env = GymEnv("CartPole-v1", num_envs=2)
    assert env.env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.DISABLED
    chosen = GymEnv("CartPole-v1", num_envs=2, vector_kwargs={"autoreset_mode": "SameStep"})
    assert chosen.env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP


def test_same_step_vector_env_refuses_pixels():
    vector = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", render_mode="rgb_array")] * 2, autoreset_mode="SameStep"
    )
    with pytest.raises(ValueError, match="from_pixels needs a vector env whose autoreset mode"):
        GymWrapper(vector, from_pixels=True)


def test_reset_masks_shaped_like_the_done_flags_are_read_per_sub_env():
    env = GymEnv("CartPole-v1", num_envs=3)
    td = env.reset()
    td = TensorDict(td.to_dict(), batch_size=[3])
    td.set("_reset", torch.tensor([[False], [True], [False]]))
    out = env.reset(td)
    assert torch.equal(out["observation"][0], td["observation"][0])
    assert torch.equal(out["observation"][2], td["observation"][2])


class TestNextStepVector(EnvConformanceSuite):
    def make_env(self):
        return _vector("NextStep", 3)


class TestSameStepVector(EnvConformanceSuite):
    def make_env(self):
        return _vector("SameStep", 3)
