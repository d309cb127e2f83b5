import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_core.modules import MLP, QValueActor, QValueModule
from rl_core.modules.qvalue import greedy_action
from rl_core.specs import Bounded, Categorical, Composite, MultiCategorical, MultiOneHot, OneHot

N = 5


def _values_and_mask(batch=(200,), seed=0):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(*batch, N, generator=g)
    mask = torch.rand(*batch, N, generator=g) < 0.5
    mask[..., 0] |= ~mask.any(-1)  # every row keeps an allowed action
    return values, mask


def test_greedy_action_ignores_masked_actions():
    values, mask = _values_and_mask()
    values[..., 1] = 100.0  # the best action overall, often masked
    index, chosen = greedy_action(values, mask)
    assert mask.gather(-1, index.unsqueeze(-1)).all()
    expected = values.masked_fill(~mask, float("-inf")).amax(-1, keepdim=True)
    torch.testing.assert_close(chosen, expected)
    index, chosen = greedy_action(values)
    assert (index == 1).all()


@pytest.mark.parametrize("space", ["one_hot", OneHot(N), Composite(action=OneHot(N))])
def test_one_hot_actions(space):
    values, _ = _values_and_mask()
    td = QValueModule(space)(TensorDict(action_value=values, batch_size=[200]))
    assert td["action"].dtype is torch.bool
    assert td["action"].shape == (200, N)
    assert (td["action"].sum(-1) == 1).all()
    torch.testing.assert_close(td["action"].long().argmax(-1), values.argmax(-1))
    torch.testing.assert_close(td["chosen_action_value"], values.amax(-1, keepdim=True))
    assert td["action_value"] is values


@pytest.mark.parametrize("dtype", [None, torch.bool, torch.int64, torch.uint8, torch.float32])
def test_greedy_one_hot_matches_argmax_one_hot_with_ties_and_nans(dtype):
    # The oracle: one_hot(argmax) and the gathered value, on values with ties and NaNs.
    values = torch.randint(0, 3, (300, N)).float()
    values[::7, 2] = float("nan")
    index, chosen = greedy_action(values)
    reference = values.argmax(-1)
    assert torch.equal(index, reference)
    torch.testing.assert_close(chosen, values.gather(-1, reference.unsqueeze(-1)), equal_nan=True)
    spec = None if dtype is None else OneHot(N, shape=(300, N), dtype=dtype)
    module = QValueModule("one_hot") if spec is None else QValueModule(spec=spec)
    out = module(TensorDict(action_value=values, batch_size=[300]))
    expected = torch.nn.functional.one_hot(reference, N).to(dtype or torch.bool)
    assert out["action"].dtype == expected.dtype
    assert torch.equal(out["action"], expected)


@pytest.mark.parametrize("contiguous", [True, False])
def test_bool_one_hot_from_comparison_or_scatter_is_one_hot_of_argmax(contiguous):
    # Contiguous values compare the index with arange(n); others scatter into zeros.
    values = torch.randn(N, 5, 2)[..., 0].t()  # (5, N), not contiguous
    if contiguous:
        values = values.contiguous()
    module = QValueModule(spec=OneHot(N))
    out = module(TensorDict(action_value=values, batch_size=[5]))
    expected = torch.nn.functional.one_hot(values.argmax(-1), N).bool()
    assert out["action"].dtype is torch.bool
    assert torch.equal(out["action"], expected)
    assert list(module.state_dict()) == []  # the cached arange is no state


def test_one_hot_dtype_follows_the_spec():
    values, _ = _values_and_mask((3,))
    td = QValueModule(OneHot(N, dtype=torch.int64))(TensorDict(action_value=values, batch_size=[3]))
    assert td["action"].dtype is torch.int64


@pytest.mark.parametrize("space", ["categorical", Categorical(N)])
def test_categorical_actions(space):
    values, _ = _values_and_mask((4, 6))
    td = QValueModule(space)(TensorDict(action_value=values, batch_size=[4, 6]))
    assert td["action"].dtype is torch.int64
    assert td["action"].shape == (4, 6)
    torch.testing.assert_close(td["action"], values.argmax(-1))
    torch.testing.assert_close(td["chosen_action_value"], values.amax(-1, keepdim=True))


def test_categorical_spec_with_trailing_singleton_keeps_it():
    values, _ = _values_and_mask((7,))
    td = QValueModule(Categorical(N, shape=(7, 1)))(TensorDict(action_value=values, batch_size=[7]))
    assert td["action"].shape == (7, 1)
    assert Categorical(N, shape=(7, 1)).is_in(td["action"])
    # a spec with env batch dims, data with an extra time dim
    values, _ = _values_and_mask((3, 7))
    td = QValueModule(Categorical(N, shape=(7,)))(
        TensorDict(action_value=values, batch_size=[3, 7])
    )
    assert td["action"].shape == (3, 7)


@pytest.mark.parametrize("space", [OneHot(N), Categorical(N)])
def test_masked_actions_are_never_chosen(space):
    values, mask = _values_and_mask((500,))
    module = QValueModule(space, action_mask_key="action_mask")
    assert module.in_keys == ["action_value", "action_mask"]
    td = module(TensorDict(action_value=values, action_mask=mask, batch_size=[500]))
    index = td["action"].long().argmax(-1) if isinstance(space, OneHot) else td["action"]
    assert mask.gather(-1, index.unsqueeze(-1)).all()
    best_allowed = values.masked_fill(~mask, float("-inf")).amax(-1, keepdim=True)
    torch.testing.assert_close(td["chosen_action_value"], best_allowed)
    assert (td["chosen_action_value"] < values.amax(-1, keepdim=True)).any()


