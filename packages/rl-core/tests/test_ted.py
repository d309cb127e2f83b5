import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from rl_core.ted import step_mdp, terminated_or_truncated


def _flags(*values):
    return torch.tensor(values, dtype=torch.bool).unsqueeze(-1)


def _transition(batch=2):
    return TensorDict(
        observation=torch.zeros(batch, 3),
        action=torch.ones(batch, 1),
        hidden=torch.full((batch, 4), 7.0),
        done=_flags(*[False] * batch),
        terminated=_flags(*[False] * batch),
        truncated=_flags(*[False] * batch),
        _reset=_flags(*[True] * batch),
        next=TensorDict(
            observation=torch.ones(batch, 3),
            reward=torch.full((batch, 1), 2.0),
            done=_flags(True, *[False] * (batch - 1)),
            terminated=_flags(True, *[False] * (batch - 1)),
            truncated=_flags(*[False] * batch),
            batch_size=[batch],
        ),
        batch_size=[batch],
    )


def test_step_mdp_moves_next_to_root_and_keeps_other_entries():
    td = _transition()
    out = step_mdp(td)
    assert set(out.keys()) == {"observation", "hidden", "done", "terminated", "truncated"}
    assert out.batch_size == td.batch_size
    assert (out["observation"] == 1).all()
    assert out["done"].squeeze(-1).tolist() == [True, False]
    # Tensors are shared, not copied.
    assert out["observation"].data_ptr() == td["next", "observation"].data_ptr()
    assert out["hidden"].data_ptr() == td["hidden"].data_ptr()
    # The input is untouched.
    assert "next" in td.keys()
    assert (td["observation"] == 0).all()


def test_step_mdp_flags():
    td = _transition()
    assert "hidden" not in step_mdp(td, keep_other=False).keys()
    assert "reward" in step_mdp(td, exclude_reward=False).keys()
    assert "action" in step_mdp(td, exclude_action=False).keys()
    out = step_mdp(td, exclude_done=True)
    assert not {"done", "terminated", "truncated"} & set(out.keys())


def test_step_mdp_drops_reset_instructions():
    assert "_reset" not in step_mdp(_transition()).keys()


def test_step_mdp_custom_keys():
    td = _transition()
    td["next", "other_reward"] = torch.zeros(2, 1)
    out = step_mdp(td, reward_keys=["reward", "other_reward"])
    assert "reward" not in out.keys()
    assert "other_reward" not in out.keys()
    out = step_mdp(td, action_keys="hidden")
    assert "hidden" not in out.keys()
    assert "action" in out.keys()


def test_step_mdp_merges_nested_groups():
    td = TensorDict(
        agents=TensorDict(
            observation=torch.zeros(2, 3, 5),
            action=torch.zeros(2, 3, 1),
            rnn=torch.ones(2, 3, 8),
            batch_size=[2, 3],
        ),
        next=TensorDict(
            agents=TensorDict(
                observation=torch.ones(2, 3, 5),
                reward=torch.ones(2, 3, 1),
                done=torch.zeros(2, 3, 1, dtype=torch.bool),
                batch_size=[2, 3],
            ),
            batch_size=[2],
        ),
        batch_size=[2],
    )
    out = step_mdp(td, reward_keys=("agents", "reward"), action_keys=("agents", "action"))
    assert set(out["agents"].keys()) == {"observation", "rnn", "done"}
    assert out["agents"].batch_size == torch.Size([2, 3])
    assert (out["agents", "observation"] == 1).all()
    # Default keys do not reach into the group.
    out = step_mdp(td)
    assert {"reward", "action"} <= set(out["agents"].keys())


def test_step_mdp_writes_into_next_tensordict():
    td = _transition()
    dest = TensorDict(batch_size=[2])
    result = step_mdp(td, dest)
    assert result is dest
    assert set(dest.keys()) == {"observation", "hidden", "done", "terminated", "truncated"}


def test_step_mdp_on_lazy_stacks():
    tds = [_transition(batch=1)[0] for _ in range(3)]
    tds[1]["next", "extra"] = torch.zeros(2)
    stacked = LazyStackedTensorDict.lazy_stack(tds, 0)
    out = step_mdp(stacked)
    assert out.batch_size == torch.Size([3])
    assert (out["observation"] == 1).all()
    assert "reward" not in out.keys()
    assert "action" not in out.keys()


