"""next_state_value and default_value_kwargs against hand-computed targets."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_objectives import ValueEstimators, default_value_kwargs, next_state_value


def _batch():
    td = TensorDict(observation=torch.tensor([[0.0], [1.0], [2.0]]), batch_size=[3])
    td["next", "observation"] = torch.tensor([[1.0], [2.0], [3.0]])
    td["next", "reward"] = torch.tensor([[1.0], [0.5], [-1.0]])
    td["next", "done"] = torch.tensor([[False], [False], [True]])
    return td


def test_one_step_targets_bootstrap_from_the_operator_on_the_next_state():
    value = TensorDictModule(lambda obs: 10 * obs, ["observation"], ["state_value"])
    target = next_state_value(_batch(), value, next_val_key="state_value", gamma=0.9)
    # r + 0.9 * V(s') where not done: 1 + 0.9 * 10, 0.5 + 0.9 * 20, -1
    torch.testing.assert_close(target, torch.tensor([10.0, 18.5, -1.0]))


def test_n_step_targets_discount_by_the_steps_to_the_next_observation():
    td = _batch().set("steps_to_next_obs", torch.tensor([[1], [3], [2]]))
    target = next_state_value(td, gamma=0.5, pred_next_val=torch.tensor([[4.0], [8.0], [8.0]]))
    torch.testing.assert_close(target, torch.tensor([1 + 0.5 * 4, 0.5 + 0.125 * 8, -1.0]))


def test_all_done_or_zero_gamma_is_the_reward():
    td = _batch()
    torch.testing.assert_close(next_state_value(td, gamma=0.0), torch.tensor([1.0, 0.5, -1.0]))
    td["next", "done"] = torch.ones(3, 1, dtype=torch.bool)
    torch.testing.assert_close(next_state_value(td), torch.tensor([1.0, 0.5, -1.0]))


def test_next_state_value_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"gamma in \[0, 1\], got 1.5"):
        next_state_value(_batch(), gamma=1.5)
    with pytest.raises(ValueError, match=r"an operator .* or pred_next_val, got neither"):
        next_state_value(_batch())
    with pytest.raises(KeyError, match="no \\('next', 'done'\\) entry"):
        next_state_value(_batch().exclude(("next", "done")))


def test_default_value_kwargs_are_what_make_value_estimator_uses():
    assert default_value_kwargs(ValueEstimators.TD0) == {"gamma": 0.99}
    assert default_value_kwargs("GAE") == {"gamma": 0.99, "lmbda": 0.95}
    assert default_value_kwargs(ValueEstimators.MAGAE) == {"gamma": 0.99, "lmbda": 0.95}
    assert default_value_kwargs(ValueEstimators.VTrace) == {"gamma": 0.99}
    kwargs = default_value_kwargs(ValueEstimators.TDLambda)
    kwargs["gamma"] = 0.5  # a new dict each time
    assert default_value_kwargs(ValueEstimators.TDLambda)["gamma"] == 0.99
    with pytest.raises(ValueError, match=r"one of \['TD0', .*got 'TD2'"):
        default_value_kwargs("TD2")
