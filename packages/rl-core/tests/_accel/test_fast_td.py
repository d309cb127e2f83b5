"""rl_core._accel.fast_td (private): each fast call gives what the public tensordict call gives."""

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from rl_core._accel import fast_td
from rl_core._accel.fast_td import (
    TreeBuilder,
    batch_size_of,
    build_tensordict,
    device_of,
    entries,
    get_leaf,
    is_plain,
    leaf_paths,
    set_leaf,
)
from rl_core.ted import StepMdpPlan, step_mdp
from rl_core.testing import CountingEnv


def _nested() -> TensorDict:
    return TensorDict(
        {
            "obs": torch.arange(6.0).reshape(2, 3),
            "action": torch.ones(2, 1),
            "agents": {"obs": torch.zeros(2, 4), "done": torch.zeros(2, 1, dtype=torch.bool)},
            "next": {
                "obs": torch.ones(2, 3),
                "reward": torch.ones(2, 1),
                "done": torch.zeros(2, 1, dtype=torch.bool),
                "agents": {"obs": torch.ones(2, 4), "reward": torch.ones(2, 1)},
            },
        },
        batch_size=[2],
    )


def test_is_plain_and_entries():
    td = _nested()
    assert is_plain(td)
    assert not is_plain(LazyStackedTensorDict(td[0], td[1]))
    assert list(entries(td)) == list(td.keys())
    assert entries(td)["obs"] is td.get("obs")
    with pytest.raises(TypeError, match=r"_fast_td.entries: expected a plain TensorDict, got dict"):
        entries({})
    assert batch_size_of(td) == td.batch_size
    assert device_of(td) == td.device


@pytest.mark.parametrize("path", [("obs",), ("next", "agents", "obs"), ("agents", "done")])
def test_get_leaf_matches_get(path):
    td = _nested()
    assert get_leaf(td, path) is td.get(path)
    lazy = LazyStackedTensorDict(td[0], td[1])
    assert torch.equal(get_leaf(lazy, path), lazy.get(path))


def test_get_leaf_missing_entries():
    td = _nested()
    assert get_leaf(td, ("nope",), None) is None
    assert get_leaf(td, ("next", "nope"), 3) == 3
    # Without a default, a missing entry does what td.get does (raise, or None on the
    # tensordict versions that return None).
    try:
        expected = td.get(("next", "nope"))
    except KeyError:
        with pytest.raises(KeyError):
            get_leaf(td, ("next", "nope"))
    else:
        assert get_leaf(td, ("next", "nope")) is expected


def test_set_leaf_matches_set():
    fast, slow = TensorDict({}, batch_size=[2]), TensorDict({}, batch_size=[2])
    for td in (fast, slow):
        setter = set_leaf if td is fast else (lambda t, k, v: t.set(k, v))
        setter(td, "a", torch.ones(2, 3))
        setter(td, "b", TensorDict({"c": torch.zeros(2)}, batch_size=[2]))
    assert (fast == slow).all()
    with pytest.raises(RuntimeError):  # a misfit falls back to set, which explains it
        set_leaf(fast, "bad", torch.ones(3))


def test_leaf_paths_matches_keys():
    td = _nested()
    expected = [key if isinstance(key, tuple) else (key,) for key in td.keys(True, True)]
    assert leaf_paths(td) == expected
    assert leaf_paths(LazyStackedTensorDict(td[0], td[1])) is None
    assert leaf_paths({"a": 1}) is None


def test_build_tensordict_and_tree_builder_match_the_constructor():
    td = _nested()
    paths = leaf_paths(td)
    built = TreeBuilder(paths).build([td.get(p) for p in paths], td.batch_size, None)
    assert (built == td).all()
    assert leaf_paths(built) == paths
    flat = build_tensordict({"a": torch.zeros(2, 3)}, torch.Size([2]), torch.device("cpu"))
    assert (flat == TensorDict({"a": torch.zeros(2, 3)}, [2], device="cpu")).all()
    assert flat.device == torch.device("cpu")


def test_step_mdp_plan_matches_step_mdp():
    td = _nested()
    keys = (["reward", ("agents", "reward")], ["done"], ["action"])
    plan = StepMdpPlan(*keys)
    expected = step_mdp(td, reward_keys=keys[0], done_keys=keys[1], action_keys=keys[2])
    got = plan(td)
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    assert (got == expected).all()
    lazy = LazyStackedTensorDict(td[0], td[1])
    assert (plan(lazy) == expected).all()
    with pytest.raises(KeyError):
        plan(td.exclude("next"))


def _flat_transition() -> TensorDict:
    return TensorDict(
        {
            "obs": torch.zeros(2, 3),
            "hidden": torch.ones(2, 5),
            "action": torch.ones(2, 1),
            "done": torch.zeros(2, 1, dtype=torch.bool),
            "_reset": torch.ones(2, 1, dtype=torch.bool),
            "group": {"x": torch.ones(2)},
            "next": {
                "obs": torch.ones(2, 3),
                "reward": torch.ones(2, 1),
                "done": torch.ones(2, 1, dtype=torch.bool),
                "_reset": torch.ones(2, 1, dtype=torch.bool),
            },
        },
        batch_size=[2],
    )


def _same(got: TensorDict, expected: TensorDict) -> None:
    # the same entries, in the same order, holding the same tensors
    assert list(got.keys(True, True)) == list(expected.keys(True, True))
    for key in expected.keys(True, True):
        assert got.get(key) is expected.get(key)
    assert got.batch_size == expected.batch_size
    assert got.device == expected.device


