"""Model-predictive-control planners used as policies: ``MPCPlannerBase``, ``CEMPlanner`` and
``MPPIPlanner``.

A planner reads the current state from the TensorDict, simulates candidate action sequences in
an env (the true env or a model-based one), and writes the first action of the best plan. All
candidates are stepped together: the state of each batch element is expanded to
``[*batch, num_candidates]`` and the env steps that batch. An env whose step accepts any batch
(:class:`~rl_envs.model_based.ModelBasedEnvBase`) works with any input batch; a batch-locked env
must have ``batch_size == (*input_batch, num_candidates)``.

Every candidate runs the whole planning horizon, as in TorchRL: a candidate that reaches a done
state (terminated or truncated) is not reset, and its rewards after the step where it first got
done are zeroed before it is scored (the reward of that step counts). The others are not cut
short by it.
"""

from __future__ import annotations

import abc
import math
from numbers import Real
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.nn import TensorDictModuleBase
from torch import nn

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, NEXT, REWARD, NestedKey


class _ActionSequence:
    """A policy that writes the ``t``-th precomputed action at its ``t``-th call."""

    def __init__(self, actions: torch.Tensor, action_key: NestedKey) -> None:
        self.actions = actions  # [*batch, K, H, *action_shape]
        self.action_key = action_key
        self.t = 0

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict.set(self.action_key, self.actions[..., self.t, :])
        self.t += 1
        return tensordict


