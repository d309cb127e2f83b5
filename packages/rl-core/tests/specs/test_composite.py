import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core.specs import Bounded, Categorical, Composite, OneHot, Unbounded


def make_spec() -> Composite:
    return Composite(
        observation=Bounded(-1.0, 1.0, shape=(4, 3)),
        action=Categorical(2, shape=(4,)),
        next=Composite(obs=Unbounded(shape=(4, 3)), reward=Unbounded(shape=(4, 1)), shape=(4,)),
        shape=(4,),
    )


def test_construction_forms():
    by_dict = Composite({"a": Unbounded(shape=(2,))}, shape=(2,))
    by_name = Composite(a=Unbounded(shape=(2,)), shape=(2,))
    assert by_dict == by_name
    nested = Composite({"n": {"x": Unbounded(shape=(2, 5))}}, shape=(2,))
    assert isinstance(nested["n"], Composite)
    assert nested["n"].shape == (2,)
    assert Composite().shape == ()
    assert Composite(None, a=None)["a"] is None
    with pytest.raises(
        TypeError, match=r"Composite: expected at most one positional mapping of entries, got 2"
    ):
        Composite({}, {})
    with pytest.raises(TypeError, match=r"Composite: expected a mapping of entries, got list"):
        Composite([1])


def test_entries_must_start_with_the_batch_shape():
    with pytest.raises(
        ValueError,
        match=r"^Composite.set: the entry at key \('next', 'obs'\) has shape \(3,\), which does not "
        r"start with the batch shape \(4,\)\.",
    ):
        Composite(next={"obs": Unbounded(shape=(3,))}, shape=(4,))
    with pytest.raises(
        TypeError,
        match=r"Composite.set: expected a TensorSpec, a dict of specs or None at key 'a', got int",
    ):
        Composite(a=3)
    with pytest.raises(
        TypeError,
        match=r"Composite.set: expected a key \(a string or a non-empty tuple of strings\), got 3",
    ):
        Composite().set(3, Unbounded())


def test_device_moves_entries():
    spec = Composite(a=Unbounded(shape=(2,)), device="cpu")
    assert spec["a"].device == torch.device("cpu")
    spec["b"] = Unbounded()
    assert spec["b"].device == torch.device("cpu")
    kept = Composite(a=Unbounded(shape=(2,)))
    assert kept.device is None
    assert kept["a"].device is None
    assert kept.to("cpu")["a"].device == torch.device("cpu")
    assert kept.to("cpu").device == torch.device("cpu")


def test_keys_items_values():
    spec = make_spec()
    spec["maybe"] = None
    assert spec.keys() == ["observation", "action", "next", "maybe"]
    assert spec.keys(include_nested=True) == [
        "observation",
        "action",
        "next",
        ("next", "obs"),
        ("next", "reward"),
        "maybe",
    ]
    assert spec.keys(True, True) == [
        "observation",
        "action",
        ("next", "obs"),
        ("next", "reward"),
        "maybe",
    ]
    assert spec.keys(leaves_only=True) == ["observation", "action", "maybe"]
    assert dict(spec.items())["action"] == Categorical(2, shape=(4,))
    assert spec.values(True, True)[-1] is None
    assert list(spec) == spec.keys()
    assert len(spec) == 4


def test_get_set_contains_delete():
    spec = make_spec()
    assert ("next", "obs") in spec
    assert ("next", "nothing") not in spec
    assert "observation" in spec
    assert 3 not in spec
    assert spec.get(("next", "x"), None) is None
    with pytest.raises(
        KeyError, match=r"Composite: no entry at key \('next', 'x'\) \(no 'x' under 'next'\)"
    ):
        spec.get(("next", "x"))
    with pytest.raises(KeyError, match=r"Composite: no entry at key 'x'. Available keys:"):
        spec["x"]
    spec["info", "deep", "value"] = Unbounded(shape=(4, 2))
    assert spec["info"].shape == (4,)
    assert spec["info", "deep"].shape == (4,)
    assert spec.set("z", Unbounded(shape=(4,))) is spec
    with pytest.raises(
        KeyError,
        match=r"Composite.set: cannot set key \('observation', 'x'\): 'observation' holds a Bounded",
    ):
        spec["observation", "x"] = Unbounded(shape=(4,))
    del spec["info", "deep", "value"]
    assert spec["info", "deep"].keys() == []
    del spec["z"]
    assert "z" not in spec
    with pytest.raises(KeyError, match=r"Composite.__delitem__: no entry at key \('next', 'x'\)"):
        del spec["next", "x"]


