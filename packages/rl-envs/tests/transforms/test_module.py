import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_core import Composite, TransformedEnv, Unbounded, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms import ModuleTransform


def _affine(weight: float, bias: float, in_key="observation", out_key="lin") -> TensorDictModule:
    linear = nn.Linear(1, 1)
    with torch.no_grad():
        linear.weight.fill_(weight)
        linear.bias.fill_(bias)
    return TensorDictModule(linear, in_keys=[in_key], out_keys=[out_key])


def _add_lin(spec: Composite) -> Composite:
    spec["lin"] = Unbounded(shape=spec["observation"].shape)
    return spec


def _policy(td):
    return td.set("action", torch.tensor([[1], [0]]))


def test_forward_path_on_a_batched_env():
    t = ModuleTransform(module=_affine(2.0, 1.0), observation_spec_transform=_add_lin, no_grad=True)
    assert (t.in_keys, t.out_keys, t.in_keys_inv) == (["observation"], ["lin"], [])
    env = TransformedEnv(CountingEnv(max_count=50, batch_size=[2]), t)
    check_env_specs(env)
    traj = env.rollout(3, _policy)
    # counts 1, 2, 3 (sub-env 0) and 0, 0, 0 (sub-env 1): 2 * count + 1
    assert traj["next", "lin"][:, :, 0].tolist() == [[3.0, 5.0, 7.0], [1.0, 1.0, 1.0]]
    assert traj["lin"][:, 0, 0].tolist() == [1.0, 1.0]  # the reset's
    assert not traj["next", "lin"].requires_grad


def test_gradients_flow_unless_no_grad():
    t = ModuleTransform(module=_affine(2.0, 1.0))
    out = t(TensorDict(observation=torch.tensor([[3.0]]), batch_size=[1]))
    out["lin"].sum().backward()
    assert t.module.module.weight.grad.item() == 3.0


def test_inverse_path_maps_the_policy_output_to_the_env_action():
    # the policy writes "raw" (a float); the module maps it to the env's integer action
    to_action = TensorDictModule(
        lambda raw: (raw > 0).to(torch.int64), in_keys=["raw"], out_keys=["action"]
    )

    def policy_spec(spec: Composite) -> Composite:
        return Composite(raw=Unbounded(shape=spec["action"].shape), shape=spec.shape)

    t = ModuleTransform(module=to_action, inverse=True, action_spec_transform=policy_spec)
    assert (t.in_keys, t.in_keys_inv, t.out_keys_inv) == ([], ["action"], ["raw"])
    env = TransformedEnv(CountingEnv(max_count=50, batch_size=[2]), t)
    check_env_specs(env)
    traj = env.rollout(3, lambda td: td.set("raw", torch.tensor([[0.5], [-0.5]])))
    assert traj["next", "observation"][:, :, 0].tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]


def test_module_factory_spec_object_and_update_weights():
    spec = Composite(observation=Unbounded(shape=(2, 1)), lin=Unbounded(shape=(2, 1)), shape=(2,))
    t = ModuleTransform(module_factory=lambda: _affine(1.0, 0.0), observation_spec_transform=spec)
    env = TransformedEnv(CountingEnv(max_count=50, batch_size=[2]), t)
    check_env_specs(env)
    t.update_weights(_affine(10.0, 0.0).state_dict())
    assert env.rollout(1, _policy)["next", "lin"][:, 0, 0].tolist() == [10.0, 0.0]
    t.update_weights(TensorDict.from_module(_affine(0.0, 4.0)))
    assert env.rollout(1, _policy)["next", "lin"][:, 0, 0].tolist() == [4.0, 4.0]


def test_device_puts_outputs_back_on_the_data_device():
    t = ModuleTransform(module=_affine(2.0, 0.0), device="cpu")
    out = t(TensorDict(observation=torch.ones(2, 1), batch_size=[2], device="cpu"))
    assert out["lin"].device.type == "cpu"
    assert out["lin"][:, 0].tolist() == [2.0, 2.0]


def test_errors():
    with pytest.raises(
        ValueError, match="expected exactly one of module and module_factory, got neither"
    ):
        ModuleTransform()
    with pytest.raises(ValueError, match="got both"):
        ModuleTransform(module=_affine(1, 0), module_factory=lambda: _affine(1, 0))
    with pytest.raises(
        ValueError, match=r"\['use_ray_service', 'num_cpus'\] run the module in a Ray"
    ):
        ModuleTransform(module=_affine(1, 0), use_ray_service=True, num_cpus=1)
    with pytest.raises(TypeError, match="expected a TensorDict module with in_keys and out_keys"):
        ModuleTransform(module=nn.Linear(1, 1))
    with pytest.raises(TypeError, match="expected reward_spec_transform as a spec, a function"):
        ModuleTransform(module=_affine(1, 0), reward_spec_transform=3)
