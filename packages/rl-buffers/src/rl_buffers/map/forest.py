"""MCTSForest: game trees stored as transitions in TensorDict storages, queried by hashed state."""

from __future__ import annotations

from pathlib import Path

import torch
from tensordict import NestedKey, TensorDictBase

from rl_buffers.map.query import QueryModule
from rl_buffers.map.tdstorage import TensorDictMap
from rl_buffers.map.tree import Tree
from rl_buffers.storages import LazyTensorStorage
from rl_core.envs import EnvBase
from rl_core.keys import NEXT

NODE = "_node"
NEXT_NODE = "_next_node"


class MCTSForest:
    """A collection of game trees, stored as the transitions of the rollouts given to it.

    Two maps hold them, each a :class:`TensorDictMap` on an rl-buffers storage: the node map
    gives each state (its ``observation_keys``, hashed) a node id and keeps its entries; the
    data map keeps each transition (a TED step: state, action, ``"next"``) under the hash of
    its state and action, with the node ids of both ends. A rollout from any stored state adds
    branches to the trees that contain it; :meth:`get_tree` reads the tree under a state.
    The maps are built at the first :meth:`extend` (``max_size`` slots each) unless given;
    :meth:`dumps`/:meth:`loads` save and restore them (their storages and hash tables).

    Keyword Args:
        data_map: the transitions' map. Defaults to one built at the first :meth:`extend`.
        node_map: the states' map. Defaults to one built at the first :meth:`extend`.
        max_size: the slots of each map built here. Defaults to the given maps' size, else
            1000.
        done_keys, reward_keys, observation_keys, action_keys: the env's keys (see
            :meth:`get_keys_from_env`). Defaults: ``["done", "terminated", "truncated"]``,
            ``["reward"]``, ``["observation"]``, ``["action"]``.
        excluded_keys: entries left out of the stored transitions.
        consolidated: TorchRL's flag; only ``None``/``False`` (see
            :meth:`TensorDictMap.from_tensordict_pair`).

    Raises:
        ValueError: ``max_size`` conflicts with a given map's.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> forest = MCTSForest()
        >>> def step(obs, action, next_obs):
        ...     return TensorDict({"observation": torch.tensor([obs]), "action": torch.tensor(action),
        ...                        "next": {"observation": torch.tensor([next_obs]),
        ...                                 "reward": torch.zeros(1), "done": torch.zeros(1, dtype=torch.bool)}})
        >>> forest.extend(torch.stack([step(0, 0, 1), step(1, 0, 2)]))
        >>> forest.extend(torch.stack([step(0, 1, 3)]))  # another branch from state 0
        >>> tree = forest.get_tree(TensorDict(observation=torch.tensor([0])))
        >>> len(forest), tree.num_children, sorted(forest.valid_paths(tree))  # 0-1-2 merged
        (3, 2, [(0,), (1,)])
        >>> full = forest.get_tree(TensorDict(observation=torch.tensor([0])), compact=False)
        >>> sorted(full.valid_paths()), full.rollout_from_path((0, 0))["action"].tolist()
        ([(0, 0), (1,)], [0, 0])
    """

    def __init__(
        self,
        *,
        data_map: TensorDictMap | None = None,
        node_map: TensorDictMap | None = None,
        max_size: int | None = None,
        done_keys: list[NestedKey] | None = None,
        reward_keys: list[NestedKey] | None = None,
        observation_keys: list[NestedKey] | None = None,
        action_keys: list[NestedKey] | None = None,
        excluded_keys: list[NestedKey] | None = None,
        consolidated: bool | None = None,
    ) -> None:
        sizes = {m.max_size for m in (data_map, node_map) if m is not None}
        if max_size is not None:
            sizes.add(max_size)
        if len(sizes) > 1:
            raise ValueError(
                f"MCTSForest: conflicting max_size: the given maps and max_size say "
                f"{sorted(sizes)}. Pass maps of one size, or no max_size."
            )
        if consolidated:
            raise ValueError(
                "MCTSForest: consolidated=True is not supported: the storages here keep one "
                "tensor per entry. Pass consolidated=None."
            )
        self.max_size = sizes.pop() if sizes else 1000
        self.data_map = data_map
        self.node_map = node_map
        self.done_keys = list(done_keys or ["done", "terminated", "truncated"])
        self.reward_keys = list(reward_keys or ["reward"])
        self.observation_keys = list(observation_keys or ["observation"])
        self.action_keys = list(action_keys or ["action"])
        self.excluded_keys = list(excluded_keys or [])

    def get_keys_from_env(self, env: EnvBase) -> None:
        """Takes the done, reward, observation and action keys from ``env``'s specs."""
        self.done_keys = list(env.done_keys)
        self.reward_keys = list(env.reward_keys)
        self.observation_keys = list(env.observation_keys)
        self.action_keys = list(env.action_keys)

    # ------------------------------------------------------------------ building
    def _state(self, td: TensorDictBase) -> TensorDictBase:
        missing = [k for k in self.observation_keys if td.get(k, None) is None]
        if missing:
            raise KeyError(
                f"MCTSForest: expected the observation entries {missing} in the TensorDict, "
                f"got keys {sorted(map(str, td.keys(True, True)))}. Set observation_keys (or "
                f"call get_keys_from_env)."
            )
        return td.select(*self.observation_keys)

    def _make_maps(self) -> None:
        if self.node_map is None:
            self.node_map = TensorDictMap(
                query_module=QueryModule(list(self.observation_keys)),
                storage=LazyTensorStorage(self.max_size),
            )
        if self.data_map is None:
            self.data_map = TensorDictMap(
                query_module=QueryModule([*self.observation_keys, *self.action_keys]),
                storage=LazyTensorStorage(self.max_size),
            )

    def extend(self, rollout: TensorDictBase, *, return_node: bool = False) -> Tree | None:
        """Stores the steps of ``rollout`` (TED: ``[T]`` or ``[B, T]``, with ``"next"``).

        Args:
            rollout: the steps; each state's observation entries, its action and ``"next"``.
            return_node: return the tree under the rollout's first state.

        Raises:
            KeyError: an observation or action entry, or ``"next"``, is missing.
        """
        if NEXT not in rollout.keys():
            raise KeyError(
                f"MCTSForest.extend: expected a rollout with a 'next' entry (TED layout), got "
                f"keys {sorted(map(str, rollout.keys()))}."
            )
        steps = rollout.exclude(*self.excluded_keys).reshape(-1)
        for key in self.action_keys:
            if steps.get(key, None) is None:
                raise KeyError(f"MCTSForest.extend: expected the action entry {key!r}.")
        self._make_maps()
        here = self._state(steps)
        there = self._state(steps.get(NEXT))
        self.node_map[here] = here
        self.node_map[there] = there
        node = self.node_map.query_module(here.copy(), extend=False)[self.node_map.index_key]
        nxt = self.node_map.query_module(there.copy(), extend=False)[self.node_map.index_key]
        rows = steps.clone(False).set(NODE, node).set(NEXT_NODE, nxt)
        self.data_map[rows] = rows
        if return_node:
            return self.get_tree(rollout.reshape(-1)[0])
        return None

    def add(self, step: TensorDictBase, *, return_node: bool = False) -> Tree | None:
        """Stores one step (an unbatched TED step)."""
        return self.extend(step.unsqueeze(0), return_node=return_node)

    def __len__(self) -> int:
        return 0 if self.data_map is None else len(self.data_map)

    # ------------------------------------------------------------------ reading
    def node_id(self, state: TensorDictBase) -> torch.Tensor:
        """The node ids of the states of ``state`` (``-1`` for a state not stored)."""
        if self.node_map is None:
            return torch.full(state.batch_size, -1, dtype=torch.long)
        keys = self._state(state)
        scalar = keys.batch_dims == 0
        keys = keys.unsqueeze(0) if scalar else keys
        known = self.node_map.contains(keys)
        ids = self.node_map.query_module(keys.copy(), extend=False)[self.node_map.index_key]
        ids = torch.where(known, ids, -1)
        return ids[0] if scalar else ids

    def get_child(self, root: TensorDictBase) -> TensorDictBase:
        """The stored transition(s) for the state and action of ``root`` (its ``"next"``
        among them).

        Raises:
            KeyError: a state-action pair was never stored.
        """
        if self.data_map is None:
            raise KeyError("MCTSForest.get_child: the forest is empty; extend it first.")
        return self.data_map[root].exclude(NODE, NEXT_NODE)

    def get_tree(
        self, root: TensorDictBase, *, compact: bool = True, max_depth: int | None = None
    ) -> Tree:
        """The tree under the state of ``root``.

        Args:
            root: a TensorDict with the state's observation entries (one state).
            compact: merge states with a single child into one vertex whose ``rollout`` holds
                the chain of steps (TorchRL's default); ``False`` gives one vertex per state.
            max_depth: stop below this many vertices (a guard for games with repeated states).

        Raises:
            KeyError: the state was never stored.
        """
        node = int(self.node_id(root.reshape(-1)[0]))
        if node < 0:
            raise KeyError(
                "MCTSForest.get_tree: the root's state was never stored (its observation "
                f"entries {self.observation_keys} hash to no node). Extend the forest first."
            )
        data = self.data_map.storage.get(torch.arange(len(self.data_map.storage)))
        nodes = self.node_map.storage

        def vertex(node_id, rollout, index, parent):
            node_data = nodes.get(torch.tensor([node_id]))[0]
            hashed = self.node_map.query_module.compute_hash(node_data.unsqueeze(0))
            return Tree(
                node_id=node_id,
                hash=int(hashed[0]),
                node_data=node_data,
                rollout=rollout,
                index=index,
                parent=parent,
            )

        tree = vertex(node, None, None, None)
        frontier = [(tree, (node,))]
        while frontier:
            parent, seen = frontier.pop()
            if max_depth is not None and len(seen) > max_depth:
                continue
            for row in torch.nonzero(data.get(NODE) == parent.node_id).flatten().tolist():
                chain = [row]
                child = int(data.get(NEXT_NODE)[row])
                while compact and child not in seen:
                    out = torch.nonzero(data.get(NODE) == child).flatten()
                    if out.numel() != 1:
                        break
                    chain.append(int(out))
                    child = int(data.get(NEXT_NODE)[int(out)])
                index = torch.tensor(chain)
                rollout = data[index].exclude(NODE, NEXT_NODE)
                sub = vertex(child, rollout, index, parent)
                parent.subtree.append(sub)
                if child not in seen:
                    frontier.append((sub, (*seen, child)))
        return tree

    @classmethod
    def valid_paths(cls, tree: Tree) -> list[tuple[int, ...]]:
        """The path of every leaf of ``tree`` (see :meth:`Tree.valid_paths`)."""
        return list(tree.valid_paths())

    def to_string(self, td_root: TensorDictBase, node_format_fn=None) -> str:
        """:meth:`Tree.to_string` of the tree under ``td_root``."""
        return self.get_tree(td_root).to_string(node_format_fn)

    # ------------------------------------------------------------------ saving
    def dumps(self, path: str | Path) -> None:
        """Saves both maps under the directory ``path``: their storages through
        ``Storage.dumps`` and their hash tables."""
        if self.data_map is None:
            raise RuntimeError("MCTSForest.dumps: the forest is empty; extend it first.")
        path = Path(path)
        self.data_map.dumps(path / "data")
        self.node_map.dumps(path / "nodes")
        keys = [self.observation_keys, self.action_keys, self.reward_keys, self.done_keys]
        torch.save({"keys": keys}, path / "forest.pt")

    def loads(self, path: str | Path) -> None:
        """Restores what :meth:`dumps` saved under ``path`` (into this forest's maps, built
        here if missing).

        Raises:
            FileNotFoundError: ``path`` holds no saved forest.
        """
        path = Path(path)
        if not (path / "forest.pt").is_file():
            raise FileNotFoundError(
                f"MCTSForest.loads: no saved forest at {path} (forest.pt is missing). Pass the "
                f"directory given to dumps()."
            )
        keys = torch.load(path / "forest.pt", weights_only=False)["keys"]
        self.observation_keys, self.action_keys, self.reward_keys, self.done_keys = keys
        self._make_maps()
        self.data_map.loads(path / "data")
        self.node_map.loads(path / "nodes")


__all__ = ["MCTSForest"]
