"""Rendering CartPole: frames equal gymnasium's own rgb_array frames, checkpoints load into
the policy, every artifact format is written, and the rl-render command runs."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from rl_envs.render import (
    FrameBundle,
    RenderConfig,
    RenderResult,
    build_notebook,
    checkpoint_hash,
    collect_render_rollouts,
    import_from_string,
    infer_state_dict,
    load_checkpoint,
    load_render_policy,
    make_render_env,
    parse_nested_key,
    render_policy,
    save_render_checkpoint,
    write_render_artifact,
)
from rl_envs.render.cli import build_parser, config_from_args, main

gymnasium = pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')
pytest.importorskip("PIL", reason='pip install "rl-envs[video]"')


class Push(torch.nn.Module):
    """CartPole policy: a linear score per action, the best one as a one-hot action."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)
        with torch.no_grad():
            self.linear.weight.zero_()
            self.linear.bias.copy_(torch.tensor([1.0, 0.0]))  # always left

    def forward(self, observation):
        return torch.nn.functional.one_hot(self.linear(observation).argmax(-1), 2)


def make_push(device):
    return Push().to(device)


def test_frames_are_gymnasiums_rgb_array_frames():
    config = RenderConfig(env="CartPole-v1", max_steps=4, format="gif", seed=3)
    env = make_render_env(config)
    result = collect_render_rollouts(
        env, load_render_policy(RenderConfig(policy=make_push)), config
    )
    frames = [bundle.frames["default"] for bundle in result.frames[0]]
    assert len(frames) == 5  # the reset state and four steps
    assert result.trajectories[0].shape == (4,)
    # The same states in gymnasium's own CartPole: seeding resets with seed 3 (GymEnv's
    # set_seed), the rollout resets again, then pushes left four times.
    ref = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    ref.reset(seed=3)
    ref.reset()
    expected = [ref.render()]
    for _ in range(4):
        ref.step(0)
        expected.append(ref.render())
    ref.close()
    env.close()
    for got, want in zip(frames, expected, strict=True):
        assert got.shape == (400, 600, 3)
        np.testing.assert_array_equal(got, want)
    assert result.metadata["trajectories"][0] == {
        "index": 0,
        "steps": 4,
        "return": 4.0,
        "done": True,
    }