def test_step_mdp_plan_flat_path_matches_the_level_merge():
    # Flat rules and a "next" of tensors: the two comprehensions of the flat path.
    plan = StepMdpPlan(["reward"], ["done"], ["action"])
    assert plan._flat
    td = _flat_transition()
    expected = step_mdp(td, reward_keys=["reward"], done_keys=["done"], action_keys=["action"])
    _same(plan(td), expected)
    assert "_reset" not in plan(td).keys()
    # a group under "next" merges level by level (the flat path steps aside)
    td.set(("next", "group"), TensorDict({"y": torch.zeros(2)}, [2]))
    expected = step_mdp(td, reward_keys=["reward"], done_keys=["done"], action_keys=["action"])
    _same(plan(td), expected)
    assert set(plan(td)["group"].keys()) == {"x", "y"}
    # nested rules never take the flat path
    assert not StepMdpPlan([("agents", "reward")], ["done"], ["action"])._flat


def test_build_tensordict_matches_new_unsafe():
    source = {"a": torch.zeros(2, 3), "b": TensorDict({"c": torch.ones(2)}, [2])}
    for device in (None, torch.device("cpu"), "cpu"):
        built = build_tensordict(dict(source), torch.Size([2]), device)
        reference = TensorDict._new_unsafe(
            source=dict(source), batch_size=torch.Size([2]), device=device, nested=False
        )
        assert vars(built).keys() == vars(reference).keys()
        assert built.device == reference.device
        assert built.batch_size == reference.batch_size
        _same(built, reference)
        built.set("d", torch.ones(2))  # a working TensorDict: set, lock, clone
        built.lock_()
        with pytest.raises(RuntimeError, match="locked"):
            built.set("e", torch.ones(2))
        assert (built.clone() == built).all()


def test_set_leaf_respects_locks_and_falls_back_for_misfits():
    td = TensorDict({"a": torch.zeros(2)}, [2]).lock_()
    with pytest.raises(RuntimeError, match="locked"):
        set_leaf(td, "b", torch.zeros(2))
    on_cpu = TensorDict({}, [2], device="cpu")
    set_leaf(on_cpu, "sub", TensorDict({"x": torch.zeros(2)}, [2]))  # no device: set moves it
    assert on_cpu["sub"].device == torch.device("cpu")
    nested = TensorDict({}, [2])
    set_leaf(nested, "n", TensorDict({"x": torch.zeros(2, 4)}, [2, 4]))
    assert nested["n"].batch_size == (2, 4)


@pytest.mark.parametrize("batch_size", [(), (3,)])
def test_env_hands_out_its_plan(batch_size):
    env = CountingEnv(batch_size=batch_size)
    td = env.rand_step(env.reset())
    expected = step_mdp(
        td,
        reward_keys=env.reward_keys,
        done_keys=env.done_keys,
        action_keys=env.action_keys,
    )
    plan = env.step_mdp_plan()
    assert plan is env.step_mdp_plan()
    assert (plan(td) == expected).all()


def test_module_io_keys_accepts_only_plain_calls():
    from tensordict.nn import TensorDictModule
    from torch import nn

    from rl_core._accel.fast_td import module_io_keys

    plain = TensorDictModule(nn.Identity(), in_keys=["a", ("b", "c")], out_keys=["d", ("e", "f")])
    assert module_io_keys(plain) == ([("a",), ("b", "c")], ["d", ("e", "f")])
    not_plain = [
        TensorDictModule(nn.Identity(), in_keys={"x": "a"}, out_keys=["d"]),
        TensorDictModule(nn.Identity(), in_keys=["a"], out_keys=["d"], inplace=False),
        TensorDictModule(nn.Identity(), in_keys=["a"], out_keys=["d"], inplace="empty"),
        TensorDictModule(nn.Identity(), in_keys=["a"], out_keys=["d"], method="forward"),
        TensorDictModule(nn.Identity(), in_keys=["a"], out_keys=["d"], get_kwargs={"x": 1}),
        TensorDictModule(nn.Identity(), in_keys=["a"], out_keys=["d", "e"]).select_out_keys("e"),
    ]
    assert [module_io_keys(module) for module in not_plain] == [None] * len(not_plain)


def test_sequence_children_accepts_only_plain_sequences():
    from collections import OrderedDict

    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torch import nn

    from rl_core._accel.fast_td import sequence_children

    first = TensorDictModule(nn.Identity(), in_keys=["a"], out_keys=["b"])
    second = TensorDictModule(nn.Identity(), in_keys=["b"], out_keys=["c"])
    assert sequence_children(TensorDictSequential(first, second)) == [first, second]
    named = TensorDictSequential(OrderedDict(one=first, two=second), inplace=True)
    assert sequence_children(named) == [first, second]
    not_plain = [
        TensorDictSequential(first, second, partial_tolerant=True),
        TensorDictSequential(first, second, inplace=False),
        TensorDictSequential(first, second, selected_out_keys=["c"]),
    ]
    assert [sequence_children(seq) for seq in not_plain] == [None] * len(not_plain)


def test_writable_entries_only_where_set_leaf_would_store_directly():
    td = TensorDict({}, batch_size=[2])
    fast_td.writable_entries(td)["obs"] = torch.zeros(2, 3)
    assert td["obs"].shape == (2, 3)
    assert fast_td.writable_entries(td.lock_()) is None
    assert fast_td.writable_entries(TensorDict({}, batch_size=[2], device="meta")) is None
    assert fast_td.writable_entries({"obs": torch.zeros(2)}) is None


def test_only_tensors_refuses_groups_subclasses_and_other_values():
    assert fast_td.only_tensors({"a": torch.zeros(1)}.values())
    assert not fast_td.only_tensors([torch.zeros(1), 1])
    assert not fast_td.only_tensors([TensorDict({}, batch_size=[])])
    assert not fast_td.only_tensors([torch.nn.Parameter(torch.zeros(1))])
