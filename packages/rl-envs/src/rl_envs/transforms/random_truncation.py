"""RandomTruncationTransform: random episode horizons that spread a batch of envs in time."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_core.keys import DONE, RESET, STEP_COUNT, TRUNCATED


def _check_probability(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(
            f"RandomTruncationTransform: expected {name} to be a probability in [0, 1], got "
            f"{value!r}."
        )
    return float(value)


class RandomTruncationTransform(Transform):
    """Truncates episodes at random horizons, so that the sub-envs of a batch that share one
    episode length do not all start their episodes at the same steps.

    It reads the ``"step_count"`` written by a :class:`~rl_core.StepCounter` before it in
    the transforms. At the first reset every sub-env draws its horizon uniformly from
    ``{1, ..., max_horizon}``. When a sub-env is reset on its own afterwards (a ``"_reset"``
    mask, as at the end of its episode; a reset of the whole batch keeps the horizons), it
    draws a horizon from
    ``{min_horizon, ..., max_horizon}`` with probability ``first_episode_prob`` (its first
    reset after the initial spread) or ``prob`` (later resets), and takes ``max_horizon``
    otherwise. A step whose count reaches the sub-env's horizon is ``truncated`` (and
    ``done``). Horizons are drawn from torch's global generator (``torch.manual_seed``).

    Args:
        min_horizon: the shortest random horizon (inclusive), ``>= 1``.
        max_horizon: the longest (inclusive), also the horizon of episodes that are not
            truncated at random; usually the env's own episode length.
        prob: the chance of a random horizon at each reset after the first episode.
            Defaults to 0 (only the initial spread).
        first_episode_prob: the chance for the episode after the initial spread. Defaults to
            ``prob``.

    Raises:
        ValueError: horizons below 1 or ``min_horizon > max_horizon``, probabilities outside
            ``[0, 1]``, or (when the specs are read) no ``"step_count"`` from a
            ``StepCounter`` before it.

    Examples:
        >>> import torch
        >>> from rl_core import Compose, StepCounter, TransformedEnv
        >>> from rl_envs import PendulumEnv
        >>> env = TransformedEnv(
        ...     PendulumEnv(batch_size=[3]),
        ...     Compose(StepCounter(), RandomTruncationTransform(5, 5, prob=1.0)),
        ... )
        >>> _ = torch.manual_seed(0)
        >>> traj = env.rollout(20, break_when_any_done=False)
        >>> bool((traj["next", "step_count"] <= 5).all())
        True
    """

    def __init__(
        self,
        min_horizon: int,
        max_horizon: int,
        prob: float = 0.0,
        first_episode_prob: float | None = None,
    ) -> None:
        for name, value in (("min_horizon", min_horizon), ("max_horizon", max_horizon)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"RandomTruncationTransform: expected {name} to be an int >= 1, got {value!r}."
                )
        if min_horizon > max_horizon:
            raise ValueError(
                f"RandomTruncationTransform: expected min_horizon <= max_horizon, got "
                f"min_horizon={min_horizon}, max_horizon={max_horizon}."
            )
        super().__init__()
        self.min_horizon = min_horizon
        self.max_horizon = max_horizon
        self.prob = _check_probability(prob, "prob")
        self.first_episode_prob = _check_probability(
            self.prob if first_episode_prob is None else first_episode_prob,
            "first_episode_prob",
        )
        self.horizons: torch.Tensor | None = None
        self._first_episode: torch.Tensor | None = None

    def _draw(self, shape: torch.Size, device: torch.device) -> torch.Tensor:
        return torch.randint(self.min_horizon, self.max_horizon + 1, shape, device=device)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        count = tensordict_reset.get(STEP_COUNT, None)
        if count is None:
            return tensordict_reset
        done = tensordict_reset.get(DONE, None)
        if done is not None:
            tensordict_reset.set(TRUNCATED, torch.zeros_like(done))
        if self.horizons is None or self.horizons.shape != count.shape:
            self.horizons = torch.randint(1, self.max_horizon + 1, count.shape, device=count.device)
            self._first_episode = torch.ones(count.shape, dtype=torch.bool, device=count.device)
            return tensordict_reset
        mask = None if tensordict is None else tensordict.get(RESET, None)
        if mask is None:  # a reset of the whole batch (a new rollout) keeps the horizons
            return tensordict_reset
        reset = mask.reshape(self.horizons.shape).bool()
        chance = torch.where(
            self._first_episode,
            torch.full(count.shape, self.first_episode_prob, device=count.device),
            torch.full(count.shape, self.prob, device=count.device),
        )
        random = torch.rand(count.shape, device=count.device) < chance
        drawn = torch.where(random, self._draw(count.shape, count.device), self.max_horizon)
        self.horizons = torch.where(reset, drawn, self.horizons)
        self._first_episode = self._first_episode & ~reset
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        count = next_tensordict.get(STEP_COUNT, None)
        if count is None or self.horizons is None:
            return next_tensordict
        over = count >= self.horizons
        for key in (TRUNCATED, DONE):
            current = next_tensordict.get(key, None)
            next_tensordict.set(key, over if current is None else current | over)
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        if STEP_COUNT not in observation_spec.keys():
            raise ValueError(
                "RandomTruncationTransform: no 'step_count' among the observations of the env "
                "below it; put a StepCounter before it: Compose(StepCounter(), "
                "RandomTruncationTransform(...))."
            )
        return observation_spec

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict


__all__ = ["RandomTruncationTransform"]