class MPCPlannerBase(TensorDictModuleBase, metaclass=abc.ABCMeta):
    """Base of the planners: a policy whose action comes from planning in ``env``.

    A subclass implements ``planning(tensordict) -> action`` (shape
    ``(*tensordict.batch_size, *action_shape)``); ``forward`` clamps it into the action
    spec's bounds and writes it under ``action_key``. ``rollout_candidates`` runs candidate
    action sequences for every batch element at once.

    Args:
        env: the env to plan in (true dynamics or a model-based env).
        action_key: where the action is written. Defaults to ``"action"``.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        KeyError: ``action_key`` is not an action of ``env``.
        ValueError: (when called) a state entry holds NaN or infinite values.

    Examples:
        A random-shooting planner: the first action of the best of 32 random sequences.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.envs import EnvBase
        >>> from rl_envs.model_based import MPCPlannerBase
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> class Drift(EnvBase):  # x' = x + a, reward -x'^2; steps any batch
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
        ...         self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        ...     def _reset(self, td):
        ...         return TensorDict(observation=torch.ones(1))
        ...     def _step(self, td):
        ...         x = td["observation"] + td["action"]
        ...         return TensorDict(observation=x, reward=-x.square(),
        ...                           terminated=torch.zeros_like(x, dtype=torch.bool),
        ...                           batch_size=td.batch_size)
        ...     def _set_seed(self, seed):
        ...         torch.manual_seed(seed)
        >>> class RandomShooting(MPCPlannerBase):
        ...     def planning(self, tensordict):
        ...         batch = tensordict.batch_size
        ...         actions = torch.rand(*batch, 32, 2, *self.action_shape) * 2 - 1
        ...         traj = self.rollout_candidates(tensordict, actions)
        ...         returns = traj["next", "reward"].sum(dim=(-2, -1))  # [*B, 32]
        ...         best = returns.argmax(-1)
        ...         return actions[torch.arange(batch.numel()), best, 0]
        >>> _ = torch.manual_seed(0)
        >>> planner = RandomShooting(Drift())
        >>> state = TensorDict(observation=torch.tensor([[0.8], [-0.5]]), batch_size=[2])
        >>> action = planner(state)["action"]
        >>> action.shape, bool((action + state["observation"]).abs().max() < 0.3)
        (torch.Size([2, 1]), True)
    """

    def __init__(self, env: EnvBase, action_key: NestedKey = ACTION) -> None:
        super().__init__()
        if not isinstance(env, EnvBase):
            raise TypeError(
                f"{type(self).__name__}: expected env as an EnvBase to plan in (the true env or "
                f"a ModelBasedEnvBase), got {type(env).__name__}."
            )
        if action_key not in env.full_action_spec.keys(include_nested=True):
            raise KeyError(
                f"{type(self).__name__}: expected action_key to be one of the env's action keys "
                f"{list(env.action_keys)}, got {action_key!r}."
            )
        self.env = env
        self.action_key = action_key
        self.action_spec = env.full_action_spec[action_key]
        self.in_keys = [*env.observation_keys, *env.state_keys]
        self.out_keys = [action_key]
        batch_dims = len(env.batch_size)
        self.action_shape = torch.Size(self.action_spec.shape[batch_dims:])
        low = getattr(self.action_spec, "low", None)
        high = getattr(self.action_spec, "high", None)
        index = (0,) * batch_dims  # bounds of one sub-env (all sub-envs share the box)
        self._low = None if low is None else low[index]
        self._high = None if high is None else high[index]

    @abc.abstractmethod
    def planning(self, tensordict: TensorDictBase) -> torch.Tensor:
        """Returns the planned action for each batch element of ``tensordict``."""

    def clamp_action(self, action: torch.Tensor) -> torch.Tensor:
        """Clamps ``action`` (any leading dims, then the action shape) into the spec's box;
        unbounded specs leave it as is."""
        if self._low is None or self._high is None:
            return action
        low = self._low.to(device=action.device, dtype=action.dtype)
        high = self._high.to(device=action.device, dtype=action.dtype)
        return torch.maximum(torch.minimum(action, high), low)

    def rollout_candidates(
        self, tensordict: TensorDictBase, actions: torch.Tensor
    ) -> TensorDictBase:
        """Steps every candidate action sequence from the state in ``tensordict``.

        Args:
            tensordict: the current state, batch size ``B``.
            actions: ``(*B, num_candidates, horizon, *action_shape)``.

        Returns:
            The trajectories, batch size ``(*B, num_candidates, horizon)``: every candidate is
            stepped for the whole horizon, none is reset (a candidate that is done keeps being
            stepped from where it ended; :meth:`masked_rewards` zeroes what follows its done).
        """
        batch = tensordict.batch_size
        num_candidates, horizon = actions.shape[len(batch)], actions.shape[len(batch) + 1]
        state = tensordict.select(*self.in_keys, *self.env.done_keys, strict=False)
        td = state.unsqueeze(-1).expand(*batch, num_candidates).clone()
        env_dims = len(self.env.batch_size)
        for key in self.env.done_keys:  # steps stack alike: absent flags start False
            if td.get(key, None) is None:
                event = self.env.full_done_spec[key].shape[env_dims:]
                td.set(key, torch.zeros(*td.batch_size, *event, dtype=torch.bool, device=td.device))
        policy = _ActionSequence(actions, self.action_key)
        next_root = self.env.step_mdp_plan()
        steps = []
        for t in range(horizon):
            td = self.env.step(policy(td))
            steps.append(td)
            if t < horizon - 1:
                td = next_root(td)
        return torch.stack(steps, dim=len(batch) + 1)

    def masked_rewards(self, trajectories: TensorDictBase, reward_key: NestedKey) -> torch.Tensor:
        """The rewards of :meth:`rollout_candidates`' trajectories, zero after each candidate's
        first done step (the reward of that step is kept).

        The env's ``done`` flags decide (``done`` is ``terminated | truncated``); a level's
        flag is used where no level above it holds one, and several are OR-ed. A flag of the
        reward's shape masks it entry by entry (e.g. per agent); otherwise a step is done for
        the whole candidate when any of its flags is set.

        Args:
            trajectories: batch ``(*B, num_candidates, T)``.
            reward_key: the reward's key in ``trajectories`` (e.g. ``("next", "reward")``).

        Returns:
            The rewards, shape of ``trajectories.get(reward_key)``.
        """
        reward = trajectories.get(reward_key)
        time_dim = trajectories.batch_dims - 1
        levels = self.env.done_levels()
        top = [lv for lv in levels if not any(lv[: len(o)] == o for o in levels if o != lv)]
        after_done = None
        for level in top:
            flag = trajectories.get((NEXT, *level, DONE), None)
            if flag is None:
                continue
            if flag.shape != reward.shape:
                per_step = flag.reshape(*flag.shape[: time_dim + 1], -1).any(-1)
                extra = [1] * (reward.ndim - per_step.ndim)
                flag = per_step.reshape(*per_step.shape, *extra).expand_as(reward)
            count = flag.to(torch.int64)
            masked = count.cumsum(time_dim) > count  # a done step strictly before this one
            after_done = masked if after_done is None else after_done | masked
        if after_done is None:
            return reward
        return torch.where(after_done, torch.zeros_like(reward), reward)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Plans from the state in ``tensordict`` and writes the action into it.

        Raises:
            ValueError: a state entry the planner reads holds NaN or infinite values (every
                candidate would start from it, and the plan would be meaningless).
        """
        for key in self.in_keys:
            value = tensordict.get(key, None)
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                _refuse_non_finite(type(self).__name__, f"the state entry {key!r}", value)
        with torch.no_grad():
            action = self.planning(tensordict)
        tensordict.set(self.action_key, self.clamp_action(action).to(self.action_spec.dtype))
        return tensordict

    def _check_sizes(
        self, planning_horizon: int, optim_steps: int, num_candidates: int, top_k: int
    ) -> None:
        for name, value in (
            ("planning_horizon", planning_horizon),
            ("optim_steps", optim_steps),
            ("num_candidates", num_candidates),
            ("top_k", top_k),
        ):
            # a bool is an int to Python; NaN and inf are floats that int() cannot take
            whole = (
                isinstance(value, Real)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and int(value) == value
            )
            if not whole or value < 1:
                raise ValueError(
                    f"{type(self).__name__}: expected {name} as a positive int, got {value!r}."
                )
        if top_k > num_candidates:
            raise ValueError(
                f"{type(self).__name__}: expected top_k <= num_candidates ({num_candidates}), "
                f"got top_k={top_k}."
            )

    def _check_reward(self, trajectories: TensorDictBase) -> None:
        path = self._reward_path
        if trajectories.get(path, None) is None:
            raise KeyError(
                f"{type(self).__name__}: the env's trajectories have no reward at {path!r} "
                f"(reward_key={self.reward_key!r}); the env writes "
                f"{list(self.env.reward_keys)} under 'next'. Set reward_key to one of them."
            )

    def _initial_stats(
        self, tensordict: TensorDictBase, horizon: int, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (*tensordict.batch_size, 1, horizon, *self.action_shape)
        device = tensordict.device or self.env.device  # the model's device for a model env
        mean = torch.zeros(shape, device=device, dtype=dtype)
        return mean, torch.ones_like(mean)


def _reward_path(owner: str, reward_key: NestedKey) -> tuple[str, ...]:
    """The reward's key in the trajectories: ``reward_key`` as given when it starts with
    ``"next"`` (TorchRL's spelling, ``("next", "reward")``), else under ``"next"``."""
    try:
        key = unravel_key(reward_key)
    except Exception as err:
        raise TypeError(
            f"{owner}: expected reward_key as a str or a tuple of str (e.g. 'reward' or "
            f"('next', 'reward')), got {reward_key!r}."
        ) from err
    path = (key,) if isinstance(key, str) else tuple(key)
    if path[0] == NEXT and len(path) > 1:
        return path
    return (NEXT, *path)


def _float_dtype(spec: Any) -> torch.dtype:
    dtype = spec.dtype
    return dtype if dtype.is_floating_point else torch.get_default_dtype()


def _refuse_non_finite(owner: str, what: str, value: torch.Tensor, fix: str = "") -> None:
    """Raises a ValueError naming ``what`` when ``value`` holds NaN or infinite values."""
    finite = torch.isfinite(value)
    if not bool(finite.all()):
        raise ValueError(
            f"{owner}: {what}: {int((~finite).sum())} NaN or infinite value(s) out of "
            f"{value.numel()}; planning needs finite values.{fix}"
        )


class CEMPlanner(MPCPlannerBase):
    """Cross-entropy-method planner (as used in PlaNet, Hafner et al. 2019).

    Each of ``optim_steps`` iterations samples ``num_candidates`` action sequences of length
    ``planning_horizon`` from a diagonal Gaussian (mean 0, std 1 at first; samples clamped to
    the action bounds), rolls them out in ``env`` for the whole horizon, scores each by its
    summed reward (zero after its first done step, see the module docstring), and refits the
    Gaussian's mean and std to the ``top_k`` best (the std with Bessel's correction, as
    ``torch.std`` and TorchRL; zero when ``top_k`` is 1). The action is the first step of the
    final mean. Sampling uses torch's global generator.

    Args:
        env: the env to plan in.
        planning_horizon: length of the simulated sequences.
        optim_steps: number of refits.
        num_candidates: sequences sampled per iteration.
        top_k: elites the Gaussian is refitted to.
        reward_key: the reward entry under ``"next"`` (``"reward"``, the default), or its
            full key in the trajectories as TorchRL spells it (``("next", "reward")``).
        action_key: the action entry. Defaults to ``"action"``.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        ValueError: a size is not a positive int, or ``top_k > num_candidates``; (when
            called) the state or the simulated rewards hold NaN or infinite values.
        KeyError: (when called) the env writes no reward at ``("next", reward_key)``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.envs import EnvBase
        >>> from rl_envs.model_based import CEMPlanner
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> class Drift(EnvBase):  # x' = x + a, reward -x'^2; steps any batch
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
        ...         self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        ...     def _reset(self, td):
        ...         return TensorDict(observation=torch.ones(1))
        ...     def _step(self, td):
        ...         x = td["observation"] + td["action"]
        ...         return TensorDict(observation=x, reward=-x.square(),
        ...                           terminated=torch.zeros_like(x, dtype=torch.bool),
        ...                           batch_size=td.batch_size)
        ...     def _set_seed(self, seed):
        ...         torch.manual_seed(seed)
        >>> _ = torch.manual_seed(0)
        >>> planner = CEMPlanner(Drift(), planning_horizon=3, optim_steps=4,
        ...                      num_candidates=64, top_k=8)
        >>> state = TensorDict(observation=torch.tensor([[1.0], [-0.5]]), batch_size=[2])
        >>> action = planner(state)["action"]  # best first move: back to 0
        >>> action.shape, bool((action + state["observation"]).abs().max() < 0.2)
        (torch.Size([2, 1]), True)
    """

    def __init__(
        self,
        env: EnvBase,
        planning_horizon: int,
        optim_steps: int,
        num_candidates: int,
        top_k: int,
        reward_key: NestedKey = REWARD,
        action_key: NestedKey = ACTION,
    ) -> None:
        super().__init__(env=env, action_key=action_key)
        self._check_sizes(planning_horizon, optim_steps, num_candidates, top_k)
        self.planning_horizon = int(planning_horizon)
        self.optim_steps = int(optim_steps)
        self.num_candidates = int(num_candidates)
        self.top_k = int(top_k)
        self.reward_key = reward_key
        self._reward_path = _reward_path(type(self).__name__, reward_key)

    def planning(self, tensordict: TensorDictBase) -> torch.Tensor:
        nb = tensordict.batch_dims
        k_dim = nb  # candidate dim of [*B, K, H, *A]
        mean, std = self._initial_stats(
            tensordict, self.planning_horizon, _float_dtype(self.action_spec)
        )
        shape = (
            *tensordict.batch_size,
            self.num_candidates,
            self.planning_horizon,
            *self.action_shape,
        )
        for _ in range(self.optim_steps):
            actions = self.clamp_action(
                mean + std * torch.randn(shape, device=mean.device, dtype=mean.dtype)
            )
            traj = self.rollout_candidates(tensordict, actions)
            self._check_reward(traj)
            rewards = self.masked_rewards(traj, self._reward_path)  # [*B, K, H, 1]
            returns = rewards.reshape(*rewards.shape[: nb + 2], -1).sum((-1, -2))  # [*B, K]
            _refuse_non_finite(
                "CEMPlanner",
                f"the rewards at {self._reward_path!r} of the simulated candidates",
                returns,
                " Check the env (a learned model may have diverged).",
            )
            elite = returns.topk(self.top_k, dim=-1).indices  # [*B, k]
            index = elite.reshape(*elite.shape, *([1] * (actions.ndim - nb - 1)))
            best = actions.gather(k_dim, index.expand(*elite.shape, *actions.shape[nb + 1 :]))
            mean = best.mean(k_dim, keepdim=True)
            std = best.std(k_dim, keepdim=True) if self.top_k > 1 else torch.zeros_like(mean)
        return mean.select(k_dim, 0).select(k_dim, 0)


class MPPIPlanner(MPCPlannerBase):
    """Model-predictive path-integral planner (Williams et al. 2015; as in TD-MPC, Hansen et
    al. 2022).

    As :class:`CEMPlanner`, but candidates are scored by ``advantage_module``: it is called on
    the trajectories (batch ``(*B, num_candidates, T)``) and must write ``"advantage"``; the
    score of a candidate is its advantage at the first step. The ``top_k`` best are weighted by
    ``exp(temperature * score)`` (normalised) and the Gaussian's mean and std are refitted as
    the weighted mean and weighted std of their action sequences. The action is the first step
    of the final mean.

    Args:
        env: the env to plan in.
        advantage_module: writes ``"advantage"`` into a trajectory TensorDict (e.g. a value
            estimator of rl-objectives, or a module summing the rewards to go).
        temperature: inverse temperature of the weights (larger: closer to the best).
        planning_horizon: length of the simulated sequences.
        optim_steps: number of refits.
        num_candidates: sequences sampled per iteration.
        top_k: candidates weighted in each refit.
        reward_key: the reward entry under ``"next"`` (``"reward"``, the default), or its
            full key in the trajectories as TorchRL spells it (``("next", "reward")``).
        action_key: the action entry. Defaults to ``"action"``.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``, or ``advantage_module`` is not callable.
        ValueError: a size is not a positive int, ``top_k > num_candidates``, or
            ``temperature`` is not a positive finite number; (when called) the state or the
            advantages hold NaN or infinite values.
        KeyError: ``advantage_module`` wrote no ``"advantage"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.envs import EnvBase
        >>> from rl_envs.model_based import MPPIPlanner
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> class Drift(EnvBase):  # x' = x + a, reward -x'^2; steps any batch
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
        ...         self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        ...     def _reset(self, td):
        ...         return TensorDict(observation=torch.ones(1))
        ...     def _step(self, td):
        ...         x = td["observation"] + td["action"]
        ...         return TensorDict(observation=x, reward=-x.square(),
        ...                           terminated=torch.zeros_like(x, dtype=torch.bool),
        ...                           batch_size=td.batch_size)
        ...     def _set_seed(self, seed):
        ...         torch.manual_seed(seed)
        >>> def returns_to_go(traj):  # advantage: the sum of the rewards from each step on
        ...     r = traj["next", "reward"]
        ...     return traj.set("advantage", r.flip(-2).cumsum(-2).flip(-2))
        >>> _ = torch.manual_seed(0)
        >>> planner = MPPIPlanner(Drift(), returns_to_go, temperature=10.0,
        ...                       planning_horizon=3, optim_steps=4, num_candidates=64, top_k=8)
        >>> action = planner(TensorDict(observation=torch.tensor([0.6])))["action"]
        >>> action.shape, round(action.item(), 1)
        (torch.Size([1]), -0.6)
    """

    def __init__(
        self,
        env: EnvBase,
        advantage_module: nn.Module,
        temperature: float,
        planning_horizon: int,
        optim_steps: int,
        num_candidates: int,
        top_k: int,
        reward_key: NestedKey = REWARD,
        action_key: NestedKey = ACTION,
    ) -> None:
        super().__init__(env=env, action_key=action_key)
        self._check_sizes(planning_horizon, optim_steps, num_candidates, top_k)
        if (
            not isinstance(temperature, Real)
            or isinstance(temperature, bool)
            or not math.isfinite(temperature)
            or temperature <= 0
        ):
            raise ValueError(
                f"MPPIPlanner: expected temperature as a positive finite number, got "
                f"{temperature!r}."
            )
        if not callable(advantage_module):
            raise TypeError(
                f"MPPIPlanner: expected advantage_module as a module writing 'advantage' into "
                f"the trajectories, got {type(advantage_module).__name__}."
            )
        self.advantage_module = advantage_module
        self.planning_horizon = int(planning_horizon)
        self.optim_steps = int(optim_steps)
        self.num_candidates = int(num_candidates)
        self.top_k = int(top_k)
        self.reward_key = reward_key
        self._reward_path = _reward_path(type(self).__name__, reward_key)
        self.register_buffer("temperature", torch.tensor(float(temperature)))

    def planning(self, tensordict: TensorDictBase) -> torch.Tensor:
        nb = tensordict.batch_dims
        k_dim = nb
        mean, std = self._initial_stats(
            tensordict, self.planning_horizon, _float_dtype(self.action_spec)
        )
        shape = (
            *tensordict.batch_size,
            self.num_candidates,
            self.planning_horizon,
            *self.action_shape,
        )
        for _ in range(self.optim_steps):
            actions = self.clamp_action(
                mean + std * torch.randn(shape, device=mean.device, dtype=mean.dtype)
            )
            traj = self.rollout_candidates(tensordict, actions)
            self._check_reward(traj)
            traj.set(self._reward_path, self.masked_rewards(traj, self._reward_path))
            out = self.advantage_module(traj)
            traj = traj if out is None else out
            advantage = traj.get("advantage", None)
            if advantage is None:
                raise KeyError(
                    f"MPPIPlanner: expected advantage_module to write 'advantage' into the "
                    f"trajectories, got keys {sorted(map(str, traj.keys()))}."
                )
            first = advantage.select(nb + 1, 0)  # score at the first step
            scores = first.reshape(*first.shape[: nb + 1], -1).sum(-1).to(mean.dtype)  # [*B, K]
            _refuse_non_finite(
                "MPPIPlanner",
                "the 'advantage' that advantage_module wrote for the simulated candidates",
                scores,
                " Check advantage_module and the env's rewards.",
            )
            top_scores, elite = scores.topk(self.top_k, dim=-1)
            weights = torch.softmax(self.temperature.to(mean.dtype) * top_scores, dim=-1)
            extra = [1] * (actions.ndim - nb - 1)
            index = elite.reshape(*elite.shape, *extra)
            best = actions.gather(k_dim, index.expand(*elite.shape, *actions.shape[nb + 1 :]))
            w = weights.reshape(*weights.shape, *extra)
            mean = (w * best).sum(k_dim, keepdim=True)
            std = (w * (best - mean).square()).sum(k_dim, keepdim=True).sqrt()
        return mean.select(k_dim, 0).select(k_dim, 0)


__all__ = ["CEMPlanner", "MPCPlannerBase", "MPPIPlanner"]