def test_lock():
    spec = make_spec().lock_()
    assert spec.is_locked
    assert spec["next"].is_locked
    with pytest.raises(
        RuntimeError, match=r"^Composite.set: the Composite is locked. Call spec.unlock_\(\) first"
    ):
        spec["x"] = Unbounded(shape=(4,))
    with pytest.raises(RuntimeError, match=r"Composite.set: the Composite is locked"):
        spec["next"]["x"] = Unbounded(shape=(4,))
    with pytest.raises(RuntimeError, match=r"Composite.__delitem__: the Composite is locked"):
        del spec["observation"]
    with pytest.raises(RuntimeError, match=r"Composite.update: the Composite is locked"):
        spec.update({})
    assert not spec.clone().is_locked
    spec.unlock_()
    assert not spec["next"].is_locked
    spec["x"] = Unbounded(shape=(4,))


def test_update_merges_nested():
    spec = make_spec()
    spec.update({"next": Composite(done=Unbounded(shape=(4, 1), dtype=torch.bool), shape=(4,))})
    assert spec.keys(True, True)[-3:] == [("next", "obs"), ("next", "reward"), ("next", "done")]
    spec.update(Composite(action=OneHot(2, shape=(4, 2)), shape=(4,)))
    assert isinstance(spec["action"], OneHot)
    with pytest.raises(
        TypeError, match=r"Composite.update: expected a Composite or a mapping, got int"
    ):
        spec.update(3)


def test_select_exclude_empty():
    spec = make_spec()
    picked = spec.select("action", ("next", "reward"))
    assert picked.keys(True, True) == ["action", ("next", "reward")]
    assert picked["next"].shape == (4,)
    assert picked["action"] is spec["action"]
    with pytest.raises(
        KeyError, match=r"Composite.select: no entry at key 'x'. .*Pass strict=False to skip it"
    ):
        spec.select("x")
    assert spec.select("x", "action", strict=False).keys() == ["action"]
    dropped = spec.exclude("observation", ("next", "obs"), "missing")
    assert dropped.keys(True, True) == ["action", ("next", "reward")]
    assert spec.keys(True, True) == ["observation", "action", ("next", "obs"), ("next", "reward")]
    empty = spec.empty()
    assert empty.shape == (4,)
    assert len(empty) == 0


def test_rand_zero_one_give_tensordicts():
    spec = make_spec()
    spec["skipped"] = None
    td = spec.rand()
    assert isinstance(td, TensorDict)
    assert td.batch_size == (4,)
    assert td.get("skipped", None) is None
    assert td["next", "reward"].shape == (4, 1)
    assert spec.is_in(td)
    batched = spec.zero((2, 3))
    assert batched.batch_size == (2, 3, 4)
    assert batched["observation"].shape == (2, 3, 4, 3)
    assert bool((spec.one()["observation"] == 1).all())
    assert spec.zeros()["action"].dtype is torch.int64
    on_cpu = Composite(a=Unbounded(), device="cpu").rand()
    assert on_cpu.device == torch.device("cpu")


def test_is_in_names_the_key_path():
    spec = make_spec()
    td = spec.rand()
    td["next", "obs"] = td["next", "obs"].double()
    assert not spec.is_in(td)
    with pytest.raises(
        ValueError,
        match=r"^Unbounded.assert_is_in: value at key \('next', 'obs'\) has dtype torch.float64, "
        r"expected torch.float32\.$",
    ):
        spec.assert_is_in(td)
    td = spec.rand()
    td["observation"] = torch.full((4, 3), 2.0)
    with pytest.raises(
        ValueError, match=r"^Bounded.assert_is_in: value at key 'observation' is outside the bounds"
    ):
        spec.assert_is_in(td)
    td = spec.rand()
    del td["action"]
    with pytest.raises(
        ValueError,
        match=r"^Composite.assert_is_in: value at key 'action' is missing from the TensorDict\.$",
    ):
        spec.assert_is_in(td)
    with pytest.raises(
        ValueError, match=r"^Composite.assert_is_in: value is a dict, expected a TensorDict\.$"
    ):
        spec.assert_is_in({})
    extra = spec.rand()
    extra["not_in_spec"] = torch.zeros(4)
    assert spec.is_in(extra)


