"""MCTS: batched Monte Carlo tree search over a stateless two-player env, one tree per root."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase

from rl_buffers.map.forest import MCTSForest
from rl_buffers.map.scores import MCTSScore, PUCTScore
from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, NEXT

Evaluator = Callable[[TensorDictBase], tuple[torch.Tensor, torch.Tensor]]


class MCTS:
    """Monte Carlo tree search on ``B`` roots at once: each simulation expands one leaf per root
    (or ``leaves_per_root``), all leaves in one ``env.step`` and one ``evaluate`` call.

    The env must be stateless (its state entries travel in the TensorDict, as
    :class:`~rl_envs.native.TicTacToeEnv`'s) with a fixed batch size ``[B]``; it describes an
    alternating two-player zero-sum game: ``turn_key`` says who moves, ``mask_key`` which
    actions are legal, ``reward_keys[k]`` is player ``k``'s reward (one key: the reward of the
    player who moved). Values are from the point of view of the player to move: an edge's value
    is its reward for the mover minus the value of the position it leads to.

    The trees live in tensors of ``max_nodes`` slots per root: the node states in a
    ``[B, max_nodes]`` TensorDict, and per edge the visit counts (``visits``), summed values
    (``win_count``), priors (``prior_prob``), rewards and child indices, so the selection
    reads them with any :class:`MCTSScore` (PUCT by default: AlphaZero's search).

    Args:
        env: the game (``batch_size == [B * leaves_per_root]``).
        evaluate: ``evaluate(states) -> (logits, value)`` for a ``[B]`` TensorDict of states:
            ``(B, A)`` prior logits and ``(B,)`` values for the player to move, in ``[-1, 1]``.

    Keyword Args:
        num_simulations: simulations per call (each expands at most one leaf per root).
        score: the selection score. Defaults to ``PUCTScore(c=1.5)``.
        mask_key, turn_key: the legal-action mask ``(B, A)`` and the player to move.
        reward_keys: the players' reward keys. Defaults to ``env.reward_keys``.
        dirichlet_alpha: add ``Dirichlet(alpha)`` noise to the root priors (self-play).
        exploration_fraction: the noise's share of the root priors.
        generator: the noise's random generator.
        leaves_per_root: leaves selected per root and simulation, with a virtual loss (each
            selected path counts as one more visit lost until the batch is backed up), so the
            env steps ``B * leaves_per_root`` leaves at once; its batch size must be that. A
            leaf edge selected twice in one batch is expanded once.

    Raises:
        ValueError: ``num_simulations`` is not a positive int, the env is not batched
            ``[B]``, or ``exploration_fraction`` is outside ``[0, 1]``.

    Examples:
        The example needs rl-envs (``TicTacToeEnv``), so it is not run as a doctest here;
        ``tests/map/test_search.py`` runs the same search on positions solved by hand. Square 2
        wins for the side to move.
        >>> import torch  # doctest: +SKIP
        >>> from rl_envs.native import TicTacToeEnv  # doctest: +SKIP
        >>> env = TicTacToeEnv(batch_size=[2])  # doctest: +SKIP
        >>> uniform = lambda td: (torch.zeros(2, 9), torch.zeros(2))  # doctest: +SKIP
        >>> search = MCTS(env, uniform, num_simulations=50)  # doctest: +SKIP
        >>> root = env.reset()  # doctest: +SKIP
        >>> board = torch.tensor([[1, 1, -1], [0, 0, -1], [-1, -1, -1]])  # doctest: +SKIP
        >>> root["board"][1] = board  # doctest: +SKIP
        >>> root["mask"][1] = root["board"][1].flatten() == -1  # doctest: +SKIP
        >>> out = search(root)  # doctest: +SKIP
        >>> out["visits"].shape, out["visits"][1].argmax().item()  # doctest: +SKIP
        (torch.Size([2, 9]), 2)
    """

    def __init__(
        self,
        env: EnvBase,
        evaluate: Evaluator,
        *,
        num_simulations: int = 64,
        score: MCTSScore | None = None,
        mask_key: NestedKey = "mask",
        turn_key: NestedKey = "turn",
        reward_keys: list[NestedKey] | None = None,
        dirichlet_alpha: float | None = None,
        exploration_fraction: float = 0.25,
        generator: torch.Generator | None = None,
        leaves_per_root: int = 1,
    ) -> None:
        if len(env.batch_size) != 1:
            raise ValueError(
                f"MCTS: expected an env with a batch of roots, batch_size [B], got "
                f"{list(env.batch_size)}. Build the env with batch_size=[B]."
            )
        if isinstance(num_simulations, bool) or not isinstance(num_simulations, int):
            raise ValueError(
                f"MCTS: expected num_simulations to be a positive int, got {num_simulations!r}."
            )
        if num_simulations < 1:
            raise ValueError(
                f"MCTS: expected num_simulations to be a positive int, got {num_simulations!r}."
            )
        if isinstance(leaves_per_root, bool) or not isinstance(leaves_per_root, int):
            raise ValueError(
                f"MCTS: expected leaves_per_root to be a positive int, got {leaves_per_root!r}."
            )
        if leaves_per_root < 1 or env.batch_size[0] % leaves_per_root:
            raise ValueError(
                f"MCTS: the env's batch ({env.batch_size[0]}) must be the number of roots "
                f"times leaves_per_root ({leaves_per_root}), got leaves_per_root="
                f"{leaves_per_root}. Build the env with batch_size=[roots * leaves_per_root]."
            )
        if not 0.0 <= exploration_fraction <= 1.0:
            raise ValueError(
                f"MCTS: expected exploration_fraction in [0, 1], got {exploration_fraction!r}."
            )
        self.env = env
        self.evaluate = evaluate
        self.num_simulations = num_simulations
        self.score = score if score is not None else PUCTScore(c=1.5)
        self.mask_key = mask_key
        self.turn_key = turn_key
        self.reward_keys = list(reward_keys) if reward_keys is not None else env.reward_keys
        self.dirichlet_alpha = dirichlet_alpha
        self.exploration_fraction = exploration_fraction
        self.generator = generator
        self.leaves_per_root = leaves_per_root
        self.state_keys = list(dict.fromkeys([*env.state_keys, mask_key, turn_key]))
        self.tree: TensorDict | None = None

    @property
    def batch(self) -> int:
        """The number of roots searched at once (the env's batch over ``leaves_per_root``)."""
        return self.env.batch_size[0] // self.leaves_per_root

    # ------------------------------------------------------------------ helpers
    def _priors(self, states: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = self.evaluate(states)
        mask = states.get(self.mask_key)
        if logits.shape != mask.shape or value.shape != mask.shape[:1]:
            raise ValueError(
                f"MCTS: evaluate must return logits of shape {tuple(mask.shape)} and values of "
                f"shape {tuple(mask.shape[:1])}, got {tuple(logits.shape)} and "
                f"{tuple(value.shape)}."
            )
        logits = logits.detach().float().masked_fill(~mask, -torch.inf)
        return torch.softmax(logits, -1).nan_to_num(0.0), value.detach().float()

    def _mover_reward(self, turn: torch.Tensor, nxt: TensorDictBase) -> torch.Tensor:
        rewards = [nxt.get(key).reshape(-1) for key in self.reward_keys]
        if len(rewards) == 1:
            return rewards[0].float()
        stacked = torch.stack(rewards, -1).float()
        return stacked.gather(-1, turn.reshape(-1, 1).long()).squeeze(-1)

    def _new_tree(self, root: TensorDictBase) -> TensorDict:
        b, m = self.batch, self.num_simulations * self.leaves_per_root + 1
        n_actions = root.get(self.mask_key).shape[-1]
        states = root.select(*self.state_keys).unsqueeze(1).expand(b, m).clone()
        edges = TensorDict(
            {
                "visits": torch.zeros(b, m, n_actions),
                "win_count": torch.zeros(b, m, n_actions),
                "prior_prob": torch.zeros(b, m, n_actions),
                "reward": torch.zeros(b, m, n_actions),
                "child": torch.full((b, m, n_actions), -1, dtype=torch.long),
            },
            batch_size=[b, m],
        )
        return TensorDict(
            states=states,
            edges=edges,
            terminal=torch.zeros(b, m, dtype=torch.bool),
            size=torch.ones(b, dtype=torch.long),
            batch_size=[b],
        )

    # ------------------------------------------------------------------ search
    def __call__(self, root: TensorDictBase) -> TensorDict:
        """Searches from each root; returns the root's ``visits`` ``(B, A)``, the visit
        distribution ``policy`` and the ``value`` ``(B,)`` (the mean backed-up value).

        Raises:
            ValueError: ``root`` is not batched ``[B]`` or a root has no legal action.
        """
        if root.batch_size != torch.Size([self.batch]):
            raise ValueError(
                f"MCTS: expected roots batched [{self.batch}] (the env's batch_size over "
                f"leaves_per_root), got {list(root.batch_size)}."
            )
        mask = root.get(self.mask_key)
        if not bool(mask.any(-1).all()):
            raise ValueError(
                f"MCTS: roots {torch.nonzero(~mask.any(-1)).flatten().tolist()} have no legal "
                f"action ({self.mask_key!r} all False): search only positions still in play."
            )
        tree = self.tree = self._new_tree(root)
        prior, _ = self._priors(tree["states"][:, 0])
        if self.dirichlet_alpha is not None:
            alpha = torch.full(mask.shape, float(self.dirichlet_alpha))
            noise = torch._standard_gamma(alpha, generator=self.generator).masked_fill(~mask, 0)
            noise = noise / noise.sum(-1, keepdim=True)
            frac = self.exploration_fraction
            prior = (1 - frac) * prior + frac * noise
        tree["edges", "prior_prob"][:, 0] = prior
        for _ in range(self.num_simulations):
            self._simulate(tree, root)
        visits = tree["edges", "visits"][:, 0]
        total = visits.sum(-1)
        value = tree["edges", "win_count"][:, 0].sum(-1) / total.clamp(min=1)
        return TensorDict(
            visits=visits.clone(),
            policy=visits / total.unsqueeze(-1),
            value=value,
            batch_size=[self.batch],
        )

    def to_forest(self, forest: MCTSForest) -> MCTSForest:
        """Stores every transition the last search expanded (all roots) in ``forest``, whose
        keys it sets from the env; returns it.

        Raises:
            RuntimeError: no search ran yet.
        """
        if self.tree is None:
            raise RuntimeError("MCTS.to_forest: no search ran yet; call the search first.")
        children = self.tree["edges", "child"]
        b, node, action = torch.nonzero(children >= 0, as_tuple=True)
        child = children[b, node, action]
        states = self.tree["states"]
        steps = states[b, node].clone()
        steps.set(ACTION, action.to(self.env.action_spec.dtype))
        nxt = states[b, child].clone()
        nxt.set("reward", self.tree["edges", "reward"][b, node, action].unsqueeze(-1))
        nxt.set(DONE, self.tree["terminal"][b, child].unsqueeze(-1))
        steps.set(NEXT, nxt)
        forest.observation_keys = [k for k in self.state_keys if k != self.mask_key]
        forest.action_keys = [ACTION]
        forest.reward_keys = ["reward"]
        forest.extend(steps)
        return forest

    def _select(self, tree: TensorDict):
        """Walks each root's tree by score to an unexpanded edge or a terminal child; returns
        the path (per depth: nodes, actions, valid rows), the rows to expand and their leaf
        edge (node, action)."""
        b = self.batch
        rows = torch.arange(b)
        edges = tree["edges"]
        visits, wins, priors = edges["visits"], edges["win_count"], edges["prior_prob"]
        children = edges["child"]
        masks = tree["states"].get(self.mask_key)
        node = torch.zeros(b, dtype=torch.long)
        active = torch.ones(b, dtype=torch.bool)
        expand = torch.zeros(b, dtype=torch.bool)
        leaf_node = torch.zeros(b, dtype=torch.long)
        leaf_action = torch.zeros(b, dtype=torch.long)
        path = []
        while bool(active.any()):
            stats = TensorDict(
                win_count=wins[rows, node],
                visits=visits[rows, node],
                total_visits=visits[rows, node].sum(-1),
                prior_prob=priors[rows, node],
                batch_size=[b],
            )
            score = self.score(stats).get(self.score.score_key)
            action = score.masked_fill(~masks[rows, node], -torch.inf).argmax(-1)
            path.append((node, action, active.clone()))
            child = children[rows, node, action]
            fresh = active & (child < 0)
            expand |= fresh
            leaf_node = torch.where(fresh, node, leaf_node)
            leaf_action = torch.where(fresh, action, leaf_action)
            stop = fresh | (active & (child >= 0) & tree["terminal"][rows, child.clamp(min=0)])
            active = active & ~stop
            node = torch.where(active, child, node)
        return path, expand, leaf_node, leaf_action

    def _add_to_path(self, tree: TensorDict, path, visits: float, values) -> None:
        """Adds ``visits`` and ``values`` (a float, or per row) to every edge of ``path``."""
        rows = torch.arange(self.batch)
        edges = tree["edges"]
        for node, action, valid in path:
            edges["visits"][rows, node, action] += torch.where(valid, visits, 0.0)
            edges["win_count"][rows, node, action] += torch.where(valid, values, 0.0)

    def _simulate(self, tree: TensorDict, root: TensorDictBase) -> None:
        b, k_leaves = self.batch, self.leaves_per_root
        rows = torch.arange(b)
        selections = []
        for k in range(k_leaves):
            path, expand, leaf_node, leaf_action = self._select(tree)
            # a leaf edge already selected in this batch is expanded once; the later
            # selection backs up the same value
            dup_of = torch.full((b,), -1, dtype=torch.long)
            for j in range(k - 1, -1, -1):
                _, e_j, n_j, a_j, _ = selections[j]
                same = expand & e_j & (n_j == leaf_node) & (a_j == leaf_action)
                dup_of = torch.where(same, j, dup_of)
            selections.append((path, expand, leaf_node, leaf_action, dup_of))
            if k_leaves > 1:  # virtual loss: the next selections avoid this path
                self._add_to_path(tree, path, 1.0, -1.0)
        if k_leaves > 1:
            for path, *_ in selections:
                self._add_to_path(tree, path, -1.0, 1.0)
        real = [expand & (dup < 0) for _, expand, _, _, dup in selections]
        values = self._expand(
            tree, root, [s[2] for s in selections], [s[3] for s in selections], real
        )
        rewards = tree["edges", "reward"]
        for k, (path, _, _, _, dup) in enumerate(selections):
            leaf_value = values[k]
            for j in range(k):
                leaf_value = torch.where(dup == j, values[j], leaf_value)
            # backup: the value for the mover at each edge is its reward minus the value below
            below = leaf_value
            for node, action, valid in reversed(path):
                q = rewards[rows, node, action] - below
                tree["edges", "visits"][rows, node, action] += valid.float()
                tree["edges", "win_count"][rows, node, action] += torch.where(valid, q, 0.0)
                below = torch.where(valid, q, below)

    def _expand(self, tree, root, nodes, actions, real) -> list[torch.Tensor]:
        """Steps the env from the selected leaf edges (per selection ``k``: rows ``real[k]``)
        in one batch of ``B * leaves_per_root``; returns, per selection, the new nodes'
        values for their player to move (0 where nothing was expanded or the game ended)."""
        b = self.batch
        zero = [torch.zeros(b) for _ in nodes]
        if not any(bool(r.any()) for r in real):
            return zero
        states = torch.cat([tree["states"][torch.arange(b), n] for n in nodes])
        action = torch.cat(actions)
        expand = torch.cat(real)
        # rows that expand nothing step a legal move from their root instead (discarded)
        roots = root.select(*self.state_keys).repeat(len(nodes))
        pad_action = roots.get(self.mask_key).float().argmax(-1)
        if not bool(expand.all()):
            states = torch.where(expand, states, roots)
        action = torch.where(expand, action, pad_action)
        step_in = states.clone().set(ACTION, action.to(self.env.action_spec.dtype))
        nxt = self.env.step(step_in).get("next")
        reward = self._mover_reward(states.get(self.turn_key), nxt)
        done = nxt.get(DONE).reshape(-1)
        prior, value = self._priors(nxt.select(*self.state_keys))
        new_states = nxt.select(*self.state_keys)
        edges = tree["edges"]
        out = []
        for k in range(len(nodes)):
            part = slice(k * b, (k + 1) * b)
            e = real[k]
            er = torch.nonzero(e).flatten()
            new = tree["size"][er]
            tree["size"][er] += 1
            tree["states"][er, new] = new_states[part][e]
            tree["terminal"][er, new] = done[part][e]
            edges["child"][er, nodes[k][e], actions[k][e]] = new
            edges["reward"][er, nodes[k][e], actions[k][e]] = reward[part][e]
            edges["prior_prob"][er, new] = prior[part][e]
            out.append(torch.where(e & ~done[part], value[part], 0.0))
        return out


__all__ = ["MCTS"]
