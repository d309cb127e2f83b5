"""StepPlan: the one seam through which an env (with its transforms) offers faster routes.

``EnvBase``, ``TransformedEnv``, ``Compose`` and every transform hold the reference code:
``step`` is ``_step`` plus done completion, ``step_and_maybe_reset`` is ``step``, ``step_mdp``
and a ``reset`` of the finished sub-envs, a rollout without a policy is the generic loop with
random actions. An env class may offer a *step plan* (its ``_make_step_plan`` hook), built
once per env and cached until its specs change, that owns every accelerated route:

- :meth:`StepPlan.step` / :meth:`StepPlan.reset`: what ``_step`` / ``_reset`` give, computed
  another way (e.g. transforms on numpy rows);
- :meth:`StepPlan.step_and_reset` with :meth:`StepPlan.merge_reset_rows` (and
  :meth:`StepPlan.reset_entries`): a step and the reset of the sub-envs it finishes in one
  call (one round trip to worker processes, one gymnasium call);
- :meth:`StepPlan.numpy_rows`: outputs that are views of numpy rows, for plans above;
- :meth:`StepPlan.random_rollout`: a rollout with random actions without a TensorDict per
  step;
- the env's entry points (:meth:`StepPlan.full_step`, :meth:`StepPlan.full_reset`,
  :meth:`StepPlan.step_and_maybe_reset`, :meth:`StepPlan.rand_action`): ``EnvBase`` hands
  them its ``step``, ``reset``, ``step_and_maybe_reset`` and ``rand_action`` calls, and
  they run the routes above with the reference's bookkeeping (done completion, the write
  under ``"next"``, the reset's completion and merge) done on plain TensorDicts' entry
  dicts; ``EnvBase`` itself holds plain TensorDict code only.

Every route returns ``None`` where it does not apply, and the reference runs instead. A route
must give what the reference gives (values, dtypes, done flags, resets, seeds): the
conformance check :func:`rl_core.testing.check_step_plan` compares the two for any env.

When a plan applies is decided once, by ``rl_core.envs._plans.active_plan`` with
:func:`plan_applies` from here: the env's class does not
override a reference method (``_step``, ``_reset``, ``step``, ``reset``, ``_set_seed``) below
the class that declared the plan (such an override was never part of the plan), spec checks
are off (they check every reference step), and plans are not switched off
(:func:`reference_only`). Each plan then checks what only it knows (devices, dtypes, the
transforms it has plans for) when it is built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.fast_td import batch_size_of, entries, get_leaf, set_leaf
from rl_core._accel.flags import any_set, carry_flat, complete_done_flags, reset_masks
from rl_core.keys import DONE, NEXT, TERMINATED, TRUNCATED

if TYPE_CHECKING:
    from rl_core.specs import Composite


class PlanEnv(Protocol):
    """What a step plan reads of its env: the whole interface between ``EnvBase`` and the
    plans (``EnvBase`` implements it; a plan reads nothing else of the env).

    Besides the env's public API (``batch_size``, ``action_keys``, ``full_action_spec``,
    ``reset``, ``step_mdp_plan``) and the two contract hooks a plan stands in for
    (``_step``, ``_reset``), a plan reads the env's done layout (:meth:`done_levels`,
    :meth:`done_paths`) and hands the reference's reset completion back to the env
    (:meth:`complete_reset`, :meth:`check_input_batch`).
    """

    @property
    def batch_size(self) -> torch.Size: ...

    @property
    def action_keys(self) -> list: ...

    @property
    def full_action_spec(self) -> Composite: ...

    def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase: ...

    def step_mdp_plan(self) -> Callable[[TensorDictBase], TensorDictBase]: ...

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase: ...

    def done_levels(self) -> list[tuple[str, ...]]:
        """The levels holding done flags (``()``: the root), cached with the specs."""
        ...

    def done_paths(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """``(done flag path, reset mask path)`` per level holding done flags."""
        ...

    def complete_reset(
        self,
        tensordict: TensorDictBase | None,
        fresh: Any,
        masks: dict[tuple[str, ...], torch.Tensor] | None,
        levels: list[tuple[str, ...]],
    ) -> TensorDictBase:
        """The end of ``reset``: ``fresh`` (what ``_reset`` gave) completed and merged."""
        ...

    def check_input_batch(self, tensordict: TensorDictBase, where: str) -> None:
        """Raises the env's error where ``tensordict``'s batch size is not the env's."""
        ...


