import inspect

import numpy as np
import pytest
import torch

from rl_core.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Stacked,
    Unbounded,
)
from rl_envs.libs import gym_space_to_spec, spec_to_gym_space

spaces = pytest.importorskip("gymnasium.spaces")


def test_box_becomes_bounded_with_its_bounds_dtype_and_batch():
    space = spaces.Box(low=np.array([-1.0, 0.0]), high=np.array([1.0, 5.0]), dtype=np.float64)
    spec = gym_space_to_spec(space, batch_size=(3,))
    assert isinstance(spec, Bounded)
    assert spec.shape == (3, 2)
    assert spec.dtype == torch.float64
    assert spec.low[1].tolist() == [-1.0, 0.0]
    assert spec.high[2].tolist() == [1.0, 5.0]


def test_infinite_box_becomes_unbounded_and_half_open_box_stays_bounded():
    assert isinstance(gym_space_to_spec(spaces.Box(-np.inf, np.inf, (4,))), Unbounded)
    low, high = np.array([0.0, -np.inf], np.float32), np.array([np.inf, 1.0], np.float32)
    half = gym_space_to_spec(spaces.Box(low, high))
    assert isinstance(half, Bounded)
    assert half.low.tolist() == [0.0, float("-inf")]
    assert half.is_in(half.rand())


def test_integer_box_keeps_its_dtype():
    spec = gym_space_to_spec(spaces.Box(0, 255, (2, 2), dtype=np.uint8))
    assert isinstance(spec, Bounded)
    assert spec.dtype == torch.uint8
    assert spec.domain == "discrete"


def test_discrete_is_one_hot_by_default_and_categorical_on_request():
    one_hot = gym_space_to_spec(spaces.Discrete(4), batch_size=(2,))
    assert isinstance(one_hot, OneHot)
    assert one_hot.shape == (2, 4)
    categorical = gym_space_to_spec(
        spaces.Discrete(4), batch_size=(2,), categorical_action_encoding=True
    )
    assert isinstance(categorical, Categorical)
    assert categorical.shape == (2,)
    assert categorical.n == 4


def test_multi_discrete_with_a_flat_nvec():
    space = spaces.MultiDiscrete([3, 2])
    assert isinstance(gym_space_to_spec(space), MultiOneHot)
    assert gym_space_to_spec(space).shape == (5,)
    categorical = gym_space_to_spec(space, categorical_action_encoding=True)
    assert isinstance(categorical, MultiCategorical)
    assert categorical.nvec.tolist() == [3, 2]


def test_multi_discrete_with_a_2d_nvec_of_one_value():
    space = spaces.MultiDiscrete(np.full((2, 3), 4))
    assert gym_space_to_spec(space, categorical_action_encoding=True).shape == (2, 3)
    spec = gym_space_to_spec(space)
    assert isinstance(spec, OneHot)
    assert spec.shape == (2, 3, 4)


def test_multi_discrete_with_a_2d_nvec_of_several_values_is_refused():
    with pytest.raises(TypeError, match=r"same number of choices, got nvec=\[\[2, 3\]\]"):
        gym_space_to_spec(spaces.MultiDiscrete([[2, 3]]))


def test_multi_binary_becomes_binary():
    spec = gym_space_to_spec(spaces.MultiBinary(5), batch_size=(2,))
    assert isinstance(spec, Binary)
    assert spec.shape == (2, 5)
    assert spec.dtype == torch.int8


def test_dict_becomes_a_nested_composite_with_the_batch_shape():
    space = spaces.Dict(
        {"position": spaces.Box(-1, 1, (2,)), "inner": spaces.Dict({"k": spaces.Discrete(3)})}
    )
    spec = gym_space_to_spec(space, batch_size=(4,))
    assert isinstance(spec, Composite)
    assert spec.shape == (4,)
    assert spec["position"].shape == (4, 2)
    assert isinstance(spec["inner", "k"], OneHot)
    assert spec["inner"].shape == (4,)


def test_dict_with_a_non_string_key_is_refused():
    with pytest.raises(TypeError, match=r"keys must be strings.*got 3 \(int\)"):
        gym_space_to_spec(spaces.Dict({3: spaces.Discrete(2)}))


def test_tuple_of_equal_members_stacks_them_after_the_batch_dims():
    space = spaces.Tuple((spaces.Box(-1, 1, (3,)), spaces.Box(-1, 1, (3,))))
    spec = gym_space_to_spec(space, batch_size=(5,))
    assert spec.shape == (5, 2, 3)
    assert spec.is_in(spec.rand())


def test_tuple_of_discretes_stacks_as_indices_with_categorical_encoding():
    space = spaces.Tuple((spaces.Discrete(32), spaces.Discrete(11), spaces.Discrete(2)))
    spec = gym_space_to_spec(space, categorical_action_encoding=True)
    assert isinstance(spec, Stacked)
    assert spec.shape == (3,)
    assert [member.n for member in spec.specs] == [32, 11, 2]


