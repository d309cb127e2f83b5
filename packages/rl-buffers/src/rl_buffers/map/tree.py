"""Tree: one vertex of a game tree built from an MCTSForest, and its subtrees."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Literal

import torch
from tensordict import TensorDictBase


class Tree:
    """A vertex of a tree read from an :class:`~rl_buffers.map.MCTSForest`, with its subtrees.

    A vertex is a state (``node_data``, its ``hash`` and ``node_id`` in the forest's node map)
    reached from its parent through ``rollout``: the steps (TED layout, ``[T]``) that lead from
    the parent's state to this one (one step, or several in a compact tree where states with a
    single child are merged). ``subtree`` holds the children, one per action taken from here.

    Attributes:
        node_id: the state's index in the forest's node map.
        hash: the state's hash.
        node_data: the state's observation entries.
        rollout: the steps from the parent to this vertex (``None`` at the root).
        index: the forest's data rows of ``rollout``.
        subtree: the children.
        count, wins: visit and win counts, for a search to fill (``None`` until then).
    """

    def __init__(
        self,
        *,
        node_id: int,
        hash: int | None,
        node_data: TensorDictBase,
        rollout: TensorDictBase | None = None,
        index: torch.Tensor | None = None,
        parent: Tree | None = None,
    ) -> None:
        self.node_id = node_id
        self.hash = hash
        self.node_data = node_data
        self.rollout = rollout
        self.index = index
        self.subtree: list[Tree] = []
        self.count: torch.Tensor | None = None
        self.wins: torch.Tensor | None = None
        self._parent = weakref.ref(parent) if parent is not None else None

    @property
    def parent(self) -> Tree | None:
        """The vertex this one was reached from (``None`` at the root)."""
        return self._parent() if self._parent is not None else None

    @property
    def num_children(self) -> int:
        return len(self.subtree)

    @property
    def is_terminal(self) -> bool:
        """Whether no action was stored from this vertex (a leaf of the tree)."""
        return not self.subtree

    @property
    def visits(self) -> torch.Tensor | None:
        """Alias of :attr:`count`."""
        return self.count

    def _walk(self, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Tree]]:
        yield path, self
        for i, child in enumerate(self.subtree):
            yield from child._walk((*path, i))

    def vertices(
        self, *, key_type: Literal["id", "hash", "path"] = "hash"
    ) -> dict[int | tuple[int, ...], Tree]:
        """Every vertex, keyed by its ``node_id``, its ``hash`` or its path of child indices.

        Raises:
            ValueError: an unknown ``key_type``.
        """
        if key_type not in ("id", "hash", "path"):
            raise ValueError(
                f"Tree.vertices: expected key_type 'id', 'hash' or 'path', got {key_type!r}."
            )
        out: dict = {}
        for path, tree in self._walk():
            key = {"id": tree.node_id, "hash": tree.hash, "path": path}[key_type]
            out.setdefault(key, tree)
        return out

    def num_vertices(self, *, count_repeat: bool = False) -> int:
        """The number of vertices; a state reached by several paths counts once unless
        ``count_repeat``."""
        if count_repeat:
            return sum(1 for _ in self._walk())
        return len(self.vertices(key_type="id"))

    def edges(self) -> list[tuple[int, int]]:
        """``(parent node_id, child node_id)`` of every edge, each once."""
        seen: dict[tuple[int, int], None] = {}
        for _, tree in self._walk():
            for child in tree.subtree:
                seen.setdefault((tree.node_id, child.node_id), None)
        return list(seen)

    def valid_paths(self) -> Iterator[tuple[int, ...]]:
        """The path (child indices) of every leaf."""
        for path, tree in self._walk():
            if tree.is_terminal and path:
                yield path

    def max_length(self) -> int:
        """The number of edges of the longest path."""
        return max((len(p) for p in self.valid_paths()), default=0)

    def rollout_from_path(self, path: tuple[int, ...]) -> TensorDictBase | None:
        """The steps along ``path`` (child indices from this vertex), concatenated.

        Raises:
            IndexError: ``path`` leaves the tree.
        """
        tree, parts = self, []
        for depth, i in enumerate(path):
            if not 0 <= i < tree.num_children:
                raise IndexError(
                    f"Tree.rollout_from_path: step {depth} of {path} is child {i}, but that "
                    f"vertex has {tree.num_children} children."
                )
            tree = tree.subtree[i]
            parts.append(tree.rollout)
        return torch.cat(parts) if parts else None

    def get_vertex_by_id(self, id: int) -> Tree:
        """The first vertex (depth first) whose ``node_id`` is ``id``.

        Raises:
            KeyError: no vertex has it.
        """
        found = self.vertices(key_type="id").get(id)
        if found is None:
            raise KeyError(f"Tree.get_vertex_by_id: no vertex has node_id {id}.")
        return found

    def get_vertex_by_hash(self, hash: int) -> Tree:
        """The first vertex whose ``hash`` is ``hash``.

        Raises:
            KeyError: no vertex has it.
        """
        found = self.vertices(key_type="hash").get(hash)
        if found is None:
            raise KeyError(f"Tree.get_vertex_by_hash: no vertex has hash {hash}.")
        return found

    def __contains__(self, other: Tree) -> bool:
        return other.node_id in self.vertices(key_type="id")

    def to_string(self, node_format_fn=None) -> str:
        """An indented listing, one line per vertex (``node_format_fn(tree)`` gives the text;
        defaults to the node id and the action that led there)."""

        def default(tree: Tree) -> str:
            if tree.rollout is None:
                return f"node {tree.node_id} (root)"
            actions = tree.rollout.get("action", None)
            shown = actions.tolist() if actions is not None else "?"
            return f"node {tree.node_id} <- action {shown}"

        fmt = node_format_fn or default
        return "\n".join("  " * len(path) + fmt(tree) for path, tree in self._walk())

    def __repr__(self) -> str:
        return (
            f"Tree(node_id={self.node_id}, num_children={self.num_children}, "
            f"num_vertices={self.num_vertices()})"
        )


__all__ = ["Tree"]