#: The reference methods a plan stands in for: overridden below the class that declared the
#: plan, they turn it off.
REFERENCE_METHODS = ("_step", "_reset", "step", "reset", "_set_seed")
_NO_PLAN: Any = object()


class _Plans:
    """Whether step plans are used (a switch for :func:`reference_only`)."""

    enabled = True


PLANS = _Plans()


class StepPlan:
    """The accelerated routes of one env; every route defaults to "none" (the reference).

    A subclass overrides the routes its env has. It is built by the env's
    ``_make_step_plan()`` and holds what it needs (keys, layouts, numpy blocks) from then on;
    the env rebuilds it when its specs change.

    Args:
        env: the env the plan speeds up.
    """

    #: Whether the env's ``_step`` reads nothing of its input but the actions (its state
    #: lives elsewhere, e.g. in a gymnasium env): a TransformedEnv may then replay its
    #: transforms on this env's :meth:`random_rollout`.
    reads_actions_only: bool = False

    # The env's done levels, done paths and step_mdp plan, read from it on first use: the
    # plan lives as long as the env's specs (the env builds a new one when they change).
    _env_levels: list[tuple[str, ...]] | None = None
    _env_paths: list[tuple[tuple[str, ...], tuple[str, ...]]] | None = None
    _env_mdp: Any = None

    def __init__(self, env: PlanEnv) -> None:
        self.env = env

    def step(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        """What ``env._step(tensordict)`` gives, or ``None`` (then ``_step`` runs)."""
        return None

    def reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase | None:
        """What ``env._reset(tensordict, **kwargs)`` gives, or ``None`` (then ``_reset`` runs)."""
        return None

    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        """One call that steps and resets the sub-envs that finish, or ``None`` (step, then
        reset).

        Returns:
            ``(next_td, pending)``: ``next_td`` as ``_step`` returns it, and ``pending``, what
            :meth:`merge_reset_rows` needs to write the reset sub-envs' rows into the next
            root (``None`` when none finished).
        """
        return None

    def merge_reset_rows(self, next_root: TensorDictBase, pending: Any) -> TensorDictBase:
        """With :meth:`step_and_reset`: what ``reset(next_root)`` gives once the finished
        sub-envs are marked in ``next_root``, their reset rows read from ``pending``."""
        raise NotImplementedError(
            f"{type(self).__name__}: step_and_reset returned reset rows, so the plan must "
            f"implement merge_reset_rows too."
        )

    def reset_entries(self, pending: Any) -> dict[str, Any] | None:
        """Where ``pending`` reset every sub-env, the root-level entries that
        :meth:`merge_reset_rows` would write (each observation and done flag, tensors of the
        batch size on the env's device) as a new dict; else ``None``, having changed
        nothing. A TransformedEnv's plan reads it to reset its transforms without building
        the base env's next root."""
        return None

    def numpy_rows(self) -> list:
        """``(tensor, numpy array)`` pairs of outputs of the env's last step and reset that
        are views of numpy rows never written again; empty by default."""
        return []

    def random_rollout(
        self,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        """The trajectory of ``rollout`` with random actions from ``start`` (the root it would
        feed the policy), or ``None`` (the generic loop). It must be what the generic loop
        gives: the same entries, shapes, dtypes, resets and stopping rules, with actions drawn
        uniformly from the action spec (possibly many at once, so in another order of the
        torch RNG), and leave the env where the generic loop would."""
        return None

    # ------------------------------------------------------------------ the env's entry points
    # ``EnvBase.step``, ``reset``, ``step_and_maybe_reset`` and ``rand_action`` hand their call
    # to these where a plan applies: the routes above, and the reference code's bookkeeping
    # (done completion, the write under "next", the reset's completion and merge) with
    # shortcuts for plain TensorDicts. They give what the reference gives.

    def full_step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``env.step(tensordict)``: :meth:`step` (else ``env._step``), then
        :meth:`write_step`."""
        next_td = self.step(tensordict)
        if next_td is None:
            next_td = self.env._step(tensordict)
        return self.write_step(tensordict, next_td)

    def write_step(self, tensordict: TensorDictBase, next_td: TensorDictBase) -> TensorDictBase:
        """What ``EnvBase.step`` does with ``_step``'s output: the done flags of ``next_td``
        completed, ``next_td`` written under ``"next"`` of ``tensordict`` (spec checks are off
        wherever a plan runs)."""
        levels = self._env_levels
        if levels is None:
            levels = self._env_levels = self.env.done_levels()
        complete_done_flags(next_td, levels, type(self.env).__name__)
        set_leaf(tensordict, NEXT, next_td)
        return tensordict

    def full_reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """``env.reset(tensordict, **kwargs)``: :meth:`reset` (else ``env._reset``), then
        :meth:`complete_reset`."""
        env = self.env
        if tensordict is not None:
            env.check_input_batch(tensordict, "reset")
        levels = env.done_levels()
        masks = reset_masks(tensordict, levels, len(env.batch_size))
        fresh = self.reset(tensordict, **kwargs)
        if fresh is None:
            fresh = env._reset(tensordict, **kwargs)
        return self.complete_reset(tensordict, fresh, masks, levels)

    def complete_reset(
        self,
        tensordict: TensorDictBase | None,
        fresh: Any,
        masks: dict[tuple[str, ...], torch.Tensor] | None,
        levels: list[tuple[str, ...]],
    ) -> TensorDictBase:
        """``env.complete_reset(tensordict, fresh, masks, levels)``; where ``fresh`` is a
        plain TensorDict holding the three root-level done flags (its only level), read from
        its entry dict, none of them set (else the env checks them), and a full reset's
        carry-over built from the entry dicts."""
        env = self.env
        if type(fresh) is TensorDict and levels == [()]:
            names = entries(fresh)
            flags = [names.get(k) for k in (DONE, TERMINATED, TRUNCATED)]
            if all(f is not None and not any_set(f) for f in flags):
                batch = env.batch_size
                if batch_size_of(fresh) != batch:
                    fresh.batch_size = batch
                if tensordict is None:
                    return fresh
                if masks is None:
                    carried = carry_flat(tensordict, fresh)
                    if carried is not None:
                        return carried
        return env.complete_reset(tensordict, fresh, masks, levels)

    def mark_finished(self, root: TensorDictBase) -> bool:
        """What ``EnvBase`` does to mark the finished sub-envs of ``root`` (a ``"_reset"`` mask
        beside every ``done`` flag that is set; True if any is), reading and writing
        root-level entries of a plain TensorDict directly."""
        paths = self._env_paths
        if paths is None:
            paths = self._env_paths = self.env.done_paths()
        any_finished = False
        for done_path, reset_path in paths:
            done = get_leaf(root, done_path)
            if any_set(done):
                if len(reset_path) == 1:
                    set_leaf(root, reset_path[0], done)
                else:
                    root.set(reset_path, done)
                any_finished = True
        return any_finished

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """``env.step_and_maybe_reset(tensordict)``: through :meth:`step_and_reset` where
        it applies, else :meth:`full_step`, ``step_mdp`` and a reset of the finished
        sub-envs."""
        env = self.env
        fused = self.step_and_reset(tensordict)
        if fused is None:
            tensordict = self.full_step(tensordict)
        else:
            tensordict = self.write_step(tensordict, fused[0])
        mdp = self._env_mdp
        if mdp is None:
            mdp = self._env_mdp = env.step_mdp_plan()
        next_root = mdp(tensordict)
        if fused is not None:
            if fused[1] is not None:
                next_root = self.merge_reset_rows(next_root, fused[1])
        elif self.mark_finished(next_root):
            next_root = env.reset(next_root)
        return tensordict, next_root

    def rand_action(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``env.rand_action(tensordict)``; one root-level action is drawn from its own spec
        and stored directly (the same draws as the full spec's)."""
        env = self.env
        single = self.__dict__.get("_single_action", _NO_PLAN)
        if single is _NO_PLAN:
            keys = env.action_keys
            single = None
            if len(keys) == 1 and type(keys[0]) is str:
                single = (keys[0], env.full_action_spec[keys[0]])
            self.__dict__["_single_action"] = single
        if single is None:
            return tensordict.update(env.full_action_spec.rand())
        set_leaf(tensordict, single[0], single[1].rand())
        return tensordict


def plan_applies(env: object) -> bool:
    """Whether ``env``'s class keeps the reference methods of the env class that declared its
    ``_make_step_plan`` (see the module docstring).

    The declaring env class is the least derived env class (one with the reference methods)
    that inherits the ``_make_step_plan`` of ``env``'s class: the class itself, or the env
    class that took it from a mixin.
    """
    cls = type(env)
    declarer = next(k for k in cls.__mro__ if "_make_step_plan" in vars(k))
    anchor = [
        k
        for k in cls.__mro__
        if issubclass(k, declarer) and all(hasattr(k, name) for name in REFERENCE_METHODS)
    ][-1]
    return all(getattr(cls, name) is getattr(anchor, name) for name in REFERENCE_METHODS)


#: The transform methods a ``fusable`` declaration covers: overridden below the class that
#: declared it, they turn it off.
FUSED_METHODS = ("_call", "_step", "_reset")


# Transform type -> its ``fusable`` declaration: ``True``, or a rule ``rule(transform) ->
# bool`` for a declaration that depends on the transform's settings. Filled by the packages
# that define the transforms (``rl_core.transforms._plans``), not by the classes themselves.
_FUSABLE: dict[type, bool | Callable[[Any], bool]] = {}


def declare_fusable(kind: type, rule: bool | Callable[[Any], bool] = True) -> None:
    """Declares the transform type ``kind`` ``fusable`` (see ``Transform.fusable``): always
    (``rule=True``) or where ``rule(transform)`` holds. It holds for ``kind`` and for its
    subclasses that override none of :data:`FUSED_METHODS` (:func:`fusable_as_declared`).

    Raises:
        TypeError: ``kind`` is not a class, or ``rule`` is neither a bool nor callable.
    """
    if not isinstance(kind, type):
        raise TypeError(f"declare_fusable: expected a transform class, got {kind!r}.")
    if not (isinstance(rule, bool) or callable(rule)):
        raise TypeError(
            f"declare_fusable({kind.__name__}): expected rule=True/False or a callable "
            f"rule(transform) -> bool, got {type(rule).__name__}."
        )
    _FUSABLE[kind] = rule


def declared_fusable(transform: Any) -> bool:
    """The ``fusable`` declaration of the nearest class of ``transform``'s type that
    :func:`declare_fusable` registered, evaluated for ``transform``; ``False`` where none
    did (what ``Transform.fusable`` gives unless a class sets the attribute itself)."""
    for kind in type(transform).__mro__:
        rule = _FUSABLE.get(kind)
        if rule is not None:
            return bool(rule(transform)) if callable(rule) else rule
    return False


def fusable_as_declared(transform: Any) -> bool:
    """A transform's ``fusable`` declaration, honoured only where no class below the one that
    declared it overrides the step or reset methods (their new behaviour was never declared):
    the rule of :func:`plan_applies`, for transforms. A transform plan (a TransformedEnv's
    fused step-and-reset) applies only where this holds. The declaring class is the nearest
    one registered with :func:`declare_fusable` or setting ``fusable`` itself.
    """
    if not transform.fusable:
        return False
    cls = type(transform)
    declarer = next(k for k in cls.__mro__ if k in _FUSABLE or "fusable" in vars(k))
    return all(getattr(cls, name) is getattr(declarer, name) for name in FUSED_METHODS)


@contextmanager
def reference_only() -> Iterator[None]:
    """Within the block, every env runs its reference code (no step plan is used); the
    conformance kit compares the two routes with it.
    """
    previous = PLANS.enabled
    PLANS.enabled = False
    try:
        yield
    finally:
        PLANS.enabled = previous


__all__ = [
    "FUSED_METHODS",
    "REFERENCE_METHODS",
    "PLANS",
    "PlanEnv",
    "StepPlan",
    "declare_fusable",
    "declared_fusable",
    "fusable_as_declared",
    "plan_applies",
    "reference_only",
]
