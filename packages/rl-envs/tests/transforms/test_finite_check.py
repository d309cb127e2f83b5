"""FiniteTensorDictCheck: a NaN or an infinity in an env output raises at once."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.transforms import FiniteTensorDictCheck, RewardScaling


def test_passes_finite_outputs_and_raises_on_the_first_non_finite_step():
    env = TransformedEnv(CountingEnv(max_count=100, batch_size=[3]), FiniteTensorDictCheck())
    check_env_specs(env)
    assert env.rollout(4, lambda td: td.set("action", torch.ones(3, 1, dtype=torch.int64)))[
        "next", "observation"
    ].shape == (3, 4, 1)
    # A reward scaled by inf becomes non-finite: the step raises, naming the entry.
    bad = TransformedEnv(
        CountingEnv(max_count=100, batch_size=[3]),
        RewardScaling(loc=0.0, scale=float("inf")),
    ).append_transform(FiniteTensorDictCheck())
    td = bad.reset().set("action", torch.ones(3, 1, dtype=torch.int64))
    with pytest.raises(
        ValueError, match=r"FiniteTensorDictCheck: non-finite values .* \['reward'\]"
    ):
        bad.step(td)


def test_checks_nested_entries_of_data_and_ignores_integers():
    t = FiniteTensorDictCheck()
    ok = TensorDict(a=torch.zeros(2), b=torch.full((2,), 7, dtype=torch.int64))
    assert t(ok) is ok
    with pytest.raises(ValueError, match=r"\[\('next', 'obs'\)\]"):
        t(TensorDict(next=TensorDict(obs=torch.tensor([0.0, float("nan")]))))
