"""Actor and critic built together: a shared trunk with two heads, or two separate modules."""

from __future__ import annotations

from tensordict.nn import (
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModuleBase,
    TensorDictSequential,
)
from torch import nn


def _steps(module: TensorDictModuleBase) -> list[TensorDictModuleBase]:
    """The modules a probabilistic sequence runs, in order, to rebuild it behind a trunk."""
    inner = module.module
    return list(inner.values()) if isinstance(inner, nn.ModuleDict) else list(inner)


def _chain(first: TensorDictModuleBase, then: TensorDictModuleBase) -> TensorDictSequential:
    """``first`` followed by ``then``, probabilistic (with ``get_dist``) when ``then`` is."""
    if isinstance(then, ProbabilisticTensorDictSequential):
        return ProbabilisticTensorDictSequential(first, *_steps(then))
    if isinstance(then, ProbabilisticTensorDictModule):
        return ProbabilisticTensorDictSequential(first, then)
    return TensorDictSequential(first, then)


def _check(where: str, **modules: object) -> None:
    for name, module in modules.items():
        if not isinstance(module, TensorDictModuleBase):
            raise TypeError(
                f"{where}: expected {name} to be a TensorDict module, got "
                f"{type(module).__name__}. Wrap it in TensorDictModule(net, in_keys=..., "
                f"out_keys=...)."
            )


class ActorValueOperator(TensorDictSequential):
    """A shared trunk feeding a policy head and a state-value head.

    Calling it runs ``common -> policy -> value`` and writes the outputs of all three. The
    standalone operators returned by :meth:`get_policy_operator` and
    :meth:`get_value_operator` share the same module objects, so training one trains the trunk
    used by the other.

    Args:
        common_operator: the trunk, e.g. observation -> ``"hidden"``.
        policy_operator: the policy head reading the trunk's output (an ``Actor``, a
            ``ProbabilisticActor``...).
        value_operator: the value head reading the trunk's output (a ``ValueOperator``).

    Raises:
        TypeError: one of the three is not a TensorDict module.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, Actor, ActorValueOperator, ValueOperator
        >>> trunk = TensorDictModule(MLP(3, 8, depth=0), ["observation"], ["hidden"])
        >>> op = ActorValueOperator(
        ...     trunk,
        ...     Actor(MLP(8, 2, depth=0), in_keys=["hidden"]),
        ...     ValueOperator(MLP(8, 1, depth=0), in_keys=["hidden"]),
        ... )
        >>> td = TensorDict(observation=torch.zeros(4, 3), batch_size=[4])
        >>> sorted(op.get_value_operator()(td.clone()).keys())
        ['hidden', 'observation', 'state_value']
        >>> op(td)["action"].shape
        torch.Size([4, 2])
    """

    def __init__(
        self,
        common_operator: TensorDictModuleBase,
        policy_operator: TensorDictModuleBase,
        value_operator: TensorDictModuleBase,
    ) -> None:
        _check(
            type(self).__name__,
            common_operator=common_operator,
            policy_operator=policy_operator,
            value_operator=value_operator,
        )
        super().__init__(common_operator, policy_operator, value_operator)

    def get_common_operator(self) -> TensorDictModuleBase:
        """Returns the shared trunk."""
        return self.module[0]

    def get_policy_head(self) -> TensorDictModuleBase:
        """Returns the policy head alone (it reads the trunk's output)."""
        return self.module[1]

    def get_value_head(self) -> TensorDictModuleBase:
        """Returns the value head alone (it reads the trunk's output)."""
        return self.module[2]

    def get_policy_operator(self) -> TensorDictSequential:
        """Returns ``trunk -> policy head``, probabilistic when the head is.

        Returns:
            A ``ProbabilisticTensorDictSequential`` (with ``get_dist``) for a probabilistic
            head, else a ``TensorDictSequential``.
        """
        return _chain(self.module[0], self.module[1])

    def get_value_operator(self) -> TensorDictSequential:
        """Returns ``trunk -> value head``: the value of the observation in the input."""
        return TensorDictSequential(self.module[0], self.module[2])


class ActorCriticOperator(ActorValueOperator):
    """A shared trunk feeding a policy head and a state-action value (Q) head.

    The value head reads the trunk's output *and* the action, so calling the operator runs
    ``common -> policy -> value`` and gives ``Q(s, pi(s))``. :meth:`get_critic_operator`
    returns that whole chain (as in TorchRL); :meth:`get_value_operator` returns
    ``trunk -> value head``, the Q-value of the action already in the input, which is what a
    critic loss on replayed actions needs. Arguments and errors as for
    :class:`ActorValueOperator`, the value head being a Q head that reads the action too.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, Actor, ActorCriticOperator, ValueOperator
        >>> trunk = TensorDictModule(MLP(3, 8, depth=0), ["observation"], ["hidden"])
        >>> op = ActorCriticOperator(
        ...     trunk,
        ...     Actor(MLP(8, 2, depth=0), in_keys=["hidden"]),
        ...     ValueOperator(MLP(10, 1, depth=0), in_keys=["hidden", "action"]),
        ... )
        >>> td = op(TensorDict(observation=torch.zeros(4, 3), batch_size=[4]))
        >>> td["state_action_value"].shape
        torch.Size([4, 1])
    """

    def get_critic_operator(self) -> ActorCriticOperator:
        """Returns the whole chain: the Q-value of the policy's own action, ``Q(s, pi(s))``."""
        return self

    def get_value_operator(self) -> TensorDictSequential:
        """Returns ``trunk -> Q head``: the Q-value of the action present in the input."""
        return super().get_value_operator()


class ActorCriticWrapper(TensorDictSequential):
    """A policy and a value function without a shared trunk, called in sequence.

    Calling it runs ``policy -> value``. :meth:`get_policy_operator` and
    :meth:`get_value_operator` return the two modules themselves.

    Args:
        policy_operator: the policy.
        value_operator: the value function (it may read the action the policy wrote).

    Raises:
        TypeError: one of the two is not a TensorDict module.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, Actor, ActorCriticWrapper, ValueOperator
        >>> ac = ActorCriticWrapper(Actor(MLP(3, 2, depth=0)), ValueOperator(MLP(3, 1, depth=0)))
        >>> td = ac(TensorDict(observation=torch.zeros(4, 3), batch_size=[4]))
        >>> td["action"].shape, td["state_value"].shape
        (torch.Size([4, 2]), torch.Size([4, 1]))
    """

    def __init__(
        self, policy_operator: TensorDictModuleBase, value_operator: TensorDictModuleBase
    ) -> None:
        _check("ActorCriticWrapper", policy_operator=policy_operator, value_operator=value_operator)
        super().__init__(policy_operator, value_operator)

    def get_policy_operator(self) -> TensorDictModuleBase:
        """Returns the policy module."""
        return self.module[0]

    def get_value_operator(self) -> TensorDictModuleBase:
        """Returns the value module."""
        return self.module[1]

    get_policy_head = get_policy_operator
    get_value_head = get_value_operator


__all__ = ["ActorValueOperator", "ActorCriticOperator", "ActorCriticWrapper"]