def test_step_mdp_keeps_the_action_without_other_entries():
    # TorchRL 0.14: keep_other=False drops the other root entries but, with
    # exclude_action=False, still carries the action over.
    td = _transition()
    out = step_mdp(td, keep_other=False, exclude_action=False)
    assert set(out.keys()) == {"action", "observation", "done", "terminated", "truncated"}
    assert out["action"].data_ptr() == td["action"].data_ptr()
    assert set(step_mdp(td, keep_other=False).keys()) == {
        "observation",
        "done",
        "terminated",
        "truncated",
    }
    nested = TensorDict(
        agents=TensorDict(action=torch.ones(2, 1), rnn=torch.ones(2, 4), batch_size=[2]),
        next=TensorDict(agents=TensorDict(obs=torch.ones(2, 3), batch_size=[2]), batch_size=[2]),
        batch_size=[2],
    )
    out = step_mdp(nested, keep_other=False, exclude_action=False, action_keys=("agents", "action"))
    assert set(out["agents"].keys()) == {"action", "obs"}


def _agent(obs_dim, with_extra=False):
    nxt = TensorDict(observation=torch.full((obs_dim,), 1.0), reward=torch.ones(1))
    if with_extra:
        nxt["extra"] = torch.zeros(2)
    return TensorDict(
        observation=torch.zeros(obs_dim),
        action=torch.full((1,), float(obs_dim)),
        hidden=torch.full((obs_dim + 1,), 7.0),
        next=nxt,
    )


def test_step_mdp_keeps_a_lazy_stack_whose_members_differ_in_shape():
    # Agents with observations of 3 and 5 floats: TorchRL keeps the lazy stack.
    td = LazyStackedTensorDict.lazy_stack([_agent(3), _agent(5, with_extra=True)], 0)
    out = step_mdp(td)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == torch.Size([2])
    first, second = out.tensordicts
    assert set(first.keys()) == {"observation", "hidden"}
    assert set(second.keys()) == {"observation", "hidden", "extra"}
    assert first["observation"].tolist() == [1.0] * 3
    assert second["observation"].tolist() == [1.0] * 5
    assert second["hidden"].shape == (6,)
    out = step_mdp(td, keep_other=False, exclude_action=False, exclude_reward=False)
    assert [sorted(m.keys()) for m in out.tensordicts] == [
        ["action", "observation", "reward"],
        ["action", "extra", "observation", "reward"],
    ]
    assert [m["action"].item() for m in out.tensordicts] == [3.0, 5.0]
    dest = LazyStackedTensorDict.lazy_stack([TensorDict(), TensorDict()], 0)
    assert step_mdp(td, dest) is dest
    assert dest.tensordicts[1]["observation"].shape == (5,)


def test_step_mdp_keeps_a_nested_lazy_stack():
    # A dense root whose "agents" group is a lazy stack of agents of different sizes.
    def group(offset):
        return LazyStackedTensorDict.lazy_stack(
            [
                TensorDict(observation=torch.full((3,), offset), rnn=torch.ones(2)),
                TensorDict(observation=torch.full((5,), offset), rnn=torch.ones(2)),
            ],
            0,
        )

    td = TensorDict(agents=group(0.0), next=TensorDict(agents=group(1.0)))
    td["next", "agents"] = LazyStackedTensorDict.lazy_stack(
        [m.exclude("rnn") for m in td["next", "agents"].tensordicts], 0
    )
    out = step_mdp(td)
    agents = out["agents"]
    assert isinstance(agents, LazyStackedTensorDict)
    assert [m["observation"].tolist() for m in agents.tensordicts] == [[1.0] * 3, [1.0] * 5]
    assert all(set(m.keys()) == {"observation", "rnn"} for m in agents.tensordicts)


def test_step_mdp_without_next_is_a_clear_error():
    with pytest.raises(KeyError, match=r"expected a TensorDict with a 'next' entry.*env.step"):
        step_mdp(TensorDict(observation=torch.zeros(2), batch_size=[2]))


def test_step_mdp_bad_key_type():
    with pytest.raises(
        TypeError,
        match=r"step_mdp: reward_keys must be a key or a list of keys \(str or tuple of str\), got 3",
    ):
        step_mdp(_transition(), reward_keys=[3])


