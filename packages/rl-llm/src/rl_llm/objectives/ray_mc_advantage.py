"""RayMCAdvantage: MCAdvantage whose groups are gathered in a Ray actor shared by many writers."""

from __future__ import annotations

from typing import Any, Literal

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey
from rl_llm._utils import as_strings, import_ray
from rl_llm.collectors._padding import pad_and_cat
from rl_llm.keys import ADVANTAGE, QUERY
from rl_llm.objectives.mc_advantage import MCAdvantage
from rl_llm.objectives.mc_selector import MCAdvantageSelector

_RETURNS = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax}


class _GroupingActor:
    """The actor's side: finished dialogs wait here by prompt until their group is whole."""

    def __init__(self, advantage: MCAdvantage, pad_token_id: int) -> None:
        self.advantage = advantage
        self.pad_token_id = pad_token_id
        self.pending: dict[str, list[TensorDictBase]] = {}

    def add(self, rows: TensorDictBase, prompts: list[str]) -> TensorDictBase | None:
        size = self.advantage.candidate_group_size
        complete: list[TensorDictBase] = []
        for i, prompt in enumerate(prompts):
            queue = self.pending.setdefault(prompt, [])
            queue.append(rows[i : i + 1])
            if len(queue) == size:
                complete.extend(self.pending.pop(prompt))
        if not complete:
            return None
        out = self.advantage(pad_and_cat(complete, self.pad_token_id))
        return out if out.batch_size[0] else None

    def pending_counts(self) -> dict[str, int]:
        return {prompt: len(rows) for prompt, rows in self.pending.items()}


