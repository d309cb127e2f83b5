"""RayModuleTransformScheme (rl-collectors) pushes a trainer's weights into the module of a
RayModuleTransform (rl-envs) that runs in its own Ray actor: the env's outputs change to the
new weights, bit for bit, and a dead actor is named."""

import sys

import pytest
import torch
from tensordict.nn import TensorDictModule
from testkit.ray_cluster import local_ray_cluster
from torch import nn

from rl_collectors.weight_sync import RayModuleTransformScheme
from rl_core import Composite, TransformedEnv, Unbounded
from rl_core.testing import CountingEnv
from rl_envs.transforms.ray_transform import RayModuleTransform


@pytest.fixture(scope="module")
def ray_cluster():
    with local_ray_cluster("rlc-rmt-", skip_reason='pip install "rl-envs[ray]"') as ray:
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


def scaled(weight: float) -> TensorDictModule:
    linear = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        linear.weight.fill_(weight)
    return TensorDictModule(linear, in_keys=["observation"], out_keys=["scaled"])


def add_scaled(spec: Composite) -> Composite:
    spec["scaled"] = Unbounded(shape=spec["observation"].shape)
    return spec


def step_one(td):
    return td.set("action", torch.ones(2, 1, dtype=torch.long))


@pytest.mark.ray
def test_weights_reach_the_transforms_actor_and_a_dead_actor_is_named(ray_cluster):
    transform = RayModuleTransform(
        module=scaled(1.0), observation_spec_transform=add_scaled, no_grad=True, num_cpus=0
    )
    env = TransformedEnv(CountingEnv(max_count=50, batch_size=[2]), transform)
    trainer = scaled(1.0)
    scheme = RayModuleTransformScheme(transform=transform)
    scheme.init_on_sender(model=trainer)
    new = torch.tensor([[0.1234567]])
    with torch.no_grad():
        trainer.module.weight.copy_(new)
    assert scheme.send() == 1
    out = env.rollout(2, step_one)["next", "scaled"]
    # CountingEnv counts 1, 2: the actor's module scales them by exactly the sent weight.
    assert torch.equal(out[:, :, 0], torch.tensor([[1.0, 2.0], [1.0, 2.0]]) * new[0, 0])
    assert scheme.version == 1
    transform.kill()
    with pytest.raises(RuntimeError, match="weights version 2 to the actor of RayModuleTransform"):
        scheme.send()


def test_a_scheme_without_a_transform_says_how_to_give_it_one():
    scheme = RayModuleTransformScheme()
    with pytest.raises(RuntimeError, match="build the scheme with transform="):
        scheme.init_on_sender(model=nn.Linear(1, 1))
    with pytest.raises(TypeError, match=r"expected a RayModuleTransform .* got Linear"):
        scheme.set_transform(nn.Linear(1, 1))