def test_custom_keys_and_safe_projection():
    module = QValueModule(
        spec=Composite({("agents", "act"): Categorical(N)}),
        action_value_key=("agents", "q"),
        out_keys=[("agents", "act"), ("agents", "q"), ("agents", "q_chosen")],
        safe=True,
    )
    td = TensorDict(agents=TensorDict(q=torch.randn(4, N), batch_size=[4]), batch_size=[4])
    td = module(td)
    assert td["agents", "act"].shape == (4,)
    assert td["agents", "q_chosen"].shape == (4, 1)
    assert module.spec[("agents", "act")] == Categorical(N)


def test_qvalue_actor_end_to_end():
    torch.manual_seed(0)
    net = MLP(3, N, depth=1, num_cells=8)
    actor = QValueActor(net, spec=OneHot(N), action_mask_key="action_mask")
    obs = torch.randn(10, 3)
    _, mask = _values_and_mask((10,))
    td = actor(TensorDict(observation=obs, action_mask=mask, batch_size=[10]))
    torch.testing.assert_close(td["action_value"], net(obs))
    index = td["action"].long().argmax(-1)
    assert mask.gather(-1, index.unsqueeze(-1)).all()
    assert isinstance(actor.qvalue_module, QValueModule)
    assert actor.spec["action"] == OneHot(N)


def test_qvalue_actor_takes_a_tensordict_module():
    net = TensorDictModule(nn.Linear(3, N), in_keys=["obs"], out_keys=["q"])
    actor = QValueActor(net, action_space="categorical", action_value_key="q")
    td = actor(TensorDict(obs=torch.randn(4, 3), batch_size=[4]))
    torch.testing.assert_close(td["action"], td["q"].argmax(-1))
    with pytest.raises(ValueError, match=r"writes \['q'\], expected it to write the action"):
        QValueActor(net, action_space="categorical")


@pytest.mark.parametrize("spec_cls", [MultiOneHot, MultiCategorical])
def test_multi_discrete_actions_pick_each_sub_action(spec_cls):
    nvec = [3, 2, 4]
    spec = spec_cls(nvec)
    g = torch.Generator().manual_seed(0)
    values = torch.randn(300, sum(nvec), generator=g)
    mask = torch.rand(300, sum(nvec), generator=g) < 0.6
    for part in mask.split(nvec, -1):
        part[..., 0] |= ~part.any(-1)
    module = QValueModule(spec, action_mask_key="mask", safe=True)
    td = module(TensorDict(action_value=values, mask=mask, batch_size=[300]))
    action = td["action"]
    assert spec.expand(300, *spec.shape).is_in(action)
    expected_index = torch.stack(
        [
            v.masked_fill(~m, float("-inf")).argmax(-1)
            for v, m in zip(values.split(nvec, -1), mask.split(nvec, -1))
        ],
        -1,
    )
    if spec_cls is MultiCategorical:
        torch.testing.assert_close(action, expected_index)
    else:
        assert action.shape == (300, sum(nvec))
        got = torch.stack([b.long().argmax(-1) for b in action.split(nvec, -1)], -1)
        torch.testing.assert_close(got, expected_index)
    assert td["chosen_action_value"].shape == (300, len(nvec))
    torch.testing.assert_close(td["chosen_action_value"], spec.index(action, values))
    with pytest.raises(ValueError, match=r"expected action values of last dim sum\(nvec\)=9"):
        module(TensorDict(action_value=values[:, :8], mask=mask[:, :8], batch_size=[300]))


def test_errors():
    with pytest.raises(ValueError, match=r"expected an action space .* got neither"):
        QValueModule()
    with pytest.raises(ValueError, match="unknown action space 'binary'"):
        QValueModule("binary")
    with pytest.raises(ValueError, match="action_space='one_hot' contradicts the Categorical"):
        QValueModule("one_hot", spec=Categorical(N))
    with pytest.raises(
        TypeError, match=r"expected a OneHot, .*MultiCategorical action spec, got Bounded"
    ):
        QValueModule(Bounded(0.0, 1.0, shape=(N,)))
    with pytest.raises(ValueError, match="expected 3 out_keys"):
        QValueModule("one_hot", out_keys=["action"])
    with pytest.raises(KeyError, match="the spec has no entry 'action'"):
        QValueModule(Composite(act=OneHot(N)))
    module = QValueModule("one_hot", action_mask_key="mask")
    td = TensorDict(action_value=torch.zeros(2, N), mask=torch.ones(2, N), batch_size=[2])
    with pytest.raises(
        TypeError, match=r"expected a bool action mask at .mask., got torch\.float32"
    ):
        module(td)


def test_explicit_none_keys_mean_the_defaults():
    # TorchRL: action_value_key=None and in_keys=None stand for the defaults.
    actor = QValueActor(nn.Linear(4, 3), in_keys=None, spec=Categorical(3), action_value_key=None)
    td = actor(TensorDict(observation=torch.randn(5, 4), batch_size=[5]))
    assert td["action"].shape == (5,)
    torch.testing.assert_close(td["action"], td["action_value"].argmax(-1))
    module = QValueModule(OneHot(3), action_value_key=None)
    assert module.in_keys == ["action_value"]
