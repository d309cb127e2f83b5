"""MuJoCo: gymnasium's v5 tasks through GymEnv, and the native MujocoEnv base (PointMassEnv)."""

import functools
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_envs import GymEnv, MujocoEnv, PointMassEnv

from ._batched_checks import ParallelEnv, SerialEnv, check_batched_rollouts

# Headless rendering for the pixel tests (CI sets it too): read when mujoco is first imported.
os.environ.setdefault("MUJOCO_GL", "egl")
mujoco = pytest.importorskip("mujoco", reason='pip install "rl-envs[mujoco]"')


class TestHalfCheetah(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("HalfCheetah-v5", max_episode_steps=30)


class TestPointMass(EnvConformanceSuite):
    def make_env(self):
        return PointMassEnv(num_envs=2, max_episode_steps=15)


@pytest.mark.parametrize(("name", "obs", "act"), [("HalfCheetah-v5", 17, 6), ("Hopper-v5", 11, 3)])
def test_gymnasium_mujoco_tasks_through_gym_env(name, obs, act):
    env = GymEnv(name)
    assert env.observation_spec["observation"].shape == (obs,)
    assert env.action_spec.shape == (act,)
    check_env_specs(env)
    env.set_seed(0)
    traj = env.rollout(20)
    assert traj["next", "observation"].dtype == torch.float64
    assert torch.isfinite(traj["next", "reward"]).all()


def test_hopper_terminates_when_it_falls():
    env = GymEnv("Hopper-v5")
    env.set_seed(0)
    traj = env.rollout(500, lambda td: td.set("action", torch.ones(3, dtype=torch.float32)))
    assert traj["next", "terminated"][-1].item()
    assert not traj["next", "truncated"].any()
    assert traj.batch_size[0] < 500


def test_gym_mujoco_seeding_reproduces():
    def run(seed):
        env = GymEnv("Hopper-v5")
        env.set_seed(seed)
        torch.manual_seed(0)
        return env.rollout(10)

    a, b, c = run(1), run(1), run(2)
    torch.testing.assert_close(a["next", "observation"], b["next", "observation"])
    assert not torch.equal(a["observation"][0], c["observation"][0])


def test_point_mass_steps_like_mujoco_stepped_by_hand():
    env = PointMassEnv(num_envs=2, frame_skip=3, max_episode_steps=4, dtype=torch.float64, seed=5)
    actions = torch.tensor([[1.0, -0.5], [0.2, 0.3], [-1.0, 1.0], [0.0, 0.0]], dtype=torch.float64)
    taken = iter(range(4))
    traj = env.rollout(10, lambda td: td.set("action", torch.stack([actions[next(taken)]] * 2)))
    assert traj.batch_size == (2, 4)
    model = mujoco.MjModel.from_xml_string(PointMassEnv.XML)
    for b in range(2):
        data = mujoco.MjData(model)
        data.qpos[:] = traj["observation"][b, 0, :2].numpy()
        data.qvel[:] = traj["observation"][b, 0, 2:].numpy()
        for t in range(4):
            data.ctrl[:] = actions[t].numpy()
            for _ in range(3):
                mujoco.mj_step(model, data)
            expected = np.concatenate([data.qpos, data.qvel])
            np.testing.assert_array_equal(traj["next", "observation"][b, t].numpy(), expected)
            distance = float(np.sqrt(data.qpos[0] ** 2 + data.qpos[1] ** 2))
            assert traj["next", "reward"][b, t].item() == pytest.approx(-distance, rel=1e-12)
    assert traj["next", "truncated"][0].squeeze(-1).tolist() == [False, False, False, True]
    assert not traj["next", "terminated"].any()


def test_point_mass_specs_and_seeds():
    env = PointMassEnv(num_envs=2)
    assert env.batch_size == (2,)
    assert env.action_spec.low.tolist() == [[-1.0, -1.0]] * 2
    assert env.observation_spec["observation"].shape == (2, 4)
    assert env.observation_spec["observation"].dtype == torch.float32
    assert env.dt == pytest.approx(0.04)

    def start(seed):
        return PointMassEnv(seed=seed).reset()["observation"]

    torch.testing.assert_close(start(3), start(3))
    assert not torch.equal(start(3), start(4))
    assert start(3).abs().max() <= 0.25


def test_partial_reset_touches_only_the_marked_env():
    env = PointMassEnv(num_envs=2, seed=0)
    td = env.rollout(3, break_when_any_done=False)[..., -1]["next"].clone()
    before = env.get_state()
    td["_reset"] = torch.tensor([[True], [False]])
    out = env.reset(td)
    after = env.get_state()
    torch.testing.assert_close(after["qpos"][1], before["qpos"][1])
    assert not torch.equal(after["qpos"][0], before["qpos"][0])
    torch.testing.assert_close(out["observation"][1], td["observation"][1])


class _FallingBall(MujocoEnv):
    """A free-falling ball (no actuators) that terminates below z = 0.5; default observation."""

    XML = (
        '<mujoco><worldbody><body pos="0 0 1"><freejoint/><geom size="0.1"/></body>'
        "</worldbody></mujoco>"
    )
    FRAME_SKIP = 1
    RESET_NOISE_SCALE = 0.0

    def _compute_reward(self, state, action, next_state):
        return torch.ones(self.num_envs, 1)

    def _compute_done(self, state, next_state):
        return next_state["qpos"][:, 2:3] < 0.5


def test_a_custom_task_without_actuators_terminates_when_the_free_fall_says():
    env = _FallingBall()
    assert env.action_spec.shape == (1, 0)
    assert env.observation_spec["observation"].shape == (1, 13)  # qpos 7 + qvel 6
    check_env_specs(env)
    traj = env.rollout(1000)
    # z(t) = 1 - g t^2 / 2 falls below 0.5 m after sqrt(2 * 0.5 / 9.81) s (dt 0.002).
    steps = traj.batch_size[-1]
    assert abs(steps * 0.002 - (2 * 0.5 / 9.81) ** 0.5) < 0.005
    assert traj["next", "terminated"][0, -1].item()


class _NoModel(MujocoEnv):
    def _compute_reward(self, state, action, next_state):
        return torch.zeros(self.num_envs, 1)

    def _compute_done(self, state, next_state):
        return torch.zeros(self.num_envs, 1, dtype=torch.bool)


def test_bad_models_and_arguments_raise(tmp_path):
    with pytest.raises(ValueError, match="no model; set the class attribute XML_PATH"):
        _NoModel()
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><joint type='nope'/></body></worldbody></mujoco>")
    with pytest.raises(ValueError, match="the MJCF model does not compile"):
        _NoModel(xml_path=bad)
    with pytest.raises(ValueError, match="expected frame_skip to be an int >= 1, got 0"):
        PointMassEnv(frame_skip=0)
    with pytest.raises(ValueError, match="expected num_envs"):
        PointMassEnv(num_envs=0)
    with pytest.raises(ValueError, match="expected backend='mujoco', got 'mjx'"):
        PointMassEnv(backend="mjx")


@pytest.mark.parametrize("batched", [SerialEnv, ParallelEnv])
def test_serial_and_parallel_envs(batched):
    check_batched_rollouts(PointMassEnv, batched)


# ---------------------------------------------------------------------- pixels
SMALL = {"height": 48, "width": 64}


@pytest.fixture
def can_render():
    """Skips where mujoco cannot render offscreen (no EGL/OSMesa under this MUJOCO_GL)."""
    try:
        env = PointMassEnv(from_pixels=True, render_kwargs=SMALL)
        env.reset()
        env.close()
    except RuntimeError as err:
        pytest.skip(f"mujoco cannot render here (MUJOCO_GL={os.environ.get('MUJOCO_GL')}): {err}")


def _render_by_hand(model, qpos, qvel, camera="top"):
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = qpos.numpy(), qvel.numpy()
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, height=SMALL["height"], width=SMALL["width"]) as renderer:
        renderer.update_scene(data, camera=camera)
        return torch.from_numpy(renderer.render().copy())


