"""QValueHook and DistributionalQValueHook on plain networks, with weights set by hand."""

import pytest
import torch
from torch import nn

from rl_objectives.modules.qvalue_hooks import DistributionalQValueHook, QValueHook


def test_qvalue_hook_greedy_action_by_hand():
    net = nn.Linear(1, 3, bias=False)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[1.0], [-1.0], [0.5]]))
    net.register_forward_hook(QValueHook("one-hot"))
    # x = 2: values (2, -2, 1) -> action 0; x = -2: values (-2, 2, -1) -> action 1
    action, values, chosen = net(torch.tensor([[2.0], [-2.0]]))
    assert action.tolist() == [[True, False, False], [False, True, False]]
    assert values.tolist() == [[2.0, -2.0, 1.0], [-2.0, 2.0, -1.0]]
    assert chosen.tolist() == [[2.0], [2.0]]
    cat = nn.Linear(1, 3, bias=False)
    cat.weight.data.copy_(net.weight.data)
    cat.register_forward_hook(QValueHook("categorical"))
    assert cat(torch.tensor([[2.0], [-2.0]]))[0].tolist() == [0, 1]


def test_distributional_hook_expected_value_by_hand():
    support = torch.tensor([-1.0, 1.0])
    probs = torch.tensor([[0.9, 0.2], [0.1, 0.8]])  # [atoms, actions]: E = (-0.8, 0.6)
    net = nn.Identity()
    net.register_forward_hook(DistributionalQValueHook("categorical", support))
    action, log_probs = net(probs.log()[None])
    assert action.tolist() == [1]
    torch.testing.assert_close(log_probs, probs.log()[None])


def test_hooks_refuse_a_mask_key():
    with pytest.raises(ValueError, match="action_mask_key='mask' cannot be read"):
        QValueHook("one_hot", action_mask_key="mask")
    with pytest.raises(ValueError, match="action_mask_key='mask' cannot be read"):
        DistributionalQValueHook("one_hot", torch.zeros(2), action_mask_key="mask")
