"""VIPTransform and VIPRewardTransform with weights saved here (no download), in a batched env
whose images brighten as it counts."""

import pytest
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Categorical, Composite, EnvBase, TransformedEnv, Unbounded
from rl_envs.transforms import VIPRewardTransform, VIPTransform
from rl_envs.transforms._pretrained import preprocess
from rl_envs.transforms._resnet import ResNet


class BrightnessEnv(EnvBase):
    """Images of 8 x 8 pixels whose value is 30 x count; the action (0/1) adds to the count."""

    def __init__(self, batch_size=(2,)):
        super().__init__(batch_size=batch_size)
        b = tuple(self.batch_size)
        self.observation_spec = Composite(
            pixels=Unbounded(shape=(*b, 8, 8, 3), dtype=torch.uint8),
            count=Unbounded(shape=(*b, 1), dtype=torch.int64),
            shape=b,
        )
        self.action_spec = Categorical(2, shape=(*b, 1))
        self.reward_spec = Unbounded(shape=(*b, 1))

    def _obs(self, count):
        pixels = (
            (30 * count)
            .to(torch.uint8)
            .view(*count.shape[:-1], 1, 1, 1)
            .expand(*count.shape[:-1], 8, 8, 3)
        )
        return {"pixels": pixels.clone(), "count": count}

    def _reset(self, tensordict, **kwargs):
        count = torch.zeros(*self.batch_size, 1, dtype=torch.int64)
        return TensorDict(self._obs(count), batch_size=self.batch_size)

    def _step(self, tensordict: TensorDictBase):
        count = tensordict["count"] + tensordict["action"]
        done = torch.zeros_like(count, dtype=torch.bool)
        out = {**self._obs(count), "reward": torch.zeros(*self.batch_size, 1), "done": done}
        return TensorDict(out, batch_size=self.batch_size)

    def _set_seed(self, seed):
        pass


def _vip_checkpoint(path, seed=3):
    torch.manual_seed(seed)
    net = ResNet(50, fc=torch.nn.Linear(2048, 1024))
    state = {f"module.convnet.{k}": v for k, v in net.state_dict().items()}
    torch.save({"vip": state}, path)
    return net.eval()


@pytest.fixture(scope="module")
def vip_weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("vip") / "model.pt"
    return path, _vip_checkpoint(path)


def test_embedding_from_a_local_checkpoint(vip_weights):
    path, net = vip_weights
    t = VIPTransform("resnet50", size=32, weights=path)
    image = torch.full((2, 16, 16, 3), 90, dtype=torch.uint8)
    out = t(TensorDict(pixels=image, batch_size=[2]))
    with torch.no_grad():
        expected = net(preprocess(image, 32))
    assert out["vip_vec"].shape == (2, 1024)
    assert torch.allclose(out["vip_vec"], expected, atol=1e-5)


def test_reward_is_the_decrease_of_the_distance_to_the_goal(vip_weights, tmp_path):
    path, _ = vip_weights
    torch.save(torch.load(path), tmp_path / "model.pt")  # the published file's name
    t = VIPRewardTransform("resnet50", size=32, download=True, download_path=tmp_path)
    env = TransformedEnv(BrightnessEnv(), t)
    assert env.observation_spec["goal_embedding"].shape == (2, 1024)
    goal = torch.full((8, 8, 3), 90, dtype=torch.uint8)  # the image of count 3
    td = env.reset(TensorDict(goal_image=goal.expand(2, 8, 8, 3), batch_size=[2]))
    td["action"] = torch.tensor([[1], [0]])
    step = env.step(td)["next"]
    # embeddings of the images of counts 0 (before), 1 and 0 (after), and of the goal
    e = {c: t.embed(torch.full((8, 8, 3), 30 * c, dtype=torch.uint8)) for c in (0, 1, 3)}
    d0, d1 = (e[0] - e[3]).norm(), (e[1] - e[3]).norm()
    assert step["reward"][:, 0].tolist() == pytest.approx([(d0 - d1).item(), 0.0], abs=1e-4)
    assert torch.allclose(step["goal_embedding"][0], e[3], atol=1e-5)
    with pytest.raises(KeyError, match="reset needs the goal"):
        env.reset()


def test_a_goal_embedding_given_at_reset(vip_weights):
    path, _ = vip_weights
    env = TransformedEnv(BrightnessEnv(), VIPRewardTransform("resnet50", size=32, weights=path))
    goal = TensorDict(goal_embedding=torch.zeros(2, 1024), batch_size=[2])
    td = env.reset(goal)
    assert td["goal_embedding"].abs().sum().item() == 0.0
    traj = env.rollout(2, tensordict=td, auto_reset=False)
    assert traj["next", "reward"].shape == (2, 2, 1)


def test_errors():
    with pytest.raises(ValueError, match=r"VIPTransform: model_name must be one of \['resnet50'\]"):
        VIPTransform("resnet18")
