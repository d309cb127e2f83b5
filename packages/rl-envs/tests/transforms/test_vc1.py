"""VC1Transform with weights saved here (no download): random ViTs of the right architecture in
eai-vc's checkpoint layout ({"model": state} with the MAE decoder's entries), checked against
the same ViT computed with torch's own TransformerEncoderLayer (pre-norm, GELU, eps 1e-6)."""

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_core import TransformedEnv, check_env_specs
from rl_envs.transforms import VC1Transform
from rl_envs.transforms._vit import VIT_SIZES

MEAN = torch.tensor([0.485, 0.456, 0.406])
STD = torch.tensor([0.229, 0.224, 0.225])


def _mae_checkpoint(name: str, path, seed: int = 1) -> dict[str, torch.Tensor]:
    """A random encoder state in eai-vc's layout, plus the MAE entries the loader drops."""
    width, depth, _ = VIT_SIZES[name]
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=0.05):
        return torch.randn(*shape, generator=g) * scale

    state = {
        "cls_token": rnd(1, 1, width, scale=1.0),
        "pos_embed": rnd(1, 197, width, scale=1.0),
        "patch_embed.proj.weight": rnd(width, 3, 16, 16),
        "patch_embed.proj.bias": rnd(width),
        "norm.weight": 1 + rnd(width),
        "norm.bias": rnd(width),
    }
    for i in range(depth):
        b = f"blocks.{i}."
        state |= {
            b + "norm1.weight": 1 + rnd(width),
            b + "norm1.bias": rnd(width),
            b + "attn.qkv.weight": rnd(3 * width, width, scale=0.2),
            b + "attn.qkv.bias": rnd(3 * width),
            b + "attn.proj.weight": rnd(width, width, scale=0.2),
            b + "attn.proj.bias": rnd(width),
            b + "norm2.weight": 1 + rnd(width),
            b + "norm2.bias": rnd(width),
            b + "mlp.fc1.weight": rnd(4 * width, width, scale=0.2),
            b + "mlp.fc1.bias": rnd(4 * width),
            b + "mlp.fc2.weight": rnd(width, 4 * width, scale=0.2),
            b + "mlp.fc2.bias": rnd(width),
        }
    mae = {"mask_token": rnd(1, 1, 8), "decoder_embed.weight": rnd(8, width)}
    torch.save({"model": state | mae, "epoch": 181}, path)
    return state


@torch.no_grad()
def _vit_by_hand(state: dict[str, torch.Tensor], name: str, x: torch.Tensor) -> torch.Tensor:
    """[B, 3, 224, 224] -> class token, with torch's TransformerEncoderLayer as the block."""
    width, depth, heads = VIT_SIZES[name]
    tokens = nn.functional.conv2d(
        x, state["patch_embed.proj.weight"], state["patch_embed.proj.bias"], stride=16
    )
    tokens = tokens.flatten(2).transpose(1, 2) + state["pos_embed"][:, 1:]
    cls = (state["cls_token"] + state["pos_embed"][:, :1]).expand(len(x), -1, -1)
    tokens = torch.cat([cls, tokens], 1)
    for i in range(depth):
        b = f"blocks.{i}."
        layer = nn.TransformerEncoderLayer(
            width, heads, 4 * width, dropout=0.0, activation="gelu", layer_norm_eps=1e-6,
            batch_first=True, norm_first=True,
        ).eval()  # fmt: skip
        layer.load_state_dict(
            {
                "self_attn.in_proj_weight": state[b + "attn.qkv.weight"],
                "self_attn.in_proj_bias": state[b + "attn.qkv.bias"],
                "self_attn.out_proj.weight": state[b + "attn.proj.weight"],
                "self_attn.out_proj.bias": state[b + "attn.proj.bias"],
                "linear1.weight": state[b + "mlp.fc1.weight"],
                "linear1.bias": state[b + "mlp.fc1.bias"],
                "linear2.weight": state[b + "mlp.fc2.weight"],
                "linear2.bias": state[b + "mlp.fc2.bias"],
                "norm1.weight": state[b + "norm1.weight"],
                "norm1.bias": state[b + "norm1.bias"],
                "norm2.weight": state[b + "norm2.weight"],
                "norm2.bias": state[b + "norm2.bias"],
            }
        )
        tokens = layer(tokens)
    out = nn.functional.layer_norm(
        tokens, (width,), state["norm.weight"], state["norm.bias"], eps=1e-6
    )
    return out[:, 0]