def test_pixels_are_mujocos_frames_of_each_env(can_render):
    env = PointMassEnv(num_envs=2, from_pixels=True, pixels_only=False, render_kwargs=SMALL, seed=3)
    try:
        assert set(env.observation_spec.keys()) == {"observation", "pixels"}
        assert env.observation_spec["pixels"].shape == (2, 48, 64, 3)
        check_env_specs(env)
        traj = env.rollout(3)
        state = env.get_state()
        for i in range(2):
            want = _render_by_hand(env.model, state["qpos"][i], state["qvel"][i])
            assert torch.equal(traj["next", "pixels"][i, -1], want)
    finally:
        env.close()
    frames = traj["next", "pixels"]
    assert frames.dtype == torch.uint8
    assert frames.shape == (2, 3, 48, 64, 3)
    assert not torch.equal(frames[0, -1], frames[1, -1])  # two masses, two places
    assert not torch.equal(traj["pixels"][0, 0], frames[0, -1])  # the mass moved


def test_pixels_only_drops_the_state_and_the_free_camera_is_the_default(can_render):
    class NoCamera(MujocoEnv):
        XML = """<mujoco><worldbody><light pos="0 0 2"/><body name="b" pos="0 0 1">
            <freejoint/><geom type="box" size=".1 .1 .1"/></body></worldbody></mujoco>"""

        def _compute_reward(self, state, action, next_state):
            return torch.zeros(self.num_envs, 1)

        def _compute_done(self, state, next_state):
            return torch.zeros(self.num_envs, 1, dtype=torch.bool)

    env = NoCamera(from_pixels=True, pixels_only=True, render_kwargs=SMALL, max_episode_steps=2)
    try:
        assert env.render_kwargs["camera"] == -1
        assert set(env.observation_spec.keys()) == {"pixels"}
        check_env_specs(env)
        traj = env.rollout(2)
        state = env.get_state()
        want = _render_by_hand(env.model, state["qpos"][0], state["qvel"][0], camera=-1)
    finally:
        env.close()
    assert set(traj["next"].keys()) >= {"pixels"}
    assert "observation" not in traj["next"].keys()
    assert torch.equal(traj["next", "pixels"][0, -1], want)


