"""MCTSForest and Tree on tic-tac-toe-like transitions written by hand."""

import pytest
import torch
from tensordict import TensorDict

from rl_buffers.map import MCTSForest, Tree


def step(obs, action, next_obs, reward=0.0, done=False):
    return TensorDict(
        {
            "observation": torch.tensor(obs, dtype=torch.float32),
            "action": torch.tensor(action),
            "next": {
                "observation": torch.tensor(next_obs, dtype=torch.float32),
                "reward": torch.tensor([reward]),
                "done": torch.tensor([done]),
            },
        }
    )


def rollout(*steps):
    return torch.stack(list(steps))


# states are 2-vectors; from A = [0, 0]: action 0 -> B -> (action 1) -> C; action 1 -> D
A, B, C, D, E = [0, 0], [1, 0], [1, 1], [0, 1], [2, 2]


def make_forest(**kwargs):
    forest = MCTSForest(**kwargs)
    forest.extend(rollout(step(A, 0, B), step(B, 1, C, reward=1.0, done=True)))
    forest.extend(rollout(step(A, 1, D)))
    return forest


def test_extend_and_query_by_state():
    forest = make_forest()
    assert len(forest) == 3
    ids = forest.node_id(
        TensorDict(observation=torch.tensor([A, C, E], dtype=torch.float32), batch_size=[3])
    )
    assert ids[0] >= 0
    assert ids[1] >= 0
    assert ids[2] == -1
    forest.extend(rollout(step(A, 0, B)))  # a transition seen before is not stored twice
    assert len(forest) == 3
    child = forest.get_child(step(A, 1, D).exclude("next"))
    assert child["next", "observation"].tolist() == D


def test_compact_and_full_trees():
    forest = make_forest()
    root = TensorDict(observation=torch.tensor(A, dtype=torch.float32))
    full = forest.get_tree(root, compact=False)
    assert sorted(full.valid_paths()) == [(0, 0), (1,)]
    assert full.num_vertices() == 4
    assert full.max_length() == 2
    by_action = {int(child.rollout["action"][0]): child for child in full.subtree}
    assert by_action[0].subtree[0].rollout["next", "reward"].tolist() == [[1.0]]
    assert by_action[0].parent is full
    path = (full.subtree.index(by_action[0]), 0)
    replay = full.rollout_from_path(path)
    assert replay["action"].tolist() == [0, 1]
    assert replay["next", "observation"].tolist() == [B, C]
    compact = forest.get_tree(root)
    assert sorted(len(p) for p in compact.valid_paths()) == [1, 1]  # A-B-C merged
    merged = next(c for c in compact.subtree if len(c.rollout) == 2)
    assert merged.rollout["observation"].tolist() == [A, B]
    assert len(full.edges()) == 3
    assert full.get_vertex_by_hash(full.hash) is full
    assert by_action[1] in full
    with pytest.raises(IndexError, match="child 5, but that vertex has 2 children"):
        full.rollout_from_path((5,))


def test_save_and_reload(tmp_path):
    forest = make_forest()
    forest.dumps(tmp_path / "forest")
    again = MCTSForest()
    again.loads(tmp_path / "forest")
    assert len(again) == 3
    root = TensorDict(observation=torch.tensor(A, dtype=torch.float32))
    tree = again.get_tree(root, compact=False)
    assert sorted(tree.valid_paths()) == [(0, 0), (1,)]
    again.extend(rollout(step(D, 0, E)))  # the reloaded hash tables go on
    assert again.get_tree(root, compact=False).max_length() == 2
    assert len(again) == 4


def test_bad_input_is_refused(tmp_path):
    forest = make_forest()
    with pytest.raises(KeyError, match="the root's state was never stored"):
        forest.get_tree(TensorDict(observation=torch.tensor(E, dtype=torch.float32)))
    with pytest.raises(KeyError, match="expected a rollout with a 'next' entry"):
        forest.extend(TensorDict(observation=torch.zeros(2, 2), batch_size=[2]))
    with pytest.raises(KeyError, match=r"expected the observation entries \[.*obs"):
        MCTSForest(observation_keys=["obs"]).extend(rollout(step(A, 0, B)))
    with pytest.raises(ValueError, match="conflicting max_size"):
        MCTSForest(max_size=10, data_map=make_forest().data_map)
    with pytest.raises(FileNotFoundError, match="no saved forest"):
        MCTSForest().loads(tmp_path)
    with pytest.raises(ValueError, match="key_type 'id', 'hash' or 'path'"):
        Tree(node_id=0, hash=0, node_data=TensorDict()).vertices(key_type="name")
