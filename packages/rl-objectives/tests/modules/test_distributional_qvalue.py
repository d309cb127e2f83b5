import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.modules import MLP
from rl_core.specs import Categorical, MultiOneHot, OneHot
from rl_objectives.modules import DistributionalQValueActor, DistributionalQValueModule


def _reference_action(log_probs, support, mask=None):
    """Float64 C51 greedy action: argmax_a sum_i exp(log_probs[..., i, a]) * z_i."""
    lp = log_probs.detach().double()
    expected = [
        [
            sum(float(lp[b, i, a].exp()) * float(support[i]) for i in range(lp.shape[1]))
            for a in range(lp.shape[2])
        ]
        for b in range(lp.shape[0])
    ]
    out = []
    for b, row in enumerate(expected):
        allowed = range(len(row)) if mask is None else [a for a in range(len(row)) if mask[b, a]]
        out.append(max(allowed, key=lambda a: row[a]))
    return torch.tensor(out)


def test_torchrl_docstring_case():
    # 3 atoms at (-1, 0, 1), 4 actions: action j puts its mass on atom j (action 3 on none).
    value = torch.full((3, 4), -100.0)
    value[0, 0] = value[1, 1] = value[2, 2] = 0.0
    module = DistributionalQValueModule("categorical", torch.tensor([-1.0, 0.0, 1.0]))
    td = module(TensorDict(action_value=value))
    assert td["action"].item() == 2
    assert torch.equal(td["action_value"], value)


@pytest.mark.parametrize("masked", [False, True])
def test_greedy_action_against_a_float64_reference(masked):
    torch.manual_seed(0)
    support = torch.linspace(-2.0, 3.0, 7)
    log_probs = torch.randn(16, 7, 5).log_softmax(-2)
    mask = torch.rand(16, 5) > 0.4 if masked else None
    if mask is not None:
        mask[:, 0] = True  # every row keeps an allowed action
    module = DistributionalQValueModule(
        "categorical", support, action_mask_key="action_mask" if masked else None
    )
    td = TensorDict(action_value=log_probs, batch_size=[16])
    if masked:
        td["action_mask"] = mask
    got = module(td)["action"]
    assert torch.equal(got, _reference_action(log_probs, support, mask))


def test_actor_applies_the_log_softmax_and_encodes_like_the_spec():
    torch.manual_seed(1)
    support = torch.linspace(-1.0, 1.0, 5)
    net = MLP(4, (5, 3), depth=1, num_cells=8)
    actor = DistributionalQValueActor(net, support, spec=OneHot(3))
    obs = torch.randn(6, 4)
    td = actor(TensorDict(observation=obs, batch_size=[6]))
    log_probs = net(obs).log_softmax(-2)
    torch.testing.assert_close(td["action_value"], log_probs)
    expected = torch.nn.functional.one_hot(_reference_action(log_probs, support), 3).bool()
    assert torch.equal(td["action"], expected)
    # in_keys=None and action_value_key=None are the defaults, as in TorchRL.
    same = DistributionalQValueActor(
        net, support, in_keys=None, spec=Categorical(3), action_value_key=None
    )
    out = same(TensorDict(observation=obs, batch_size=[6]))
    assert torch.equal(out["action"], _reference_action(log_probs, support))


def test_actor_takes_a_tensordict_module_that_ends_in_a_log_softmax():
    net = TensorDictModule(
        lambda x: x.reshape(*x.shape[:-1], 2, 3).log_softmax(-2), ["observation"], ["q"]
    )
    actor = DistributionalQValueActor(
        net,
        torch.tensor([0.0, 1.0]),
        spec=Categorical(3),
        action_value_key="q",
        make_log_softmax=False,
    )
    obs = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 5.0]])  # action 2: its mass on z=1
    assert actor(TensorDict(observation=obs, batch_size=[1]))["action"].tolist() == [2]
    assert len(actor.module) == 2


def test_errors():
    with pytest.raises(ValueError, match=r"DistributionalQValueModule: expected support"):
        DistributionalQValueModule("categorical")
    with pytest.raises(TypeError, match=r"multi-discrete action spaces are not supported"):
        DistributionalQValueModule(MultiOneHot([2, 2]), torch.zeros(3))
    module = DistributionalQValueModule("one_hot", torch.zeros(3))
    with pytest.raises(ValueError, match=r"expected log-probabilities"):
        module(TensorDict(action_value=torch.ones(3, 2)))
    with pytest.raises(ValueError, match=r"n_atoms=3"):
        module(TensorDict(action_value=torch.zeros(4, 2)))
    with pytest.raises(
        ValueError, match=r"expected it to write the action values at 'action_value'"
    ):
        DistributionalQValueActor(
            TensorDictModule(torch.nn.Identity(), ["observation"], ["x"]), torch.zeros(3)
        )