def test_tuple_whose_values_do_not_stack_is_refused_with_a_hint():
    space = spaces.Tuple((spaces.Discrete(3), spaces.Discrete(4)))
    with pytest.raises(TypeError, match=r"do not stack.*categorical_action_encoding=True"):
        gym_space_to_spec(space)
    mixed = spaces.Tuple((spaces.Box(-1, 1, (2,)), spaces.Box(-1, 1, (3,))))
    with pytest.raises(TypeError, match="FlattenObservation"):
        gym_space_to_spec(mixed)


def test_tuple_of_dicts_is_refused():
    space = spaces.Tuple((spaces.Dict({"a": spaces.Discrete(2)}),))
    with pytest.raises(TypeError, match="members are tensor spaces"):
        gym_space_to_spec(space)


def test_text_becomes_non_tensor():
    spec = gym_space_to_spec(spaces.Text(8), batch_size=(2,))
    assert isinstance(spec, NonTensor)
    assert spec.shape == (2,)


def test_unsupported_spaces_are_refused_with_the_supported_list():
    graph = spaces.Graph(node_space=spaces.Box(-1, 1, (2,)), edge_space=None)
    with pytest.raises(TypeError, match=r"Graph is not supported.*Supported: Box, Discrete"):
        gym_space_to_spec(graph)


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(-1.0, 2.0, (3,)),
        spaces.Box(0, 255, (2, 2), dtype=np.uint8),
        spaces.Discrete(5),
        spaces.MultiDiscrete([3, 2]),
        spaces.MultiBinary(4),
        spaces.Dict({"a": spaces.Box(-1.0, 1.0, (2,)), "b": spaces.Discrete(3)}),
    ],
    ids=["box", "uint8-box", "discrete", "multi-discrete", "multi-binary", "dict"],
)
@pytest.mark.parametrize("categorical", [False, True])
def test_spec_to_gym_space_inverts_gym_space_to_spec(space, categorical):
    spec = gym_space_to_spec(space, batch_size=(2,), categorical_action_encoding=categorical)
    assert spec_to_gym_space(spec, batch_ndim=1) == space


def test_spec_to_gym_space_of_unbounded_and_non_tensor_specs():
    box = spec_to_gym_space(Unbounded(shape=(3,)))
    assert isinstance(box, spaces.Box)
    assert np.isinf(box.low).all()
    assert isinstance(spec_to_gym_space(NonTensor()), spaces.Text)
    assert spec_to_gym_space(Categorical(3, shape=(2,))) == spaces.MultiDiscrete([3, 3])


@pytest.mark.parametrize(
    ("space", "categorical", "kind", "dtype"),
    [
        (spaces.Box(-1.0, 1.0, (2,)), False, "Bounded", torch.float32),
        (spaces.Box(-1.0, 1.0, (2,), dtype=np.float64), False, "Bounded", torch.float64),
        (spaces.Box(-np.inf, np.inf, (2,)), False, "Unbounded", torch.float32),
        (spaces.Box(0, 255, (2,), dtype=np.uint8), False, "Bounded", torch.uint8),
        (spaces.Discrete(3), False, "OneHot", torch.int64),
        (spaces.Discrete(3), True, "Categorical", torch.int64),
        (spaces.MultiDiscrete([2, 3]), False, "MultiOneHot", torch.int64),
        (spaces.MultiDiscrete([2, 3]), True, "MultiCategorical", torch.int64),
        (spaces.MultiDiscrete([[2, 2]]), False, "OneHot", torch.int64),
        (spaces.MultiDiscrete([[2, 2]]), True, "Categorical", torch.int64),
        (spaces.MultiBinary(4), False, "Binary", torch.int8),
    ],
)
def test_dtypes_match_torchrl(space, categorical, kind, dtype):
    # Regression: Discrete gave a bool OneHot; TorchRL gives torch.int64 (a TorchRL user's
    # code that allocates or checks by dtype must keep working).
    spec = gym_space_to_spec(space, categorical_action_encoding=categorical)
    assert type(spec).__name__ == kind
    assert spec.dtype == dtype
    assert spec.rand().dtype == dtype


@pytest.mark.skipif(
    "dtype" not in inspect.signature(spaces.Discrete).parameters,
    reason="this gymnasium's Discrete takes no dtype (1.1, the lowest supported, does not)",
)
def test_categorical_takes_the_discrete_space_dtype():
    spec = gym_space_to_spec(spaces.Discrete(3, dtype=np.int32), categorical_action_encoding=True)
    assert type(spec).__name__ == "Categorical"
    assert spec.dtype == torch.int32
    assert spec.rand().dtype == torch.int32


def test_dict_space_dtypes_match_torchrl():
    space = spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Box(0, 1, (1,))})
    spec = gym_space_to_spec(space)
    assert (spec["a"].dtype, spec["b"].dtype) == (torch.int64, torch.float32)
