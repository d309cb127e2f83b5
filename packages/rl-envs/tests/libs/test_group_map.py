"""MarlGroupMapType and check_marl_grouping."""

import pytest

from rl_envs.libs import MarlGroupMapType, check_marl_grouping

NAMES = ["adversary_0", "agent_0", "agent_1", "referee"]


def test_all_in_one_group():
    assert MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(NAMES) == {"agents": NAMES}


def test_one_group_per_agent():
    assert MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(NAMES) == {n: [n] for n in NAMES}


def test_by_name_prefix_keeps_order_and_unindexed_names():
    assert MarlGroupMapType.BY_NAME_PREFIX.get_group_map(NAMES) == {
        "adversary": ["adversary_0"],
        "agent": ["agent_0", "agent_1"],
        "referee": ["referee"],
    }
    assert MarlGroupMapType.BY_NAME_PREFIX.get_group_map(["red_team_1", "red_team_0"]) == {
        "red_team": ["red_team_1", "red_team_0"]
    }


@pytest.mark.parametrize("kind", list(MarlGroupMapType))
def test_every_ready_made_map_passes_the_check(kind):
    check_marl_grouping(kind.get_group_map(NAMES), NAMES)


@pytest.mark.parametrize(
    ("group_map", "error", "match"),
    [
        ({"a": ["agent_0"]}, ValueError, r"agents \['agent_1'\] are in no group"),
        ({"a": ["agent_0", "agent_1"], "b": []}, ValueError, "group 'b' is empty"),
        (
            {"a": ["agent_0", "agent_1"], "b": ["agent_1"]},
            ValueError,
            "'agent_1' is in groups 'a' and 'b'",
        ),
        ({"a": ["agent_0", "agent_1", "ghost"]}, ValueError, "names 'ghost', which is not"),
        ({"done": ["agent_0", "agent_1"]}, ValueError, "group name 'done' is reserved"),
        ({"a": "agent_0"}, TypeError, "group 'a' must list agent names"),
        ({"": ["agent_0", "agent_1"]}, TypeError, "group names are non-empty str"),
        ([("a", ["agent_0"])], TypeError, r"expected a dict \{group: \[agent names\]\}, got list"),
    ],
)
def test_bad_groupings(group_map, error, match):
    with pytest.raises(error, match=match):
        check_marl_grouping(group_map, ["agent_0", "agent_1"])
