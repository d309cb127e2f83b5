import pytest
import torch
from tensordict import TensorDict

from rl_llm.objectives import MCAdvantageSelector


def _c(values):
    return TensorDict({"return": torch.tensor(values, dtype=torch.float64)}, [len(values)])


def test_strategies_by_hand():
    values = [0.9, 0.1, 0.5, 0.0, 1.0]
    # ranks (lowest first): 3 (0.0), 1 (0.1), 2 (0.5), 0 (0.9), 4 (1.0)
    assert MCAdvantageSelector("first").select(_c(values), group_size=2) == [0, 1]
    assert MCAdvantageSelector("uniform").select(_c(values), group_size=3) == [3, 2, 4]
    assert MCAdvantageSelector("uniform").select(_c(values), group_size=1) == [2]
    # balanced without bounds is uniform
    assert MCAdvantageSelector().select(_c(values), group_size=3) == [3, 2, 4]
    # balanced with bounds (0.2, 0.4): means inside, closest to 0.3, then widest spread:
    # {0.1, 0.5} -> 0.3 (spread 0.4) beats nothing closer; {0.0, 0.5}: 0.25.
    assert MCAdvantageSelector().select(
        _c(values), group_size=2, keep_return_bounds=(0.2, 0.4)
    ) == [1, 2]
    # equal distance: {0.0, 0.5, 0.5}? use a tie on the mean: {0.0, 1.0} and {0.1, 0.9}
    # both have mean 0.5; the wider spread wins.
    assert MCAdvantageSelector().select(
        _c(values), group_size=2, keep_return_bounds=(0.0, 1.0)
    ) == [3, 4]


def test_groups_outside_the_bounds_are_dropped():
    assert (
        MCAdvantageSelector().select(_c([1.0, 1.0, 1.0]), group_size=2, keep_return_bounds=(0, 1))
        is None
    )
    assert MCAdvantageSelector("first").select(
        _c([0.0, 1.0]), group_size=2, keep_return_bounds=(0, 1)
    ) == [0, 1]
    assert (
        MCAdvantageSelector("first").select(_c([0.0, 0.0]), group_size=2, keep_return_bounds=(0, 1))
        is None
    )


def test_greedy_search_finds_a_group_inside_the_bounds():
    # 12 candidates, groups of 6 (924 subsets): exhaustive and greedy both land inside.
    values = [0.0] * 10 + [1.0] * 2
    for limit in (100_000, 1):
        chosen = MCAdvantageSelector(max_combinations=limit).select(
            _c(values), group_size=6, keep_return_bounds=(0.1, 0.9)
        )
        assert chosen is not None
        assert len(set(chosen)) == 6
        mean = sum(values[i] for i in chosen) / 6
        assert 0.1 < mean < 0.9


def test_bad_input_is_reported():
    with pytest.raises(ValueError, match=r"expected strategy in .* got 'best'"):
        MCAdvantageSelector("best")
    with pytest.raises(ValueError, match="expected max_combinations >= 1, got 0"):
        MCAdvantageSelector(max_combinations=0)
    with pytest.raises(ValueError, match="expected at least group_size=3 candidates, got 2"):
        MCAdvantageSelector().select(_c([0.0, 1.0]), group_size=3)
    with pytest.raises(
        ValueError, match=r"one return per candidate at 'return' \(2 candidates\), got nothing"
    ):
        MCAdvantageSelector().select(TensorDict({"r": torch.zeros(2)}, [2]), group_size=1)