class RayMCAdvantage(Transform):
    """:class:`MCAdvantage` whose groups are gathered in one Ray actor, shared by writers.

    Several collectors (in several processes) each finish some of the responses to a prompt;
    each hands its batch of finished dialogs to ``transform(batch)`` (or ``transform.inv``,
    the replay-buffer path). The actor keeps the dialogs by prompt (``prompt_key``) until a
    group of ``candidate_group_size`` (default ``grpo_size``) is whole, then computes the
    group-relative advantages of the whole groups with :class:`MCAdvantage` and returns them
    (token entries padded to common widths); ``None`` while no group is complete. Writers that
    pass the same ``actor_name`` share the pending groups.

    Args:
        grpo_size: responses per group.
        prompt_key: the entry that identifies a prompt (one string per dialog).
        rewards_key: each dialog's reward, ``[N, ...]``.
        advantage_key: where the ``[N, 1]`` advantage is written.
        done_key: each dialog's done flag; every row handed in must be done (a finished
            dialog).
        verbose: accepted for TorchRL compatibility.
        trajectory_return: how a dialog's reward entries make its return (``"sum"``, the
            default, ``"mean"`` or ``"max"``).
        keep_return_bounds: see :class:`MCAdvantage`.
        candidate_group_size: see :class:`MCAdvantage`.
        candidate_selector: see :class:`MCAdvantage` (``selector``).
        ray_init_config: ``ray.init`` keyword arguments when Ray is not running.
        remote_config: the actor's options (default ``{"num_cpus": 1}``).
        actor_name: a named actor; a running one of that name is reused.
        pad_token_id: the id that pads token entries of groups gathered from batches of
            different widths.

    Raises:
        ImportError: Ray is not installed (``pip install "rl-llm[ray]"``).
        ValueError: bad sizes or bounds (as :class:`MCAdvantage`), an unknown
            ``trajectory_return``; on call, rows that are not done, naming ``done_key``.

    Examples:
        >>> adv = RayMCAdvantage(grpo_size=2, actor_name="groups")  # doctest: +SKIP
        >>> adv(first_half) is None, adv(second_half)["advantage"].shape  # doctest: +SKIP
        (True, torch.Size([4, 1]))
    """

    def __init__(
        self,
        grpo_size: int,
        prompt_key: NestedKey = QUERY,
        rewards_key: NestedKey = ("next", "reward"),
        advantage_key: NestedKey = ADVANTAGE,
        done_key: NestedKey = ("next", "done"),
        verbose: bool = False,
        *,
        trajectory_return: Literal["sum", "max", "mean"] | None = None,
        keep_return_bounds: tuple[float, float] | None = None,
        candidate_group_size: int | None = None,
        candidate_selector: MCAdvantageSelector | None = None,
        ray_init_config: dict[str, Any] | None = None,
        remote_config: dict[str, Any] | None = None,
        actor_name: str | None = None,
        pad_token_id: int = 0,
    ) -> None:
        super().__init__(in_keys=[rewards_key], out_keys=[advantage_key])
        if trajectory_return not in (None, *_RETURNS):
            raise ValueError(
                f"RayMCAdvantage: expected trajectory_return in {sorted(_RETURNS)} or None, got "
                f"{trajectory_return!r}."
            )
        # Built here, so bad sizes and bounds are refused before any actor starts.
        advantage = MCAdvantage(
            grpo_size,
            prompt_key=prompt_key,
            reward_key="_return",
            advantage_key=advantage_key,
            candidate_group_size=candidate_group_size,
            keep_return_bounds=keep_return_bounds,
            selector=candidate_selector,
        )
        self.grpo_size = grpo_size
        self.candidate_group_size = advantage.candidate_group_size
        self.prompt_key = prompt_key
        self.rewards_key = rewards_key
        self.advantage_key = advantage_key
        self.done_key = done_key
        self.verbose = verbose
        self.trajectory_return = trajectory_return or "sum"
        ray = import_ray("RayMCAdvantage")
        if not ray.is_initialized():
            ray.init(**(ray_init_config or {}))
        self._owns_actor = True
        actor = None
        if actor_name is not None:
            try:
                actor = ray.get_actor(actor_name)
                self._owns_actor = False
            except ValueError:
                actor = None
        if actor is None:
            options = {"num_cpus": 1, **(remote_config or {})}
            if actor_name is not None:
                options["name"] = actor_name
            actor = ray.remote(_GroupingActor).options(**options).remote(advantage, pad_token_id)
        self._actor = actor
        self.actor_name = actor_name

    def _returns(self, tensordict: TensorDictBase) -> torch.Tensor:
        rewards = tensordict.get(self.rewards_key, None)
        if rewards is None:
            raise KeyError(f"RayMCAdvantage: expected the rewards at {self.rewards_key!r}.")
        flat = rewards.reshape(tensordict.shape[0], -1).float()
        return _RETURNS[self.trajectory_return](flat, -1).unsqueeze(-1)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        if tensordict.batch_dims != 1:
            raise ValueError(
                f"RayMCAdvantage: expected a 1-d batch of dialogs, got batch "
                f"{tuple(tensordict.batch_size)}. Reshape it (e.g. td.reshape(-1))."
            )
        done = tensordict.get(self.done_key, None)
        if done is not None and not bool(done.reshape(tensordict.shape[0], -1).all()):
            raise ValueError(
                f"RayMCAdvantage: expected finished dialogs (all True at {self.done_key!r}), got "
                f"{int((~done.reshape(tensordict.shape[0], -1).all(-1)).sum())} unfinished "
                f"row(s). Hand in the last step of each dialog."
            )
        prompts = as_strings(tensordict.get(self.prompt_key))
        rows = tensordict.copy()
        rows.set("_return", self._returns(tensordict))
        out = import_ray("RayMCAdvantage").get(self._actor.add.remote(rows, prompts))
        return None if out is None else out.exclude("_return")

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        return self._call(tensordict)

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        """The replay-buffer path: the same as calling the transform."""
        return self._call(tensordict)

    def pending(self) -> dict[str, int]:
        """How many dialogs wait in the actor, by prompt."""
        return import_ray("RayMCAdvantage").get(self._actor.pending_counts.remote())

    def close(self) -> None:
        """Ends the actor if this transform started it (pending dialogs are dropped)."""
        if self._owns_actor and self._actor is not None:
            import_ray("RayMCAdvantage").kill(self._actor)
        self._actor = None

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "RayMCAdvantage works on batches of finished dialogs, not inside an env step: call "
            "it on the batch (or pass it as a collector postproc)."
        )

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset
