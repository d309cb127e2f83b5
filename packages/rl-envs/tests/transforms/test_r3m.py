"""R3MTransform with weights saved here (no download): a randomly initialised ResNet of the right
architecture, in R3M's checkpoint layout, loaded by path and from torch.hub's cache."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs.transforms import R3MTransform
from rl_envs.transforms._pretrained import preprocess
from rl_envs.transforms._resnet import ResNet


def _r3m_checkpoint(depth: int, path, seed: int = 1) -> ResNet:
    torch.manual_seed(seed)
    net = ResNet(depth)
    for module in net.modules():  # non-trivial batch-norm statistics
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    state = {f"module.convnet.{k}": v for k, v in net.state_dict().items()}
    torch.save({"r3m": state}, path)
    return net.eval()


def test_preprocessing_by_hand():
    image = torch.tensor([255, 0, 128], dtype=torch.uint8).expand(4, 4, 3)
    x = preprocess(image, size=4)
    assert x.shape == (3, 4, 4)
    expected = [(1 - 0.485) / 0.229, (0 - 0.456) / 0.224, (128 / 255 - 0.406) / 0.225]
    assert x[:, 0, 0].tolist() == pytest.approx(expected, rel=1e-5)
    assert preprocess(image, size=8).shape == (3, 8, 8)  # resized; a constant stays constant
    assert preprocess(image, size=8)[:, 3, 5].tolist() == pytest.approx(expected, rel=1e-5)


def test_weights_from_a_local_checkpoint(tmp_path):
    net = _r3m_checkpoint(18, tmp_path / "r3m_18.pt")
    t = R3MTransform("resnet18", size=32, weights=tmp_path / "r3m_18.pt")
    for name, value in net.state_dict().items():
        assert torch.equal(t.network.state_dict()[name], value), name
    torch.manual_seed(0)
    pixels = torch.randint(0, 256, (2, 3, 40, 40, 3), dtype=torch.uint8)
    out = t(TensorDict(pixels=pixels, batch_size=[2, 3]))
    with torch.no_grad():
        expected = net(preprocess(pixels, 32).reshape(6, 3, 32, 32)).reshape(2, 3, 512)
    assert out["r3m_vec"].shape == (2, 3, 512)
    assert torch.allclose(out["r3m_vec"], expected, atol=1e-5)
    assert "pixels" not in out.keys()


def test_download_reads_torch_hub_cache_and_stacks_two_cameras(tmp_path):
    net = _r3m_checkpoint(18, tmp_path / "r3m_18.pt", seed=2)  # the published file's name
    t = R3MTransform(
        "resnet18",
        in_keys=["left", "right"],
        size=32,
        download=True,
        download_path=tmp_path,
        tensor_pixels_keys=["left_raw", "right_raw"],
    )
    left = torch.zeros(32, 32, 3, dtype=torch.uint8)
    right = torch.full((32, 32, 3), 200, dtype=torch.uint8)
    out = t(TensorDict(left=left, right=right))
    with torch.no_grad():
        expected = torch.cat(
            [net(preprocess(left, 32)[None])[0], net(preprocess(right, 32)[None])[0]]
        )
    assert out["r3m_vec"].shape == (1024,)
    assert torch.allclose(out["r3m_vec"], expected, atol=1e-5)
    assert torch.equal(out["right_raw"], right)


@pytest.mark.slow
def test_in_a_batched_pixel_env():
    pytest.importorskip("pygame", reason='needs pygame: pip install "rl-envs[gymnasium]"')
    from rl_envs import GymEnv, SerialEnv

    base = SerialEnv(2, lambda: GymEnv("CartPole-v1", from_pixels=True, pixels_only=False))
    env = TransformedEnv(base, R3MTransform("resnet18", size=32, stack_images=False))
    assert env.observation_spec["r3m_vec_0"].shape == (2, 512)
    assert "pixels" not in env.observation_spec.keys()
    check_env_specs(env)
    traj = env.rollout(2)
    assert traj["next", "r3m_vec_0"].shape == (2, 2, 512)
    env.close()


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="model_name must be one of"):
        R3MTransform("resnet101")
    with pytest.raises(ValueError, match=r"expected 1 out_keys \(stack_images=True, 2 in_keys\)"):
        R3MTransform("resnet18", in_keys=["a", "b"], out_keys=["x", "y"])
    with pytest.raises(FileNotFoundError, match=r"weights=.* is not a file"):
        R3MTransform("resnet18", weights=tmp_path / "missing.pt")
    with pytest.raises(ValueError, match=r"expected uint8 images \[..., H, W, 3\]"):
        R3MTransform("resnet18")(TensorDict(pixels=torch.zeros(3, 8, 8, dtype=torch.uint8)))
