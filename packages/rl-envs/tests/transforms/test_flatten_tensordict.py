import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_core.testing import CountingEnv
from rl_envs.transforms import FlattenTensorDict


def _batch() -> TensorDict:
    # 2 envs x 3 steps; the value of row (i, t) is 10 * i + t
    value = (10 * torch.arange(2).unsqueeze(1) + torch.arange(3)).float().unsqueeze(-1)
    return TensorDict({"observation": value, ("next", "reward"): value + 0.5}, batch_size=[2, 3])


def test_inverse_flattens_the_batch_in_row_major_order_forward_is_identity():
    t = FlattenTensorDict()
    data = _batch()
    flat = t.inv(data)
    assert flat.batch_size == (6,)
    assert flat["observation"][:, 0].tolist() == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]
    assert flat["next", "reward"][:, 0].tolist() == [0.5, 1.5, 2.5, 10.5, 11.5, 12.5]
    assert data.batch_size == (2, 3)  # the input is left as it is
    assert t(data).batch_size == (2, 3)
    assert t.has_inverse


def test_inverse_false_flattens_on_the_forward_path():
    t = FlattenTensorDict(inverse=False)
    assert t(_batch()).batch_size == (6,)
    assert t.inv(_batch()).batch_size == (2, 3)
    assert t(TensorDict(observation=torch.zeros(2))).batch_size == (1,)


def test_refuses_an_env():
    env = TransformedEnv(CountingEnv(batch_size=[2]), FlattenTensorDict())
    with pytest.raises(RuntimeError, match="FlattenTensorDict flattens the batch of data written"):
        env.reset()
