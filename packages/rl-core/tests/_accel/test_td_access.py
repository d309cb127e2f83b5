"""rl_core._accel.td_access: each function gives what the public tensordict call it names gives,
and hands out nothing through which a TensorDict could be changed behind tensordict's back."""

from pathlib import Path

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict
from testkit.readme import run_readme_example

from rl_core._accel import td_access as access


def _nested() -> TensorDict:
    return TensorDict(
        {
            "obs": torch.arange(6.0).reshape(2, 3),
            "action": torch.ones(2, 1),
            "agents": {"obs": torch.zeros(2, 4), "done": torch.zeros(2, 1, dtype=torch.bool)},
            "next": {
                "obs": torch.ones(2, 3),
                "reward": torch.ones(2, 1),
                "agents": {"obs": torch.ones(2, 4), "reward": torch.ones(2, 1)},
            },
        },
        batch_size=[2],
    )


def test_is_plain_is_the_type_test():
    td = _nested()
    assert access.is_plain(td) is (type(td) is TensorDict) is True
    lazy = LazyStackedTensorDict(td[0], td[1])
    assert access.is_plain(lazy) is (type(lazy) is TensorDict) is False
    assert access.is_plain({}) is False


def test_entries_view_equals_items_and_is_read_only():
    td = _nested()
    view = access.entries_view(td)
    expected = dict(td.items())
    assert list(view) == list(expected)
    assert all(view[name] is value for name, value in expected.items())
    assert len(view) == len(expected)
    assert view.get("missing") is None
    with pytest.raises(TypeError):
        view["obs"] = torch.zeros(2, 3)  # type: ignore[index]
    with pytest.raises(TypeError):
        del view["obs"]  # type: ignore[attr-defined]
    assert not hasattr(view, "pop")
    assert not hasattr(view, "update")
    td.set("later", torch.zeros(2))  # live: an entry set afterwards shows
    assert view["later"] is td.get("later")


def test_entries_view_refuses_other_types():
    td = _nested()
    with pytest.raises(TypeError, match="entries_view: expected a plain TensorDict, got dict"):
        access.entries_view({"a": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got LazyStackedTensorDict"):
        access.entries_view(LazyStackedTensorDict(td[0], td[1]))


@pytest.mark.parametrize("path", [("obs",), ("next", "agents", "obs"), ("agents", "done")])
def test_get_leaf_equals_get(path):
    td = _nested()
    assert access.get_leaf(td, path) is td.get(path)
    assert access.get_leaf(td, (*path[:-1], "missing"), 7) == td.get((*path[:-1], "missing"), 7)
    lazy = LazyStackedTensorDict(td[0], td[1])
    assert torch.equal(access.get_leaf(lazy, path), lazy.get(path))


def test_set_leaf_equals_set():
    fast, slow = TensorDict({}, batch_size=[2]), TensorDict({}, batch_size=[2])
    values = {
        "a": torch.ones(2, 3),
        "b": TensorDict({"c": torch.zeros(2)}, batch_size=[2]),
        "d": torch.arange(2),
    }
    for key, value in values.items():
        access.set_leaf(fast, key, value)
        slow.set(key, value)
    assert list(fast.keys(True, True)) == list(slow.keys(True, True))
    assert (fast == slow).all()
    with pytest.raises(RuntimeError):  # a misfit goes to td.set, which explains it
        access.set_leaf(fast, "bad", torch.ones(3))
    locked = TensorDict({"a": torch.zeros(2)}, [2]).lock_()
    with pytest.raises(RuntimeError, match="locked"):
        access.set_leaf(locked, "b", torch.zeros(2))
    on_cpu = TensorDict({}, [2], device="cpu")  # a value without the device: set casts it
    access.set_leaf(on_cpu, "sub", TensorDict({"x": torch.zeros(2)}, [2]))
    assert on_cpu["sub"].device == torch.device("cpu")


def test_leaf_paths_equal_leaf_keys():
    td = _nested()
    expected = [key if isinstance(key, tuple) else (key,) for key in td.keys(True, True)]
    assert access.leaf_paths(td) == expected
    assert access.leaf_paths(LazyStackedTensorDict(td[0], td[1])) is None
    assert access.leaf_paths({"a": 1}) is None


@pytest.mark.parametrize("device", [None, torch.device("cpu")])
def test_build_tensordict_equals_the_constructor_and_copies_its_source(device):
    source = {"a": torch.zeros(2, 3), "b": TensorDict({"c": torch.ones(2)}, [2])}
    built = access.build_tensordict(source, torch.Size([2]), device)
    reference = TensorDict(source, batch_size=[2], device=device)
    assert type(built) is TensorDict
    assert built.batch_size == reference.batch_size
    assert built.device == reference.device
    assert list(built.keys(True, True)) == list(reference.keys(True, True))
    assert (built == reference).all()
    source["x"] = torch.zeros(2)  # the caller's dict is not the TensorDict's
    assert "x" not in built.keys()
    built.set("d", torch.ones(2))  # a working TensorDict
    assert "d" not in source


def test_tree_builder_equals_the_constructor():
    td = _nested()
    paths = access.leaf_paths(td)
    assert paths is not None
    built = access.TreeBuilder(paths).build([td.get(p) for p in paths], td.batch_size, None)
    assert list(built.keys(True, True)) == list(td.keys(True, True))
    assert (built == td).all()


def test_readme_section_example_runs(tmp_path):
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("## Fast TensorDict access", 1)[1].split("\n## ", 1)[0]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    readme = tmp_path / "README.md"
    readme.write_text(f"## Example\n\n```python\n{block}```\n")
    assert run_readme_example(readme) == ["torch.Size([1])"]
