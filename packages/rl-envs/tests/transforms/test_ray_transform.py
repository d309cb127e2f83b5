import os
import sys

import pytest
import torch
from tensordict.nn import TensorDictModule
from testkit.ray_cluster import local_ray_cluster
from torch import nn

from rl_core import Composite, TransformedEnv, Unbounded, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms.ray_transform import RayModuleTransform, RayTransform


@pytest.fixture(scope="module")
def ray_cluster():
    with local_ray_cluster("rle-ray-", skip_reason='pip install "rl-envs[ray]"') as ray:
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


def _affine(weight: float, bias: float) -> TensorDictModule:
    linear = nn.Linear(1, 1)
    with torch.no_grad():
        linear.weight.fill_(weight)
        linear.bias.fill_(bias)
    return TensorDictModule(linear, in_keys=["observation"], out_keys=["lin"])


def _add_lin(spec: Composite) -> Composite:
    spec["lin"] = Unbounded(shape=spec["observation"].shape)
    return spec


def _policy(td):
    return td.set("action", torch.tensor([[1], [0]]))


@pytest.mark.ray
def test_module_runs_in_an_actor_shared_by_name(ray_cluster):
    t = RayModuleTransform(
        module=_affine(2.0, 1.0),
        observation_spec_transform=_add_lin,
        no_grad=True,
        num_cpus=0,
        actor_name="rle-affine",
    )
    assert t.actor_pid() != os.getpid()
    assert (t.in_keys, t.out_keys) == (["observation"], ["lin"])
    env = TransformedEnv(CountingEnv(max_count=50, batch_size=[2]), t)
    check_env_specs(env)
    traj = env.rollout(3, _policy)
    assert traj["next", "lin"][:, :, 0].tolist() == [[3.0, 5.0, 7.0], [1.0, 1.0, 1.0]]
    # a second transform of the same name reuses the actor (and its module)
    again = RayModuleTransform(module=_affine(0.0, 0.0), actor_name="rle-affine")
    assert again.actor_pid() == t.actor_pid()
    again.update_weights(_affine(10.0, 0.0).state_dict())
    assert env.rollout(1, _policy)["next", "lin"][:, 0, 0].tolist() == [10.0, 0.0]
    t.kill()


@pytest.mark.ray
def test_the_base_needs_a_subclass(ray_cluster):
    with pytest.raises(TypeError, match="RayTransform is a base; build a subclass"):
        RayTransform()
