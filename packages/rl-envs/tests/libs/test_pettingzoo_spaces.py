"""The private space converter of the PettingZoo wrappers, on real gymnasium spaces."""

import numpy as np
import pytest
import torch

from rl_core.specs import (
    Binary,
    Bounded,
    Categorical,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Stacked,
    Unbounded,
)
from rl_envs.libs._pettingzoo_spaces import leaf_codecs, split_dict_space, value_at

spaces = pytest.importorskip("gymnasium.spaces")


def codec(agent_spaces, *, categorical=True):
    [((), out)] = leaf_codecs(agent_spaces, "test", categorical=categorical)
    return out


def test_box_becomes_bounded_or_unbounded():
    box = codec([spaces.Box(-1.0, 2.0, shape=(3,))] * 2)
    assert isinstance(box.spec, Bounded)
    assert box.spec.shape == (2, 3)
    assert box.encode([np.ones(3, np.float32), None]).tolist() == [[1.0] * 3, [0.0] * 3]
    free = codec([spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float64)])
    assert isinstance(free.spec, Unbounded)
    assert free.spec.dtype == torch.float64


def test_boxes_with_different_bounds_stack():
    box = codec([spaces.Box(0.0, 1.0, shape=(2,)), spaces.Box(0.0, 5.0, shape=(2,))])
    assert isinstance(box.spec, Stacked)
    assert box.spec.shape == (2, 2)
    assert box.spec.is_in(torch.tensor([[1.0, 1.0], [4.0, 4.0]]))
    assert not box.spec.is_in(torch.tensor([[4.0, 4.0], [1.0, 1.0]]))


def test_discrete_with_a_start_round_trips():
    discrete = codec([spaces.Discrete(3, start=-1)] * 2)
    assert isinstance(discrete.spec, Categorical)
    assert discrete.encode([-1, 1]).tolist() == [0, 2]
    assert discrete.decode(torch.tensor([0, 2])) == [-1, 1]
    one_hot = codec([spaces.Discrete(3, start=-1)] * 2, categorical=False)
    assert isinstance(one_hot.spec, OneHot)
    assert one_hot.encode([-1, 1]).int().tolist() == [[1, 0, 0], [0, 0, 1]]
    assert one_hot.decode(torch.tensor([[0, 1, 0], [1, 0, 0]], dtype=torch.bool)) == [0, -1]


def test_multi_discrete_both_ways():
    space = spaces.MultiDiscrete([3, 2])
    indices = codec([space] * 2)
    assert isinstance(indices.spec, MultiCategorical)
    assert indices.spec.shape == (2, 2)
    assert [a.tolist() for a in indices.decode(torch.tensor([[2, 1], [0, 0]]))] == [
        [2, 1],
        [0, 0],
    ]
    one_hot = codec([space] * 2, categorical=False)
    assert isinstance(one_hot.spec, MultiOneHot)
    encoded = one_hot.encode([np.array([2, 1]), np.array([0, 0])])
    assert encoded.int().tolist() == [[0, 0, 1, 0, 1], [1, 0, 0, 1, 0]]
    assert [a.tolist() for a in one_hot.decode(encoded)] == [[2, 1], [0, 0]]


def test_multi_binary():
    binary = codec([spaces.MultiBinary(4)] * 3)
    assert isinstance(binary.spec, Binary)
    assert binary.spec.shape == (3, 4)
    assert binary.decode(torch.ones(3, 4, dtype=torch.int8))[2].dtype == np.int8


def test_box_actions_decode_in_the_space_dtype():
    box = codec([spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)] * 2)
    values = box.decode(torch.zeros(2, 2, dtype=torch.float64))
    assert [v.dtype for v in values] == [np.float64, np.float64]


def test_dict_spaces_give_one_leaf_per_entry():
    space = spaces.Dict({"pos": spaces.Box(-1.0, 1.0, shape=(2,)), "id": spaces.Discrete(4)})
    leaves = dict(leaf_codecs([space, space], "test"))
    assert sorted(leaves) == [("id",), ("pos",)]
    assert leaves[("pos",)].spec.shape == (2, 2)
    assert value_at({"id": 3}, ("id",)) == 3
    assert value_at(None, ("id",)) is None


def test_board_game_observations_split_off_the_action_mask():
    board = spaces.Dict(
        {
            "observation": spaces.Box(0, 1, shape=(3, 3, 2), dtype=np.int8),
            "action_mask": spaces.Box(0, 1, shape=(9,), dtype=np.int8),
        }
    )
    observation, path, mask = split_dict_space(board)
    assert observation.shape == (3, 3, 2)
    assert path == ("observation",)
    assert mask.shape == (9,)
    plain = spaces.Box(0.0, 1.0, shape=(2,))
    assert split_dict_space(plain) == (plain, (), None)


def test_refusals():
    with pytest.raises(TypeError, match=r"Text\(.*is not supported; expected Box, Discrete"):
        codec([spaces.Text(5)])
    with pytest.raises(TypeError, match=r"spaces of different kinds \(\['Box', 'Discrete'\]\)"):
        codec([spaces.Discrete(2), spaces.Box(0.0, 1.0, shape=())])
    with pytest.raises(ValueError, match=r"different shapes \(\[\(2,\), \(3,\)\]\)"):
        codec([spaces.Box(0.0, 1.0, shape=(2,)), spaces.Box(0.0, 1.0, shape=(3,))])
    mixed = [spaces.MultiDiscrete([2, 3]), spaces.MultiDiscrete([3, 2])]
    with pytest.raises(ValueError, match=r"same MultiDiscrete nvec.*\(2, 3\), \(3, 2\)"):
        codec(mixed, categorical=False)
    assert codec(mixed).spec.shape == (2, 2)
    a = spaces.Dict({"x": spaces.Discrete(2)})
    b = spaces.Dict({"y": spaces.Discrete(2)})
    with pytest.raises(TypeError, match="different dict spaces"):
        leaf_codecs([a, b], "test")


def test_boolean_boxes_become_flags():
    flags = codec([spaces.Box(0, 1, shape=(3,), dtype=bool)] * 2)
    assert isinstance(flags.spec, Categorical)
    assert flags.spec.dtype == torch.bool
    assert flags.encode([np.array([True, False, True]), None]).tolist() == [
        [True, False, True],
        [False, False, False],
    ]