def test_constant_image_preprocessing_and_embedding_by_hand(tmp_path):
    state = _mae_checkpoint("default", tmp_path / "tiny.pth")
    t = VC1Transform(model_name="default", weights=tmp_path / "tiny.pth")
    # a constant colour stays constant through the resize and the crop: its normalised value
    colour = torch.tensor([255, 0, 51], dtype=torch.uint8)
    pixels = colour.expand(2, 40, 30, 3)
    x = ((colour / 255.0 - MEAN) / STD).view(1, 3, 1, 1).expand(1, 3, 224, 224)
    expected = _vit_by_hand(state, "default", x)[0]
    out = t(TensorDict(pixels=pixels, batch_size=[2]))
    assert "pixels" not in out.keys()
    assert out["VC1_vec"].shape == (2, 16)
    torch.testing.assert_close(out["VC1_vec"][1], expected, rtol=1e-4, atol=1e-5)


def test_non_constant_image_is_resized_to_256_and_center_cropped(tmp_path):
    state = _mae_checkpoint("default", tmp_path / "tiny.pth", seed=3)
    t = VC1Transform(
        ["image"], ["embedding"], "default", del_keys=False, weights=tmp_path / "tiny.pth"
    )
    image = torch.rand(3, 64, 48, generator=torch.Generator().manual_seed(0))  # float [0, 1]
    resized = nn.functional.interpolate(image[None], size=(256, 256), mode="bilinear")
    crop = resized[..., 16:240, 16:240]
    expected = _vit_by_hand(state, "default", (crop - MEAN.view(3, 1, 1)) / STD.view(3, 1, 1))
    out = t(TensorDict(image=image))
    assert torch.equal(out["image"], image)  # del_keys=False keeps it
    torch.testing.assert_close(out["embedding"], expected[0], rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_base_vit_loads_the_published_file_from_torch_hub_cache(tmp_path):
    state = _mae_checkpoint("base", tmp_path / "vc1_vitb.pth")  # the published file's name
    t = VC1Transform(model_name="base", download_path=tmp_path)
    assert t.embd_size == 768
    for name, value in state.items():
        assert torch.equal(t.model.state_dict()[name], value), name
    colour = torch.tensor([10, 200, 90], dtype=torch.uint8)
    x = ((colour / 255.0 - MEAN) / STD).view(1, 3, 1, 1).expand(1, 3, 224, 224)
    out = t(TensorDict(pixels=colour.expand(24, 24, 3)))
    torch.testing.assert_close(
        out["VC1_vec"], _vit_by_hand(state, "base", x)[0], rtol=1e-4, atol=1e-4
    )


@pytest.mark.slow
def test_in_a_batched_pixel_env():
    pytest.importorskip("pygame", reason='needs pygame: pip install "rl-envs[gymnasium]"')
    from rl_envs import GymEnv, SerialEnv

    base = SerialEnv(2, lambda: GymEnv("CartPole-v1", from_pixels=True, pixels_only=False))
    env = TransformedEnv(base, VC1Transform(model_name="default"))
    assert env.observation_spec["VC1_vec"].shape == (2, 16)
    assert "pixels" not in env.observation_spec.keys()
    check_env_specs(env)
    traj = env.rollout(2)
    assert traj["next", "VC1_vec"].shape == (2, 2, 16)
    env.close()


def test_errors_name_the_argument_and_the_url(tmp_path, monkeypatch):
    with pytest.raises(
        ValueError, match=r"model_name must be one of \['base', 'default', 'large'\], got 'huge'"
    ):
        VC1Transform(model_name="huge")
    with pytest.raises(ValueError, match="out_keys must be given"):
        VC1Transform(["a", "b"])
    with pytest.raises(FileNotFoundError, match=r"absent\.pth"):
        VC1Transform(model_name="large", weights=tmp_path / "absent.pth")
    _mae_checkpoint("default", tmp_path / "tiny.pth")
    with pytest.raises(ValueError, match="does not fit the 'base' ViT"):
        VC1Transform(model_name="base", weights=tmp_path / "tiny.pth")
    # offline: every connection goes to a closed local port
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    with pytest.raises(
        RuntimeError, match=r"https://dl\.fbaipublicfiles\.com/eai-vc/vc1_vitl\.pth"
    ):
        VC1Transform(model_name="large", download_path=tmp_path)
