"""MCTS on a stateless game of Nim (take 1-3 stones, whoever takes the last stone wins),
whose positions are solved by hand: a pile that is a multiple of 4 loses for the mover."""

import pytest
import torch
from tensordict import TensorDict

from rl_buffers.map import MCTS, PUCTScore, UCBScore
from rl_core.envs import EnvBase
from rl_core.specs import Categorical, Composite, Unbounded


class Nim(EnvBase):
    def __init__(self, batch):
        super().__init__(batch_size=[batch])
        state = Composite(
            pile=Unbounded(shape=(batch, 1), dtype=torch.int64),
            turn=Categorical(2, shape=(batch, 1), dtype=torch.int64),
            mask=Categorical(2, shape=(batch, 3), dtype=torch.bool),
            shape=[batch],
        )
        self.observation_spec = state.clone()
        self.state_spec = state
        self.action_spec = Categorical(3, shape=(batch,))
        self.steps = 0

    def _reset(self, tensordict, **kwargs):
        return self.position([7] * self.batch_size[0])

    def position(self, piles):
        pile = torch.tensor(piles).reshape(-1, 1)
        return TensorDict(
            pile=pile,
            turn=torch.zeros_like(pile),
            mask=torch.arange(1, 4) <= pile,
            batch_size=self.batch_size,
        )

    def _step(self, td):
        self.steps += 1
        pile = td["pile"] - (td["action"].unsqueeze(-1) + 1)
        done = pile <= 0
        return TensorDict(
            pile=pile,
            turn=1 - td["turn"],
            mask=torch.arange(1, 4) <= pile,
            reward=done.float(),  # the mover took the last stone
            done=done,
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed):
        pass


def uniform(td):
    return torch.zeros(td.batch_size[0], 3), torch.zeros(td.batch_size[0])


def test_three_simulations_by_hand():
    env = Nim(1)
    search = MCTS(env, uniform, num_simulations=3, score=PUCTScore(c=1.0), reward_keys=["reward"])
    out = search(env.position([2]))
    # sim 1: all scores 0, take 1 (pile 1, value 0): q = 0. sim 2: take 2 scores
    # 0.5 * 1 / 1 > take 1's 0.5 * 1 / 2: it wins, q = 1. sim 3: take 2 scores
    # 1 + 0.5 * sqrt(2) / 2 > 0.5 * sqrt(2) / 2: the terminal child again, q = 1.
    assert out["visits"].tolist() == [[1.0, 2.0, 0.0]]
    assert out["value"].tolist() == pytest.approx([2 / 3])
    assert search.tree["edges", "win_count"][0, 0].tolist() == [0.0, 2.0, 0.0]


@pytest.mark.parametrize("score", [PUCTScore(c=1.0), UCBScore(c=1.4)])
def test_finds_the_winning_moves_of_many_roots_at_once(score):
    env = Nim(6)
    search = MCTS(env, uniform, num_simulations=300, score=score, reward_keys=["reward"])
    out = search(env.position([1, 2, 3, 5, 6, 7]))
    # the winning move leaves a multiple of 4: take pile % 4
    assert (out["visits"].argmax(-1) + 1).tolist() == [1, 2, 3, 1, 2, 3]
    # one env.step expands the leaves of all roots together
    new_nodes = int(search.tree["size"].sum()) - 6
    assert env.steps <= 300
    assert new_nodes > env.steps
    assert (out["value"] > 0.5).all()


def test_a_lost_position_has_a_negative_value():
    env = Nim(1)
    out = MCTS(env, uniform, num_simulations=400, reward_keys=["reward"])(env.position([4]))
    assert out["value"].item() < -0.3


def test_dirichlet_noise_changes_root_priors_only():
    env = Nim(2)
    gen = torch.Generator().manual_seed(0)
    search = MCTS(
        env,
        uniform,
        num_simulations=4,
        reward_keys=["reward"],
        dirichlet_alpha=0.3,
        exploration_fraction=1.0,
        generator=gen,
    )
    search(env.position([5, 5]))
    root = search.tree["edges", "prior_prob"][:, 0]
    assert root.sum(-1).tolist() == pytest.approx([1.0, 1.0])
    assert not torch.allclose(root, torch.full_like(root, 1 / 3))


def test_bad_arguments_are_refused():
    env = Nim(2)
    with pytest.raises(ValueError, match="num_simulations to be a positive int, got 0"):
        MCTS(env, uniform, num_simulations=0)
    with pytest.raises(ValueError, match=r"exploration_fraction in \[0, 1\], got 2"):
        MCTS(env, uniform, exploration_fraction=2)
    search = MCTS(env, uniform, num_simulations=2, reward_keys=["reward"])
    with pytest.raises(ValueError, match=r"expected roots batched \[2\]"):
        search(Nim(3).position([1, 2, 3]))
    finished = env.position([0, 3])
    with pytest.raises(ValueError, match=r"roots \[0\] have no legal action"):
        search(finished)
    bad = MCTS(env, lambda td: (torch.zeros(2, 4), torch.zeros(2)), reward_keys=["reward"])
    with pytest.raises(ValueError, match=r"logits of shape \(2, 3\)"):
        bad(env.position([2, 3]))


def test_the_searched_tree_goes_into_a_forest(tmp_path):
    from rl_buffers.map import MCTSForest

    env = Nim(1)
    search = MCTS(env, uniform, num_simulations=20, reward_keys=["reward"])
    with pytest.raises(RuntimeError, match="no search ran yet"):
        search.to_forest(MCTSForest())
    search(env.position([3]))
    forest = search.to_forest(MCTSForest())
    expanded = int(search.tree["size"].sum()) - 1
    assert len(forest) == expanded
    tree = forest.get_tree(env.position([3])[0], compact=False)
    # from 3 stones: take 1, 2 or 3; taking 3 wins at once
    wins = [c for c in tree.subtree if c.rollout["next", "done"].all()]
    assert [int(c.rollout["action"][0]) for c in wins] == [2]
    forest.dumps(tmp_path / "nim")
    again = MCTSForest()
    again.loads(tmp_path / "nim")
    assert again.get_tree(env.position([3])[0], compact=False).num_vertices() == tree.num_vertices()


def test_a_batch_of_leaves_per_root_with_virtual_loss():
    env = Nim(3 * 4)  # 3 roots, 4 leaves each per simulation
    search = MCTS(env, uniform, num_simulations=60, reward_keys=["reward"], leaves_per_root=4)
    out = search(Nim(3).position([5, 6, 7]))
    assert (out["visits"].argmax(-1) + 1).tolist() == [1, 2, 3]
    # every selected path is backed up once, and the virtual losses are all taken back
    assert out["visits"].sum(-1).tolist() == [240.0, 240.0, 240.0]
    assert env.steps <= 60
    # leaves of one root's batch are distinct: the first simulation expands 4 nodes per root
    env2 = Nim(4)
    first = MCTS(env2, uniform, num_simulations=1, reward_keys=["reward"], leaves_per_root=4)
    first(Nim(1).position([7]))
    assert first.tree["size"].tolist() == [4]  # the root and its 3 children (one duplicate)
    assert first.tree["edges", "visits"][0, 0].tolist() == [2.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=r"must be the number of roots times leaves_per_root"):
        MCTS(Nim(5), uniform, leaves_per_root=2)
