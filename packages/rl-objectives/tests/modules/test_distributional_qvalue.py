import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.modules import MLP
from rl_core.specs import Categorical, Composite, MultiCategorical, MultiOneHot, OneHot
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
    with pytest.raises(TypeError, match=r"multi-categorical action spaces are not supported"):
        DistributionalQValueModule(MultiCategorical([2, 2]), torch.zeros(3))
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


@pytest.mark.parametrize("given", ["var_nums", "spec", "both", "torchrl"])
def test_mult_one_hot_picks_each_sub_action_against_a_float64_reference(given):
    torch.manual_seed(1)
    support = torch.linspace(-1.0, 2.0, 5)
    log_probs = torch.randn(6, 5, 2 + 3).log_softmax(-2)  # sub-actions of 2 and 3 choices
    if given == "var_nums":
        module = DistributionalQValueModule("mult_one_hot", support, var_nums=[2, 3])
    elif given == "spec":
        module = DistributionalQValueModule(MultiOneHot([2, 3]), support)
    elif given == "both":
        module = DistributionalQValueModule(
            "mult-one-hot", support, spec=MultiOneHot([2, 3]), var_nums=torch.tensor([2, 3])
        )
    else:  # TorchRL's test: a Composite spec, the space named, var_nums = the spec's nvec
        spec = MultiOneHot([2, 3])
        module = DistributionalQValueModule(
            "mult_one_hot",
            support,
            spec=Composite({"action": spec, "action_value": None}, shape=[]),
            var_nums=spec.nvec,
        )
    assert module.var_nums == [2, 3]
    action = module(TensorDict(action_value=log_probs, batch_size=[6]))["action"]
    first = _reference_action(log_probs[..., :2], support)
    second = _reference_action(log_probs[..., 2:], support)
    expected = torch.cat(
        [torch.nn.functional.one_hot(first, 2), torch.nn.functional.one_hot(second, 3)], -1
    )
    assert torch.equal(action.long(), expected)
    assert action.dtype == MultiOneHot([2, 3]).dtype


def test_mult_one_hot_actor_and_its_loss():
    from rl_objectives import DistributionalDQNLoss

    support = torch.linspace(1.0, 5.0, 5)
    torch.manual_seed(0)
    multi = DistributionalQValueActor(
        MLP(3, (5, 4)), support, action_space="mult_one_hot", var_nums=[2, 2]
    )
    one_hot = DistributionalQValueActor(MLP(3, (5, 4)), support, spec=OneHot(4))
    one_hot.load_state_dict(multi.state_dict())
    g = torch.Generator().manual_seed(3)
    td = TensorDict(
        observation=torch.randn(4, 3, generator=g),
        action=torch.nn.functional.one_hot(torch.randint(4, (4,), generator=g), 4),
        next=TensorDict(
            observation=torch.randn(4, 3, generator=g),
            reward=torch.randn(4, 1, generator=g),
            done=torch.zeros(4, 1, dtype=torch.bool),
            terminated=torch.zeros(4, 1, dtype=torch.bool),
            batch_size=[4],
        ),
        batch_size=[4],
    )
    out = multi(td.exclude("action"))["action"]
    assert out.shape == (4, 4)
    assert torch.equal(out.long().sum(-1), torch.full((4,), 2))  # one choice per sub-action
    # the loss reads the value distributions only: the same as with a one-hot actor
    a = DistributionalDQNLoss(multi, gamma=0.9, delay_value=False)(td.clone())["loss"]
    b = DistributionalDQNLoss(one_hot, gamma=0.9, delay_value=False)(td.clone())["loss"]
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"action_space": "mult_one_hot"}, r"needs var_nums .* or a MultiOneHot spec"),
        ({"spec": MultiOneHot([2, 2]), "var_nums": [3, 1]}, r"var_nums=\[3, 1\] differs"),
        ({"action_space": "one_hot", "var_nums": [2, 2]}, r"var_nums is for a multi-one-hot"),
        ({"action_space": "mult_one_hot", "var_nums": [2, 0]}, r"positive ints"),
        ({"action_space": "mult_one_hot", "spec": OneHot(4)}, r"contradicts the OneHot spec"),
    ],
)
def test_var_nums_errors(kwargs, match):
    kwargs = dict(kwargs)
    space = kwargs.pop("action_space", None)
    with pytest.raises(ValueError, match=rf"DistributionalQValueModule: .*{match}"):
        DistributionalQValueModule(space, torch.zeros(3), **kwargs)


def test_mult_one_hot_values_of_the_wrong_width():
    module = DistributionalQValueModule("mult_one_hot", torch.zeros(3), var_nums=[2, 2])
    with pytest.raises(ValueError, match=r"sum\(var_nums\)=4 actions .* got 5"):
        module(TensorDict(action_value=torch.zeros(2, 3, 5).log_softmax(-2), batch_size=[2]))