def test_terminated_or_truncated_writes_reset_mask_per_level():
    data = TensorDict(
        done=_flags(False, False),
        terminated=_flags(False, False),
        truncated=_flags(False, True),
        agents=TensorDict(
            terminated=torch.tensor([[[True], [False]], [[False], [False]]]),
            batch_size=[2, 2],
        ),
        batch_size=[2],
    )
    assert terminated_or_truncated(data) is True
    assert data["_reset"].squeeze(-1).tolist() == [False, True]
    assert data["agents", "_reset"].squeeze(-1).tolist() == [[True, False], [False, False]]


def test_terminated_or_truncated_nothing_done():
    data = TensorDict(done=_flags(False, False), batch_size=[2])
    assert terminated_or_truncated(data) is False
    assert "_reset" not in data.keys()
    assert terminated_or_truncated(data, write_full_false=True) is False
    assert data["_reset"].shape == (2, 1)


def test_terminated_or_truncated_key_none_and_ignores_next():
    data = TensorDict(
        done=_flags(False),
        next=TensorDict(done=_flags(True), batch_size=[1]),
        batch_size=[1],
    )
    assert terminated_or_truncated(data, key=None) is False
    assert "_reset" not in data.keys()


def test_terminated_or_truncated_with_spec_names_missing_keys():
    class _Spec:  # anything with keys(include_nested=, leaves_only=) works as the done spec
        def keys(self, include_nested=False, leaves_only=False):
            return ["done", ("agents", "done")]

    data = TensorDict(done=_flags(True), batch_size=[1])
    with pytest.raises(KeyError, match=r"names \('agents', 'done'\), which the data lacks"):
        terminated_or_truncated(data, full_done_spec=_Spec())


def _entries_of(td):
    return [(k, v) for k, v in td.items(include_nested=True, leaves_only=True)]


def test_step_mdp_with_its_defaults_resolves_no_argument_and_gives_the_generic_result():
    # The defaults' rules are resolved once (no key-argument handling per call); the result is
    # the generic route's (keys given as lists) for flat, nested and lazily stacked inputs.
    import sys

    nested = _transition()
    nested["next", "group", "x"] = torch.ones(2, 1)
    nested["group", "y"] = torch.zeros(2, 1)
    stacked = LazyStackedTensorDict.lazy_stack([_transition(batch=1)[0] for _ in range(3)], 0)
    for td in (_transition(), nested, stacked):
        generic = step_mdp(td, reward_keys=["reward"], action_keys=["action"])
        called: set[str] = set()
        sys.setprofile(lambda frame, event, arg, seen=called: seen.add(frame.f_code.co_name))
        try:
            out = step_mdp(td)
        finally:
            sys.setprofile(None)
        assert "_hashable" not in called
        assert type(out) is type(generic)
        assert [k for k, _ in _entries_of(out)] == [k for k, _ in _entries_of(generic)]
        for (_, mine), (_, theirs) in zip(_entries_of(out), _entries_of(generic), strict=True):
            assert mine.dtype == theirs.dtype
            assert torch.equal(mine, theirs)


def test_step_mdp_drops_a_group_whose_entries_are_all_excluded_as_torchrl():
    # ("data", "reward") and ("data", "done") are excluded and ("data", "action") too: with
    # nothing left under "data", TorchRL's step_mdp leaves no empty "data" group behind.
    td = TensorDict(
        {
            ("data", "action"): torch.zeros(4, 3, 1),
            "state": torch.zeros(4, 1),
            "next": {
                ("data", "reward"): torch.ones(4, 3, 1),
                ("data", "done"): torch.ones(4, 3, 1),
                "state": torch.ones(4, 1),
            },
        },
        batch_size=[4],
    )
    keys = {"reward_keys": ("data", "reward"), "done_keys": [("data", "done")]}
    out = step_mdp(td, exclude_done=True, action_keys=("data", "action"), **keys)
    assert set(out.keys(True, True)) == {"state"}
    kept = step_mdp(td, exclude_done=False, action_keys=("data", "action"), **keys)
    assert set(kept.keys(True, True)) == {"state", ("data", "done")}
    # a group that was empty to start with and has no rule stays, as before
    empty = TensorDict({"g": {}, "next": {"g": {}, "state": torch.ones(4, 1)}}, batch_size=[4])
    assert "g" in step_mdp(empty).keys()