def test_checkpoint_weights_reach_the_policy(tmp_path):
    right = Push()
    with torch.no_grad():
        right.linear.bias.copy_(torch.tensor([0.0, 1.0]))  # always right
    ckpt = save_render_checkpoint(tmp_path / "ckpt.pt", right, frames=1000, metrics={"r": 9.0})
    payload = load_checkpoint(ckpt)
    assert payload["frames"] == 1000
    assert list(infer_state_dict(payload)) == ["linear.weight", "linear.bias"]
    config = RenderConfig(
        ckpt=ckpt,
        policy=f"{__name__}:make_push",
        env="CartPole-v1",
        max_steps=3,
        format="jsonl",
        out=tmp_path / "roll.jsonl",
        num_trajs=2,
    )
    result = render_policy(config)
    rows = [json.loads(line) for line in (tmp_path / "roll.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    assert rows[0]["actions"] == [[0, 1]] * 3  # the checkpoint's "always right", not "left"
    assert result.metadata["checkpoint"]["sha256"] == checkpoint_hash(ckpt)
    with pytest.raises(KeyError, match="no state dict in the checkpoint"):
        infer_state_dict({"frames": 3})


def test_every_format_is_written(tmp_path):
    base = dict(env="CartPole-v1", max_steps=3, seed=0, fps=10)
    gif = render_policy(RenderConfig(**base, format="gif", out=tmp_path / "r.gif"))
    from PIL import Image

    with Image.open(gif.artifact_path) as image:
        # Four frames of 100 ms (pillow merges identical neighbours, adding their durations).
        total = 0
        for i in range(image.n_frames):
            image.seek(i)
            total += image.info["duration"]
    assert total == 400
    frames = render_policy(RenderConfig(**base, format="frames", out=tmp_path / "pngs"))
    assert sorted(p.name for p in frames.frame_paths)[0] == "traj000_step00000.png"
    assert len(frames.frame_paths) == 4
    npz = render_policy(RenderConfig(**base, format="npz", out=tmp_path / "r.npz"))
    with np.load(npz.artifact_path) as arrays:
        assert arrays["frames_0"].shape == (4, 400, 600, 3)
        assert arrays["reward_0"].sum() == 3.0
    nb = render_policy(RenderConfig(**base, format="ipynb", out=tmp_path / "r.ipynb"))
    notebook = json.loads(nb.artifact_path.read_text())
    assert notebook["nbformat"] == 4
    assert "image/gif" in notebook["cells"][2]["outputs"][0]["data"]
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        render_policy(RenderConfig(**base, format="gif", out=tmp_path / "r.gif"))
    with pytest.raises(ValueError, match="needs frames, but the rollouts have none"):
        render_policy(
            RenderConfig(**base, format="gif", out=tmp_path / "n.gif", render_backend="null")
        )
    with pytest.raises(ValueError, match="has no frames"):
        build_notebook(
            collect_render_rollouts(
                make_render_env(RenderConfig(**base)),
                None,
                RenderConfig(**base, render_backend="null"),
            ),
            RenderConfig(**base),
        )


def test_config_and_loading_refuse_bad_input():
    with pytest.raises(ValueError, match=r"expected format in .* got 'avi'"):
        RenderConfig(format="avi")
    with pytest.raises(ValueError, match="expected num_trajs >= 1, got 0"):
        RenderConfig(num_trajs=0)
    with pytest.raises(ValueError, match="MuJoCo WASM viewer"):
        RenderConfig(notebook_render_backend="mujoco_wasm")
    with pytest.raises(ValueError, match="cannot import module 'no_such_mod'"):
        import_from_string("no_such_mod:x")
    with pytest.raises(TypeError, match="expected the env factory to return an rl-core EnvBase"):
        make_render_env(RenderConfig(env=lambda: gymnasium.make("CartPole-v1")))
    assert parse_nested_key("next.pixels") == ("next", "pixels")


def test_main_writes_a_gif_and_reports_errors(tmp_path, capsys):
    out = tmp_path / "cli.gif"
    args = ["--env", "CartPole-v1", "--format", "gif", "--max-steps", "2", "--out", str(out)]
    assert main(args) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.stat().st_size > 0
    assert main(args) == 2
    assert "exists; pass overwrite=True" in capsys.readouterr().err
    assert main([*args, "--overwrite", "--num-trajs", "0"]) == 2
    assert "expected num_trajs >= 1, got 0" in capsys.readouterr().err
    config = config_from_args(build_parser().parse_args(["--obs-key", "a.b", "--stochastic"]))
    assert (config.obs_key, config.deterministic) == (("a", "b"), False)


@pytest.mark.slow
def test_the_command_runs_as_a_module(tmp_path):
    out = tmp_path / "cli.gif"
    cmd = [sys.executable, "-m", "rl_envs.render.cli", "--env", "CartPole-v1", "--format", "gif"]
    done = subprocess.run(
        [*cmd, "--max-steps", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    assert out.stat().st_size > 0


def _two_camera_result(config):
    left = np.zeros((4, 6, 3), np.uint8)
    right = np.full((4, 6, 3), 200, np.uint8)
    bundles = [FrameBundle({"left": left, "right": right}, t, 0) for t in range(3)]
    summary = {"index": 0, "steps": 2, "return": 2.0, "done": True}
    return RenderResult(None, [], [], {"trajectories": [summary]}, [], [bundles])


def test_cameras_are_laid_out_or_written_separately(tmp_path):
    from PIL import Image

    config = RenderConfig(format="gif", out=tmp_path / "s.gif", camera_layout="separate")
    paths = write_render_artifact(_two_camera_result(config), config).frame_paths
    assert [p.name for p in paths] == ["s_left.gif", "s_right.gif"]
    config = RenderConfig(format="frames", out=tmp_path / "h", camera_layout="horizontal")
    paths = write_render_artifact(_two_camera_result(config), config).frame_paths
    assert len(paths) == 3
    image = np.asarray(Image.open(paths[0]).convert("RGB"))
    assert image.shape == (4, 12, 3)
    assert (image[0, 0].tolist(), image[0, 6].tolist()) == ([0, 0, 0], [200, 200, 200])
