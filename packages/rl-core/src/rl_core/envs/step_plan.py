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
  step.

Every route returns ``None`` where it does not apply, and the reference runs instead. A route
must give what the reference gives (values, dtypes, done flags, resets, seeds): the
conformance check :func:`rl_core.testing.check_step_plan` compares the two for any env.

When a plan applies is decided here, once, by :func:`active_plan`: the env's class does not
override a reference method (``_step``, ``_reset``, ``step``, ``reset``, ``_set_seed``) below
the class that declared the plan (such an override was never part of the plan), spec checks
are off (they check every reference step), and plans are not switched off
(:func:`reference_only`). Each plan then checks what only it knows (devices, dtypes, the
transforms it has plans for) when it is built.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tensordict import TensorDictBase

from rl_core.envs._spec_checks import SWITCH

if TYPE_CHECKING:
    from rl_core.envs.base import EnvBase

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

    def __init__(self, env: EnvBase) -> None:
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

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase] | None:
        """``env.step_and_maybe_reset`` through :meth:`step_and_reset`, or ``None``."""
        fused = self.step_and_reset(tensordict)
        if fused is None:
            return None
        env = self.env
        tensordict = env._write_step(tensordict, fused[0])
        plan = env._cache.get("step_mdp_plan")
        if plan is None:
            plan = env.step_mdp_plan()
        next_root = plan(tensordict)
        if fused[1] is not None:
            next_root = self.merge_reset_rows(next_root, fused[1])
        return tensordict, next_root


def plan_applies(env: EnvBase) -> bool:
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


def fusable_as_declared(transform: Any) -> bool:
    """A transform's ``fusable`` declaration, honoured only where no class below the one that
    declared it overrides the step or reset methods (their new behaviour was never declared):
    the rule of :func:`plan_applies`, for transforms. A transform plan (a TransformedEnv's
    fused step-and-reset) applies only where this holds.

    Examples:
        >>> from rl_core.transforms import RewardSum, StepCounter
        >>> class Custom(StepCounter):
        ...     def _step(self, tensordict, next_tensordict):
        ...         return next_tensordict
        >>> fusable_as_declared(RewardSum()), fusable_as_declared(Custom())
        (True, False)
    """
    if not transform.fusable:
        return False
    cls = type(transform)
    declarer = next(k for k in cls.__mro__ if "fusable" in vars(k))
    return all(getattr(cls, name) is getattr(declarer, name) for name in FUSED_METHODS)


def built_plan(env: EnvBase) -> StepPlan | None:
    """``env``'s plan, built on first use and cached with its specs (no per-call checks)."""
    plan = env._cache.get("step_plan", _NO_PLAN)
    if plan is _NO_PLAN:
        plan = env._cache["step_plan"] = env._make_step_plan() if plan_applies(env) else None
    return plan


def active_plan(env: EnvBase) -> StepPlan | None:
    """``env``'s plan where plans apply now (spec checks off, plans on), else ``None``."""
    if SWITCH.enabled or not PLANS.enabled:
        return None
    plan = env._cache.get("step_plan", _NO_PLAN)
    if plan is _NO_PLAN:
        plan = built_plan(env)
    return plan


@contextmanager
def reference_only() -> Iterator[None]:
    """Within the block, every env runs its reference code (no step plan is used); the
    conformance kit compares the two routes with it.

    Examples:
        >>> from rl_core.envs.step_plan import reference_only
        >>> from rl_core.testing import CountingEnv
        >>> with reference_only():
        ...     traj = CountingEnv(max_count=3).rollout(5, break_when_any_done=False)
        >>> traj.batch_size
        torch.Size([5])
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
    "StepPlan",
    "active_plan",
    "fusable_as_declared",
    "plan_applies",
    "reference_only",
]