def test_project():
    spec = make_spec()
    td = spec.rand()
    td["observation"] = torch.full((4, 3), 5.0)
    td["action"] = torch.tensor([0, 1, 7, -3])
    td["extra"] = torch.ones(4)
    out = spec.project(td)
    assert spec.is_in(out)
    assert out["action"].tolist() == [0, 1, 1, 0]
    assert bool((out["observation"] == 1.0).all())
    assert out.get("extra", None) is not None
    assert bool((td["observation"] == 5.0).all())  # the input is left alone
    with pytest.raises(TypeError, match=r"Composite.project: expected a TensorDict, got dict"):
        spec.project({})
    with pytest.raises(KeyError, match=r"Composite.project: the TensorDict has no entry 'action'"):
        spec.project(td.exclude("action"))


def test_encode_and_to_numpy():
    spec = make_spec()
    raw = {
        "observation": np.zeros((4, 3)),
        "next": {"reward": np.ones((4, 1)), "obs": np.zeros((4, 3))},
    }
    td = spec.encode(raw)
    assert td.batch_size == (4,)
    assert td["next", "reward"].dtype is torch.float32
    assert td.get("action", None) is None
    full = spec.rand()
    arrays = spec.to_numpy(full, safe=True)
    assert set(arrays) == {"observation", "action", "next"}
    assert isinstance(arrays["next"]["reward"], np.ndarray)
    assert spec.is_in(spec.encode(arrays))
    with pytest.raises(
        KeyError, match=r"Composite.encode: the spec has no entry at key \('next', 'x'\)"
    ):
        spec.encode({"next": {"x": 1.0}})
    with pytest.raises(
        ValueError,
        match=r"^Composite.encode at key \('next', 'reward'\): Unbounded.encode: expected shape \(4, 1\), got \(4,\)\.",
    ):
        spec.encode({"next": {"reward": np.ones(4)}})
    with pytest.raises(
        TypeError, match=r"Composite.encode: expected a mapping at key 'next', got float"
    ):
        spec.encode({"next": 1.0})
    with pytest.raises(KeyError, match=r"Composite.to_numpy: the TensorDict has no entry 'action'"):
        spec.to_numpy(full.exclude("action"))
    with pytest.raises(TypeError, match=r"Composite.to_numpy: expected a TensorDict, got dict"):
        spec.to_numpy({})
    with pytest.raises(TypeError, match=r"Composite.zero: expected the leading shape to be"):
        spec.zero("x")


def test_clone_eq():
    spec = make_spec()
    clone = spec.clone()
    assert clone == spec
    assert clone["next"] is not spec["next"]
    clone["observation"].low.fill_(-2.0)
    assert clone != spec
    assert spec != make_spec().exclude("action")
    assert spec != make_spec().expand(2, 4)
    assert Composite(a=None) == Composite(a=None)
    assert spec != Unbounded()


def test_shape_operations():
    spec = make_spec()
    expanded = spec.expand(2, 4)
    assert expanded.shape == (2, 4)
    assert expanded["observation"].shape == (2, 4, 3)
    assert expanded["next", "reward"].shape == (2, 4, 1)
    assert expanded["next"].shape == (2, 4)
    with pytest.raises(ValueError, match=r"Composite.expand: cannot expand shape \(4,\) to \(5,\)"):
        spec.expand(5)
    first = spec[0]
    assert first.shape == ()
    assert first["observation"].shape == (3,)
    assert first["next", "reward"].shape == (1,)
    assert spec[1:3]["action"].shape == (2,)
    assert spec[..., 0]["observation"].shape == (3,)
    with pytest.raises(
        IndexError, match=r"Composite.__getitem__: index .* does not fit the indexable dims \(4,\)"
    ):
        spec[0, 0]
    unsqueezed = spec.unsqueeze(0)
    assert unsqueezed.shape == (1, 4)
    assert unsqueezed["observation"].shape == (1, 4, 3)
    assert unsqueezed.squeeze() == spec
    assert unsqueezed.squeeze(0) == spec
    reshaped = spec.reshape(2, 2)
    assert reshaped["next", "obs"].shape == (2, 2, 3)
    assert reshaped.reshape(-1) == spec


def test_repr_and_dtype():
    spec = Composite(
        a=Bounded(0.0, 1.0, shape=(2,)),
        b={"c": Categorical(3, shape=(2,))},
        shape=(2,),
        device="cpu",
    )
    assert repr(spec) == (
        "Composite(\n"
        "    a: Bounded(shape=(2,), dtype=float32, device=cpu, low=0.0, high=1.0),\n"
        "    b: Composite(\n"
        "        c: Categorical(shape=(2,), dtype=int64, device=cpu, n=3),\n"
        "        shape=(2,), device=cpu),\n"
        "    shape=(2,), device=cpu)"
    )
    assert spec.dtype is None
    assert Composite(a=Unbounded(), b=Unbounded()).dtype is torch.float32
    assert spec.ndim == 1
