"""EnvBase: the environment contract every env of the stack implements."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core._accel.seam import (
    StepPlan,
    any_set,
    complete_done_flags,
    merge_partial_reset,
    reset_masks,
)
from rl_core.envs import _specs
from rl_core.envs._plans import active_plan
from rl_core.envs._rollout import rollout as _rollout
from rl_core.envs._spec_checks import SWITCH, check_reset_output, check_step_output
from rl_core.keys import (
    ACTION,
    DONE_KEYS,
    NEXT,
    OBSERVATION,
    RESET,
    REWARD,
    NestedKey,
    key_path,
)
from rl_core.specs import Composite, TensorSpec
from rl_core.ted import StepMdpPlan

# ``TransformedEnv`` lives in ``rl_core.transforms``, the layer above this one, which
# ``import rl_core`` loads; it registers itself here (``_register_transformed_env``) so that
# ``append_transform`` builds one without ``envs`` importing ``transforms``.
_transformed_env: Callable[[EnvBase, Callable], EnvBase] | None = None


def _register_transformed_env(factory: Callable[[EnvBase, Callable], EnvBase]) -> None:
    """Called once by ``rl_core.transforms``: ``factory(env, transform)`` is a TransformedEnv."""
    global _transformed_env
    _transformed_env = factory


def transformed(env: EnvBase, transform: Callable[[TensorDictBase], TensorDictBase]) -> EnvBase:
    """A new ``TransformedEnv(env, transform)``, whatever ``env``'s class (what
    ``EnvBase.append_transform`` returns; a ``Compose`` builds the env its transforms see
    with it, without importing ``TransformedEnv``)."""
    if _transformed_env is None:  # pragma: no cover (import rl_core registers it)
        raise RuntimeError(
            f"{type(env).__name__}.append_transform: rl_core.transforms is not imported; "
            f"import rl_core first."
        )
    return _transformed_env(env, transform)


class EnvBase(nn.Module, metaclass=abc.ABCMeta):
    """An environment that reads and writes TensorDicts in the TED layout.

    A subclass sets its specs in ``__init__`` and implements three methods:

    - ``_reset(tensordict) -> TensorDict``: the first observations (and optionally done flags)
      of every sub-env. ``tensordict`` is ``None`` or holds ``"_reset"`` masks (True for the
      sub-envs to reset) and reset arguments. Values written for sub-envs that are not reset
      are ignored: the base keeps their previous values.
    - ``_step(tensordict) -> TensorDict``: reads the action(s) from ``tensordict`` and returns
      a new TensorDict (the future ``"next"``) with the next observations, the reward and the
      done flags. Fresh tensors each call: returned tensors are not mutated later.
    - ``_set_seed(seed)``: seeds the env's random state.

    Done flags: a ``_step`` may write any of ``done``, ``terminated`` and ``truncated``; the base
    fills in the others so that ``done == terminated | truncated``. Specs: ``observation_spec``,
    ``action_spec``, ``reward_spec``, ``done_spec`` and ``state_spec``; shapes lead with the env
    ``batch_size``. Specs are checked when they are set; each step is checked only under
    :func:`rl_core.envs.set_spec_checks` or with ``RL_CHECK_SPECS=1``.

    Args:
        device: where the env's tensors live, or ``None`` (not specified).
        batch_size: the env's batch shape (a batched env holds one sub-env per element).
        allow_done_after_reset: whether a sub-env may be done right after its reset; when
            ``False`` (default), such a reset raises a ``RuntimeError`` naming the done entry.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.envs import EnvBase
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> class Counter(EnvBase):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.observation_spec = Composite(count=Unbounded(shape=(1,)))
        ...         self.action_spec = Bounded(0.0, 1.0, shape=(1,))
        ...     def _reset(self, tensordict):
        ...         return TensorDict(count=torch.zeros(1))
        ...     def _step(self, tensordict):
        ...         count = tensordict["count"] + tensordict["action"]
        ...         return TensorDict(count=count, reward=count.clone(), terminated=count > 2.5)
        ...     def _set_seed(self, seed):
        ...         torch.manual_seed(seed)
        >>> env = Counter()
        >>> traj = env.rollout(10, policy=lambda td: td.set("action", torch.ones(1)))
        >>> traj.batch_size
        torch.Size([3])
        >>> traj["next", "count"].squeeze(-1).tolist()
        [1.0, 2.0, 3.0]
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> EnvBase:
        """Takes (and ignores) the constructor's arguments, as TorchRL's ``EnvBase.__new__``."""
        return super().__new__(cls)

    def __init__(
        self,
        *,
        device: torch.device | str | int | None = None,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        allow_done_after_reset: bool = False,
    ) -> None:
        super().__init__()
        self.__dict__["_allow_done_after_reset"] = bool(allow_done_after_reset)
        if batch_size is None:
            batch_size = torch.Size([])
        try:
            batch_size = torch.Size(batch_size)
        except TypeError as err:
            raise TypeError(
                f"{type(self).__name__}: expected batch_size as a sequence of ints, got "
                f"{batch_size!r}."
            ) from err
        device = torch.device(device) if device is not None else None
        # Plain attributes (not registered as module state).
        self.__dict__["_batch_size"] = batch_size
        self.__dict__["_device"] = device
        self.__dict__["_cache"] = {}
        self.__dict__["is_closed"] = False
        self.__dict__["_output_spec"] = Composite(
            full_observation_spec=Composite(shape=batch_size, device=device),
            full_reward_spec=Composite(
                {REWARD: _specs.default_reward_spec(batch_size, device)},
                shape=batch_size,
                device=device,
            ),
            full_done_spec=_specs.default_done_spec(batch_size, device),
            shape=batch_size,
            device=device,
        )
        self.__dict__["_input_spec"] = Composite(
            full_action_spec=Composite(shape=batch_size, device=device),
            full_state_spec=Composite(shape=batch_size, device=device),
            shape=batch_size,
            device=device,
        )
        for parent in ("_output_spec", "_input_spec"):  # set on the class by a TorchRL-style
            given = getattr(type(self), parent, None)  # __new__: this env's own specs
            for name, spec in given.items() if isinstance(given, Composite) else ():
                setattr(self, name, spec)

    # ------------------------------------------------------------------ contract
    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """Returns the first observations of the sub-envs to reset."""

    @abc.abstractmethod
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns next observations, reward and done flags for the actions in ``tensordict``."""

    @abc.abstractmethod
    def _set_seed(self, seed: int | None) -> None:
        """Seeds the env's random state."""

    @property
    def base_env(self) -> EnvBase:
        """The env below every transform: the env itself here (as TorchRL's ``parent.base_env``
        reads for a first transform); a ``TransformedEnv`` gives the env it wraps."""
        return self

    # ------------------------------------------------------------------ shape and device
    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @property
    def device(self) -> torch.device | None:
        return self._device

    # ------------------------------------------------------------------ specs
    @property
    def output_spec(self) -> Composite:
        """``Composite(full_observation_spec=…, full_reward_spec=…, full_done_spec=…)``."""
        return self._output_spec

    @property
    def input_spec(self) -> Composite:
        """``Composite(full_action_spec=…, full_state_spec=…)``."""
        return self._input_spec

    @property
    def specs(self) -> Composite:
        """All specs of the env in one Composite: ``output_spec`` and ``input_spec``."""
        return Composite(
            output_spec=self.output_spec,
            input_spec=self.input_spec,
            shape=self.batch_size,
            device=self.device,
        )

    def _set_spec(self, parent: Composite, name: str, spec: Composite) -> None:
        parent[name] = spec
        self._cache.clear()

    @property
    def full_observation_spec(self) -> Composite:
        return self.output_spec["full_observation_spec"]

    @full_observation_spec.setter
    def full_observation_spec(self, spec: Composite) -> None:
        self.observation_spec = spec

    @property
    def observation_spec(self) -> Composite:
        """The observations, a Composite (a leaf spec set here is stored as ``"observation"``)."""
        return self.output_spec["full_observation_spec"]

    @observation_spec.setter
    def observation_spec(self, spec: TensorSpec | Composite) -> None:
        composite = self._wrap("observation_spec", spec, OBSERVATION)
        self._set_spec(self._output_spec, "full_observation_spec", composite)

    @property
    def full_reward_spec(self) -> Composite:
        return self.output_spec["full_reward_spec"]

    @full_reward_spec.setter
    def full_reward_spec(self, spec: Composite) -> None:
        self.reward_spec = spec

    @property
    def reward_spec(self) -> TensorSpec:
        """The reward: the leaf spec when there is one reward, else the full Composite."""
        return self._single_or_full(self.full_reward_spec)

    @reward_spec.setter
    def reward_spec(self, spec: TensorSpec | Composite) -> None:
        composite = self._wrap("reward_spec", spec, REWARD)
        self._set_spec(self._output_spec, "full_reward_spec", composite)

    @property
    def full_done_spec(self) -> Composite:
        return self.output_spec["full_done_spec"]

    @full_done_spec.setter
    def full_done_spec(self, spec: Composite) -> None:
        self.done_spec = spec

    @property
    def done_spec(self) -> Composite:
        """The done flags (``done``, ``terminated``, ``truncated`` at every level), a Composite.

        A leaf spec set here becomes ``done`` with copies as ``terminated`` and ``truncated``;
        a Composite missing some of the three gets them added the same way.
        """
        return self.full_done_spec

    @done_spec.setter
    def done_spec(self, spec: TensorSpec | Composite) -> None:
        composite = _specs.complete_done_spec(self._wrap("done_spec", spec, DONE_KEYS[0]))
        if not _specs.done_levels(composite):
            raise ValueError(
                f"{type(self).__name__}.done_spec: expected at least one of {DONE_KEYS}, got "
                f"keys {_specs.leaf_keys(composite)}."
            )
        self._set_spec(self._output_spec, "full_done_spec", composite)

    @property
    def full_action_spec(self) -> Composite:
        return self.input_spec["full_action_spec"]

    @full_action_spec.setter
    def full_action_spec(self, spec: Composite) -> None:
        self.action_spec = spec

    @property
    def action_spec(self) -> TensorSpec:
        """The action: the leaf spec when there is one action, else the full Composite."""
        return self._single_or_full(self.full_action_spec)

    @action_spec.setter
    def action_spec(self, spec: TensorSpec | Composite) -> None:
        composite = self._wrap("action_spec", spec, ACTION)
        self._set_spec(self._input_spec, "full_action_spec", composite)

    @property
    def full_action_spec_unbatched(self) -> Composite:
        """``full_action_spec`` of one sub-env: the env's batch dims dropped (first sub-env's)."""
        return self.full_action_spec[(0,) * len(self.batch_size)]

    @full_action_spec_unbatched.setter
    def full_action_spec_unbatched(self, spec: Composite) -> None:
        self.action_spec = spec.expand(*self.batch_size, *spec.shape)  # as TorchRL's setter

    @property
    def action_spec_unbatched(self) -> TensorSpec:
        """``action_spec`` of one sub-env, as :attr:`full_action_spec_unbatched`."""
        return self._single_or_full(self.full_action_spec_unbatched)

    @action_spec_unbatched.setter
    def action_spec_unbatched(self, spec: TensorSpec) -> None:
        self.action_spec = spec.expand(*self.batch_size, *spec.shape)

    @property
    def full_state_spec(self) -> Composite:
        return self.input_spec["full_state_spec"]

    @full_state_spec.setter
    def full_state_spec(self, spec: Composite) -> None:
        self.state_spec = spec

    @property
    def state_spec(self) -> Composite:
        """Inputs other than actions that ``_step`` reads (a state passed in, stateless envs)."""
        return self.full_state_spec

    @state_spec.setter
    def state_spec(self, spec: Composite | None) -> None:
        if spec is not None and not isinstance(spec, Composite):
            raise TypeError(
                f"{type(self).__name__}.state_spec: expected a Composite, got "
                f"{type(spec).__name__}. Wrap it: Composite(my_state=spec, shape=batch_size)."
            )
        composite = self._wrap("state_spec", spec, "state")
        self._set_spec(self._input_spec, "full_state_spec", composite)

    def _wrap(self, what: str, spec: Any, default_key: str) -> Composite:
        return _specs.wrap_leaf(
            type(self).__name__, what, spec, default_key, self.batch_size, self.device
        )

    @staticmethod
    def _single_or_full(full: Composite) -> TensorSpec:
        keys = _specs.leaf_keys(full)
        return full[keys[0]] if len(keys) == 1 else full

    # ------------------------------------------------------------------ key lists
    def _cached(self, name: str, compute: Callable[[], Any]) -> Any:
        cache = self._cache
        if name not in cache:
            cache[name] = compute()
        return cache[name]

    @property
    def observation_keys(self) -> list[NestedKey]:
        return self._cached(
            "observation_keys", lambda: _specs.leaf_keys(self.full_observation_spec)
        )

    @property
    def action_keys(self) -> list[NestedKey]:
        return self._cached("action_keys", lambda: _specs.leaf_keys(self.full_action_spec))

    @property
    def reward_keys(self) -> list[NestedKey]:
        return self._cached("reward_keys", lambda: _specs.leaf_keys(self.full_reward_spec))

    @property
    def done_keys(self) -> list[NestedKey]:
        return self._cached("done_keys", lambda: _specs.leaf_keys(self.full_done_spec))

    @property
    def state_keys(self) -> list[NestedKey]:
        return self._cached("state_keys", lambda: _specs.leaf_keys(self.full_state_spec))

    @property
    def reset_keys(self) -> list[NestedKey]:
        """The ``"_reset"`` entries a partial reset reads, one per level holding done flags."""
        return self._cached("reset_keys", lambda: _specs.reset_keys(self.full_done_spec))

    @property
    def done_keys_groups(self) -> list[list[NestedKey]]:
        """The done keys grouped by level, in the order of :attr:`reset_keys` (TorchRL's)."""
        keys = self.done_keys
        return [[k for k in keys if key_path(k)[:-1] == lv] for lv in self.done_levels()]

    def done_levels(self) -> list[tuple[str, ...]]:
        """The levels of the done spec that hold done flags (``()``: the root), cached with
        the specs. Part of the interface step plans read (``rl_core._accel.seam.PlanEnv``).

        Examples:
            >>> from rl_core.testing import CountingEnv
            >>> CountingEnv().done_levels()
            [()]
        """
        return self._cached("done_levels", lambda: _specs.done_levels(self.full_done_spec))

    def _single_key(self, keys: list[NestedKey], what: str) -> NestedKey:
        if len(keys) != 1:
            raise KeyError(
                f"{type(self).__name__}.{what}: the env has {len(keys)} {what}s {keys}; use "
                f"{what}s (plural) instead."
            )
        return keys[0]

    @property
    def action_key(self) -> NestedKey:
        return self._single_key(self.action_keys, "action_key")

    @property
    def reward_key(self) -> NestedKey:
        return self._single_key(self.reward_keys, "reward_key")

    # ------------------------------------------------------------------ public API
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the env; returns the seed the next env should use (``seed + 1``).

        Args:
            seed: the seed, or ``None`` to leave the random state as it is.
            static_seed: return ``seed`` itself instead of the next one.
        """
        if seed is not None and not isinstance(seed, int):
            raise TypeError(f"{type(self).__name__}.set_seed: expected an int, got {seed!r}.")
        self._set_seed(seed)
        if seed is None or static_seed:
            return seed
        return seed + 1

    def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        """Resets the env (or, with ``"_reset"`` masks in ``tensordict``, some sub-envs).

        Args:
            tensordict: ``None``, or a TensorDict holding ``"_reset"`` masks (True for the
                sub-envs to reset, shaped like the done flags) and any entries to carry over.
            **kwargs: passed to ``_reset``.

        Returns:
            A new TensorDict with the observations and done flags of every sub-env. On a partial
            reset, sub-envs that are not reset keep their entries from ``tensordict``; entries of
            ``tensordict`` the env does not write are carried over either way.
        """
        plan = active_plan(self)
        if plan is not None:
            return plan.full_reset(tensordict, **kwargs)
        if tensordict is not None:
            self.check_input_batch(tensordict, "reset")
        levels = self.done_levels()
        masks = reset_masks(tensordict, levels, len(self.batch_size))
        return self.complete_reset(tensordict, self._reset(tensordict, **kwargs), masks, levels)

    def complete_reset(
        self,
        tensordict: TensorDictBase | None,
        fresh: Any,
        masks: dict[tuple[str, ...], torch.Tensor] | None,
        levels: list[tuple[str, ...]],
    ) -> TensorDictBase:
        """The end of :meth:`reset`: ``fresh`` (what ``_reset`` gave) checked and completed
        (batch size, done flags), then merged with ``tensordict`` (``masks``: its
        ``"_reset"`` masks by level, ``None`` for a full reset)."""
        if not isinstance(fresh, TensorDictBase):
            raise TypeError(
                f"{type(self).__name__}._reset: expected a TensorDict, got {type(fresh).__name__}."
            )
        if fresh.batch_size != self.batch_size:
            fresh.batch_size = self.batch_size
        self._fill_reset_done(fresh, levels)
        if not self._allow_done_after_reset:
            self._check_not_done(fresh, masks, levels)
        if SWITCH.enabled:
            check_reset_output(self, fresh)
        if tensordict is None:
            return fresh
        if masks is not None:
            return merge_partial_reset(tensordict, fresh, masks, type(self).__name__)
        return tensordict.exclude(NEXT, *self.reset_keys).update(fresh)

    def _fill_reset_done(self, fresh: TensorDictBase, levels: list[tuple[str, ...]]) -> None:
        """A reset output without done flags gets them all False."""
        for level in levels:
            for name in DONE_KEYS:
                key = (*level, name)
                if fresh.get(key, None) is None:
                    fresh.set(key, self.full_done_spec[key].zero())

    def _check_not_done(self, fresh: TensorDictBase, masks: Any, levels: list) -> None:
        for key, mask in [((*lv, n), masks and masks.get(lv)) for lv in levels for n in DONE_KEYS]:
            flag = fresh.get(key)
            flag = flag[mask] if mask is not None and mask.shape == flag.shape else flag
            if not flag.is_meta and flag.any():  # meta tensors hold no values to check
                raise RuntimeError(
                    f"{type(self).__name__}.reset: done entry {key!r} is True right after a "
                    "reset; pass allow_done_after_reset=True to EnvBase if a sub-env may start done."
                )

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Takes one step with the action(s) in ``tensordict``; writes the result under ``"next"``.

        Returns:
            ``tensordict`` itself, with a ``"next"`` entry holding the next observations, the
            reward and the done flags (``done == terminated | truncated``).
        """
        plan = active_plan(self)
        if plan is not None:
            return plan.full_step(tensordict)
        return self._write_step(tensordict, self._step(tensordict))

    def _write_step(self, tensordict: TensorDictBase, next_td: TensorDictBase) -> TensorDictBase:
        """Completes the done flags of ``next_td`` (the output of ``_step``), checks it when
        spec checks are on, and writes it under ``"next"`` of ``tensordict``."""
        complete_done_flags(next_td, self.done_levels(), type(self).__name__)
        if SWITCH.enabled:
            check_step_output(self, tensordict, next_td)
        tensordict.set(NEXT, next_td)
        return tensordict

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, then moves to the next root and resets only the sub-envs that finished.

        Returns:
            ``(tensordict, next_root)``: the transition (with ``"next"``) and the TensorDict to
            feed the policy next, in which finished sub-envs hold their reset observations.
        """
        plan = active_plan(self)
        if plan is not None:
            return plan.step_and_maybe_reset(tensordict)
        tensordict = self.step(tensordict)
        next_root = self.step_mdp_plan()(tensordict)
        if self.mark_finished(next_root):
            next_root = self.reset(next_root)
        return tensordict, next_root

    def _make_step_plan(self) -> StepPlan | None:
        """Optional hook: this env's :class:`~rl_core.envs.StepPlan`, the one place that owns
        its accelerated routes (fused step-and-reset, numpy rows, random rollouts), or
        ``None`` (the default: the reference code only). Built once, on first use, and again
        after the specs change; used only where ``rl_core.envs._plans.active_plan`` says it
        applies. :func:`rl_core.testing.check_step_plan` compares it with the
        reference."""
        return None

    def done_paths(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """``(done flag path, reset mask path)`` per level holding done flags, cached with the
        specs (part of the interface step plans read)."""
        return self._cached(
            "done_paths",
            lambda: [((*level, DONE_KEYS[0]), (*level, RESET)) for level in self.done_levels()],
        )

    def mark_finished(self, root: TensorDictBase) -> bool:
        """Writes the ``"_reset"`` mask beside every ``done`` flag that is set; True if any is.

        ``done`` already is ``terminated | truncated`` (``step`` completes the flags), so one
        flag per level is read.
        """
        any_finished = False
        for done_path, reset_path in self.done_paths():
            done = root.get(done_path)
            if any_set(done):
                root.set(reset_path, done)
                any_finished = True
        return any_finished

    def step_mdp_plan(self) -> StepMdpPlan:
        """``step_mdp`` with this env's reward, done and action keys, resolved once.

        ``plan(td)`` equals ``step_mdp(td, reward_keys=env.reward_keys,
        done_keys=env.done_keys, action_keys=env.action_keys)``; batched envs and collectors
        call it every step. Cached until the specs change.

        Returns:
            A :class:`rl_core.ted.StepMdpPlan`.

        Examples:
            >>> from rl_core.testing import CountingEnv
            >>> env = CountingEnv()
            >>> td = env.rand_step(env.reset())
            >>> sorted(env.step_mdp_plan()(td).keys())
            ['done', 'observation', 'terminated', 'truncated']
        """
        return self._cached(
            "step_mdp_plan",
            lambda: StepMdpPlan(self.reward_keys, self.done_keys, self.action_keys),
        )

    def _step_mdp_kwargs(self) -> dict[str, Any]:
        return self._cached(
            "step_mdp_kwargs",
            lambda: {
                "reward_keys": list(self.reward_keys),
                "done_keys": list(self.done_keys),
                "action_keys": list(self.action_keys),
            },
        )

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes a uniformly random action (from ``action_spec``) into ``tensordict``."""
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size, device=self.device)
        plan = active_plan(self)
        if plan is not None:
            return plan.rand_action(tensordict)
        return tensordict.update(self.full_action_spec.rand())

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A step with a random action."""
        return self.step(self.rand_action(tensordict))

    def rollout(
        self,
        max_steps: int,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        callback: Callable[[EnvBase, TensorDictBase], Any] | None = None,
        *,
        auto_reset: bool = True,
        auto_cast_to_device: bool = False,
        break_when_any_done: bool = True,
        break_when_all_done: bool = False,
        return_contiguous: bool = True,
        tensordict: TensorDictBase | None = None,
        set_truncated: bool = False,
    ) -> TensorDictBase:
        """Runs a policy in the env for up to ``max_steps`` steps; see :func:`rl_core.envs.rollout`."""
        return _rollout(
            self,
            max_steps,
            policy,
            callback,
            auto_reset=auto_reset,
            auto_cast_to_device=auto_cast_to_device,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
            return_contiguous=return_contiguous,
            tensordict=tensordict,
            set_truncated=set_truncated,
        )

    def fake_tensordict(self) -> TensorDictBase:
        """A transition of zeros shaped by the specs: what a step returns, with ``"next"``."""
        root = self.full_observation_spec.zero()
        root.update(self.full_done_spec.zero())
        root.update(self.full_state_spec.zero())
        root.update(self.full_action_spec.zero())
        nxt = self.full_observation_spec.zero()
        nxt.update(self.full_reward_spec.zero())
        nxt.update(self.full_done_spec.zero())
        root.set(NEXT, nxt)
        return root

    def append_transform(self, transform: Callable[[TensorDictBase], TensorDictBase]) -> EnvBase:
        """Returns ``TransformedEnv(self, transform)`` (``transform``: a ``Transform``, or a
        callable on TensorDicts)."""
        return transformed(self, transform)

    def close(self) -> None:
        """Releases the env's resources; calling it twice is harmless."""
        self.__dict__["is_closed"] = True

    def check_input_batch(self, tensordict: TensorDictBase, where: str) -> None:
        """Raises a ``ValueError`` naming ``where`` when ``tensordict``'s batch size is not
        the env's."""
        if tensordict.batch_size != self.batch_size:
            raise ValueError(
                f"{type(self).__name__}.{where}: expected a TensorDict with batch size "
                f"{tuple(self.batch_size)} (the env batch size), got "
                f"{tuple(tensordict.batch_size)}."
            )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(batch_size={tuple(self.batch_size)}, device={self.device},\n"
            f"  observation_spec={self.full_observation_spec!r},\n"
            f"  action_spec={self.full_action_spec!r},\n"
            f"  reward_spec={self.full_reward_spec!r},\n"
            f"  done_spec={self.full_done_spec!r})"
        )


__all__ = ["EnvBase"]
