import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, Unbounded, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms import ObservationTransform


class _PlusTen(ObservationTransform):
    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value + 10


def test_default_keys_skip_the_entries_an_env_lacks():
    t = _PlusTen()
    assert t.in_keys == ["observation", "pixels"]
    out = t(TensorDict(observation=torch.tensor([1.0]), pixels=torch.zeros(1, 2, 2)))
    assert out["observation"].tolist() == [11.0]
    assert out["pixels"].sum().item() == 40.0


def test_subclass_in_a_batched_env():
    policy = lambda td: td.set("action", torch.tensor([[1], [0]]))  # noqa: E731
    t = _PlusTen(in_keys=["observation", "pixels"], out_keys=["shifted", "pixels_shifted"])
    env = TransformedEnv(CountingEnv(max_count=50, batch_size=[2]), t)
    check_env_specs(env)  # "pixels" is not there: only "observation" is mapped
    assert "pixels_shifted" not in env.observation_spec.keys()
    traj = env.rollout(3, policy)
    assert traj["next", "shifted"][:, :, 0].tolist() == [[11.0, 12.0, 13.0], [10.0] * 3]
    assert traj["shifted"][:, :, 0].tolist() == [[10.0, 11.0, 12.0], [10.0] * 3]


def test_out_keys_get_the_input_spec():
    env = TransformedEnv(
        CountingEnv(batch_size=[2]), _PlusTen(in_keys=["observation"], out_keys=["shifted"])
    )
    spec = env.observation_spec["shifted"]
    assert spec == Unbounded(shape=(2, 1))
    check_env_specs(env)
    with pytest.raises(ValueError, match="expected as many out_keys as in_keys"):
        _PlusTen(in_keys=["observation"], out_keys=["a", "b"])
