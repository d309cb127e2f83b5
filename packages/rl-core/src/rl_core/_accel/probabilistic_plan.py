"""PolicyCallPlan's node for rl_core's ``ProbabilisticActor`` while the collectors sample.

``ProbabilisticActor(td)`` goes through the sequence's call machinery (``dispatch``, the
skip-existing decorator, ``get_dist_params`` with its interaction-type block, the nested
``TensorDictSequential`` of the parameter module), then the head's (``dispatch`` again, the
generator resolution, the joint sample-and-log-prob lookup, ``update`` with a dict). Under
``ExplorationType.RANDOM``, the collectors' default, the whole call comes down to: run the
parameter module, build the distribution with the head's ``get_dist``, draw with
``rsample`` (or ``sample`` where the distribution has no reparameterised sample), score the
draw when ``return_log_prob`` is set, write, and project into the spec when ``safe``. This
node does exactly that, with the same distribution object and the same draws in the same
order, so the global RNG advances as it does in ``policy(td)``: the results are equal under
the same seed. For the distributions that ``_draw_plan`` knows (``OneHotCategorical`` from
logits, ``TanhNormal``) it draws the same sample and log-probability without building the
distribution object, where that module can show the result is the same.

It applies only where ``policy(td)`` is that short path; anything else calls the actor as it
is. Checked once, when the plan is built: the actor is exactly ``ProbabilisticActor`` with
its own head class, in place (``inplace`` ``True`` or ``None``), not ``return_composite``, no
selected out keys, a sample still required; the head draws one sample (no ``num_samples``),
from no generator of its own (no ``generator`` argument or key), into one sample key, from a
``torch.distributions.Distribution`` class that is not a composite distribution. Checked at
every call: the input is a plain ``TensorDict``, the interaction type is set to ``RANDOM``
(outside a ``set_exploration_type`` block the default type applies, and ``get_dist_params``
sets it around the parameter module: the generic call then), no hook, compiled call or
instance ``forward`` on the actor or its head, and the draw is a plain tensor.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import InteractionType, ProbabilisticTensorDictSequential, interaction_type
from tensordict.nn.distributions import CompositeDistribution
from torch import distributions as D

from rl_core._accel.draw_plan import draw_for
from rl_core._accel.fast_td import set_leaf
from rl_core._accel.policy_classes import PolicyClasses

_NO_SHAPE = torch.Size(())
# Distribution classes whose draws are one tensor (their subclasses elsewhere may return
# anything: a TensorDict, a tuple; those take the generic call).
_TENSOR_SAMPLES = ("torch.distributions.", "rl_core.modules.distributions.")


def _short_path(actor: Any, classes: PolicyClasses) -> tuple[Any, Any] | None:
    """``(parameter part, head)`` when ``actor(td)`` is the short path, else ``None``."""
    if type(actor) is not classes.probabilistic_actor:
        return None
    head = actor._last_module
    det_part = actor.__dict__.get("_det_part")
    if (
        type(head) is not classes.probabilistic_head
        or det_part is None
        or actor.return_composite
        or actor.inplace not in (True, None)
        or actor._select_before_return
        or not actor._requires_sample
        or getattr(head, "num_samples", 0) is not None
        or getattr(head, "_generator", 0) is not None
        or getattr(head, "_generator_key", 0) is not None
        or getattr(head, "_warn_default_out_key", True)
        or len(head.dist_sample_keys) != 1
    ):
        return None
    dist_class = head.distribution_class
    if not (
        isinstance(dist_class, type)
        and issubclass(dist_class, D.Distribution)
        and not issubclass(dist_class, CompositeDistribution)
        and dist_class.__module__.startswith(_TENSOR_SAMPLES)
    ):
        return None
    return det_part, head


class _ProbabilisticActorNode:
    """``ProbabilisticActor(td)`` under ``RANDOM``: parameters, distribution, draw, write."""

    __slots__ = ("actor", "calls_forward", "draw", "head", "params", "project_into", "sample_key")

    def __init__(
        self, actor: Any, params: Any, head: Any, calls_forward, classes: PolicyClasses
    ) -> None:
        self.actor, self.params, self.head = actor, params, head
        self.sample_key = head.dist_sample_keys[0]
        self.calls_forward = calls_forward
        self.project_into = classes.project_into
        self.draw = draw_for(head, classes)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        actor, head = self.actor, self.head
        if (
            type(tensordict) is not TensorDict
            or interaction_type() is not InteractionType.RANDOM
            or not self.calls_forward(actor)
            or not self.calls_forward(head)
        ):
            return actor(tensordict)
        tensordict = self.params(tensordict)
        self._sample(tensordict)
        return tensordict

    def _sample(self, tensordict: TensorDictBase) -> None:
        head = self.head
        drawn = None if self.draw is None else self.draw(tensordict, head.return_log_prob)
        if drawn is not None:
            self._write(tensordict, *drawn)
            return
        dist = head.get_dist(tensordict)
        log_prob = None
        if head.return_log_prob:
            name = "rsample_and_log_prob" if dist.has_rsample else "sample_and_log_prob"
            if callable(getattr(type(dist), name, None)):
                sample, log_prob = getattr(dist, name)(_NO_SHAPE)
            else:
                sample = dist.rsample(_NO_SHAPE) if dist.has_rsample else dist.sample(_NO_SHAPE)
        else:
            sample = dist.rsample(_NO_SHAPE) if dist.has_rsample else dist.sample(_NO_SHAPE)
        set_leaf(tensordict, self.sample_key, sample)
        if head.return_log_prob:
            if log_prob is None:
                log_prob = dist.log_prob(sample)
            tensordict.set(head.log_prob_key, log_prob)
        if head.safe:
            self.project_into(tensordict, head.spec)

    def _write(self, tensordict: TensorDictBase, sample: torch.Tensor, log_prob: Any) -> None:
        head = self.head
        set_leaf(tensordict, self.sample_key, sample)
        if log_prob is not None:
            set_leaf(tensordict, head.log_prob_key, log_prob)
        if head.safe:
            self.project_into(tensordict, head.spec)


def probabilistic_node(module: Any, plan, calls_forward, classes: PolicyClasses) -> Any | None:
    """The node of ``module`` if it is a ``ProbabilisticActor`` on the short path, else ``None``.

    ``plan`` builds the parameter part's own node (fast or generic); ``calls_forward`` is the
    plan's per-module hook check.
    """
    if not isinstance(module, ProbabilisticTensorDictSequential):
        return None
    parts = _short_path(module, classes)
    if parts is None:
        return None
    det_part, head = parts
    return _ProbabilisticActorNode(module, plan(det_part), head, calls_forward, classes)
