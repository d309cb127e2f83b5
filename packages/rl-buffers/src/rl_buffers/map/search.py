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
    """Monte Carlo tree search on ``B`` roots at once: each simulation expands one leaf per root,
    all ``B`` leaves in one ``env.step`` and one ``evaluate`` call.

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
        env: the game (``batch_size == [B]``).
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

    Raises:
        ValueError: ``num_simulations`` is not a positive int, the env is not batched
            ``[B]``, or ``exploration_fraction`` is outside ``[0, 1]``.

    Examples:
        >>> import torch
        >>> from rl_envs.native import TicTacToeEnv
        >>> env = TicTacToeEnv(batch_size=[2])
        >>> uniform = lambda td: (torch.zeros(2, 9), torch.zeros(2))
        >>> search = MCTS(env, uniform, num_simulations=50)
        >>> root = env.reset()
        >>> root["board"][1] = torch.tensor([[1, 1, -1], [0, 0, -1], [-1, -1, -1]])
        >>> root["mask"][1] = root["board"][1].flatten() == -1
        >>> out = search(root)
        >>> out["visits"].shape, out["visits"][1].argmax().item()  # the winning move
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
        self.state_keys = list(dict.fromkeys([*env.state_keys, mask_key, turn_key]))
        self.tree: TensorDict | None = None

    @property
    def batch(self) -> int:
        return self.env.batch_size[0]

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
        rewards = [nxt.get(key).reshape(self.batch) for key in self.reward_keys]
        if len(rewards) == 1:
            return rewards[0].float()
        stacked = torch.stack(rewards, -1).float()
        return stacked.gather(-1, turn.reshape(self.batch, 1).long()).squeeze(-1)

    def _new_tree(self, root: TensorDictBase) -> TensorDict:
        b, m = self.batch, self.num_simulations + 1
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
        if root.batch_size != self.env.batch_size:
            raise ValueError(
                f"MCTS: expected roots batched {list(self.env.batch_size)} (the env's "
                f"batch_size), got {list(root.batch_size)}."
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

    def _simulate(self, tree: TensorDict, root: TensorDictBase) -> None:
        b = self.batch
        rows = torch.arange(b)
        edges = tree["edges"]
        visits, wins, priors = edges["visits"], edges["win_count"], edges["prior_prob"]
        rewards, children = edges["reward"], edges["child"]
        masks = tree["states"].get(self.mask_key)
        node = torch.zeros(b, dtype=torch.long)
        active = torch.ones(b, dtype=torch.bool)
        expand = torch.zeros(b, dtype=torch.bool)
        path_nodes, path_actions, path_valid = [], [], []
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
            path_nodes.append(node)
            path_actions.append(action)
            path_valid.append(active.clone())
            child = children[rows, node, action]
            fresh = active & (child < 0)
            expand |= fresh
            stop = fresh | (active & (child >= 0) & tree["terminal"][rows, child.clamp(min=0)])
            active = active & ~stop
            node = torch.where(active, child, node)
        leaf_value = torch.zeros(b)
        if bool(expand.any()):
            leaf_value = self._expand(tree, root, path_nodes, path_actions, path_valid, expand)
        # backup: the value for the mover at each edge is its reward minus the value below
        below = leaf_value
        for node, action, valid in zip(
            reversed(path_nodes), reversed(path_actions), reversed(path_valid), strict=True
        ):
            q = rewards[rows, node, action] - below
            visits[rows, node, action] += valid.float()
            wins[rows, node, action] += torch.where(valid, q, 0.0)
            below = torch.where(valid, q, below)

    def _expand(self, tree, root, path_nodes, path_actions, path_valid, expand) -> torch.Tensor:
        """Steps the env from each selected leaf edge (rows ``expand``); returns the new
        nodes' values for their player to move (0 elsewhere)."""
        b = self.batch
        rows = torch.arange(b)
        # the last valid (node, action) of each row's path is its leaf edge
        depth = torch.stack(path_valid, -1).long().sum(-1) - 1
        nodes = torch.stack(path_nodes, -1)[rows, depth]
        actions = torch.stack(path_actions, -1)[rows, depth]
        states = tree["states"][rows, nodes]
        # rows that expand nothing step a legal move from their root instead (discarded)
        pad_action = root.get(self.mask_key).float().argmax(-1)
        if not bool(expand.all()):
            states = torch.where(expand, states, root.select(*self.state_keys))
        actions = torch.where(expand, actions, pad_action)
        step_in = states.clone().set(ACTION, actions.to(self.env.action_spec.dtype))
        nxt = self.env.step(step_in).get("next")
        reward = self._mover_reward(states.get(self.turn_key), nxt)
        done = nxt.get(DONE).reshape(b)
        new = tree["size"].clone()
        tree["size"] += expand.long()
        er = rows[expand]
        tree["states"][er, new[expand]] = nxt.select(*self.state_keys)[expand]
        tree["terminal"][er, new[expand]] = done[expand]
        edges = tree["edges"]
        edges["child"][er, nodes[expand], actions[expand]] = new[expand]
        edges["reward"][er, nodes[expand], actions[expand]] = reward[expand]
        prior, value = self._priors(nxt.select(*self.state_keys))
        edges["prior_prob"][er, new[expand]] = prior[expand]
        return torch.where(expand & ~done, value, 0.0)


__all__ = ["MCTS"]