@pytest.mark.slow
def test_pixels_in_a_spawned_parallel_env_match_each_env_alone(can_render):
    # This process has rendered (can_render): forked workers would inherit Mesa's EGL state
    # without its threads and hang at their first frame, so the workers are spawned.
    make = functools.partial(
        PointMassEnv, from_pixels=True, render_kwargs=SMALL, max_episode_steps=5
    )
    env = ParallelEnv(2, make, mp_start_method="spawn", timeout=300)
    try:
        env.set_seed(5)
        action = torch.tensor([[[0.5, -0.5]], [[-1.0, 1.0]]])
        traj = env.rollout(2, lambda td: td.set("action", action), break_when_any_done=False)
    finally:
        env.close()
    for i in range(2):
        single = make()
        try:
            single.set_seed(5 + i)
            ref = single.rollout(2, lambda td, a=action[i]: td.set("action", a))
        finally:
            single.close()
        assert torch.equal(traj[i]["next", "pixels"], ref["next", "pixels"])


def test_bad_render_arguments_raise(can_render):
    with pytest.raises(ValueError, match=r"unknown render_kwargs \['camera_id'\]"):
        PointMassEnv(from_pixels=True, render_kwargs={"camera_id": 0})
    with pytest.raises(ValueError, match="camera='side' is not a camera of the model"):
        PointMassEnv(from_pixels=True, render_kwargs={"camera": "side"})
    with pytest.raises(ValueError, match="camera=1 is not a camera of the model"):
        PointMassEnv(from_pixels=True, render_kwargs={"camera": 1})
    with pytest.raises(ValueError, match=r"exceed the model's offscreen buffer \(480 x 640\)"):
        PointMassEnv(from_pixels=True, render_kwargs={"height": 2000, "width": 64})
    with pytest.raises(ValueError, match=r"render_kwargs\['width'\] to be an int >= 1, got 0"):
        PointMassEnv(from_pixels=True, render_kwargs={"height": 8, "width": 0})
    with pytest.raises(RuntimeError, match="built without from_pixels"):
        PointMassEnv().render_pixels()


def test_from_pixels_without_a_headless_gl_says_how_to_fix_it():
    # glfw needs a display: without one the renderer cannot be made.
    code = (
        "from rl_envs import PointMassEnv\n"
        "try:\n    PointMassEnv(from_pixels=True).reset()\n"
        "except RuntimeError as err:\n    print(err)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["MUJOCO_GL"] = "glfw"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert "could not create a mujoco.Renderer" in out.stdout, out.stdout + out.stderr
    assert "MUJOCO_GL='glfw'" in out.stdout
    assert "MUJOCO_GL=egl" in out.stdout


def test_frames_come_with_the_states_by_default_as_torchrl():
    # TorchRL's MujocoEnv: pixels_only=False unless asked; pixels_only needs from_pixels
    env = PointMassEnv(from_pixels=True, render_kwargs=SMALL)
    try:
        assert env.pixels_only is False
        assert set(env.observation_spec.keys()) == {"observation", "pixels"}
    finally:
        env.close()
    with pytest.raises(ValueError, match=r"PointMassEnv: pixels_only=True .* from_pixels is False"):
        PointMassEnv(pixels_only=True)
