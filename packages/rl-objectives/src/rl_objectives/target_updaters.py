"""Target-network updaters: :class:`TargetNetUpdater`, :class:`SoftUpdate`, :class:`HardUpdate`."""

from __future__ import annotations

import abc

import torch
from tensordict import TensorDictBase

from rl_core.objectives import LossModule


class TargetNetUpdater(abc.ABC):
    """Base of the updaters that move a loss's target copies towards its online networks.

    It pairs every ``target_{name}_params`` of the loss with ``{name}_params`` (the names in
    :attr:`LossModule.target_network_names`). The pairs are looked up on every call, so the
    updater keeps working after ``loss.to(...)``. Floating-point entries are updated as each
    subclass defines; other entries (integer buffers such as BatchNorm's
    ``num_batches_tracked``) are copied.

    Subclasses implement :meth:`step`, called once per optimisation step.

    Args:
        loss_module: the loss whose targets to update.

    Raises:
        TypeError: ``loss_module`` is not a :class:`LossModule`.
        ValueError: the loss has no target networks.
    """

    def __init__(self, loss_module: LossModule) -> None:
        owner = type(self).__name__
        if not isinstance(loss_module, LossModule):
            raise TypeError(f"{owner}: expected a LossModule, got {type(loss_module).__name__}.")
        if not loss_module.target_network_names:
            raise ValueError(
                f"{owner}: {type(loss_module).__name__} has no target networks. Create them "
                f"with convert_to_functional(module, name, create_target_params=True)."
            )
        self.loss_module = loss_module

    def _pairs(self) -> list[tuple[TensorDictBase, TensorDictBase]]:
        loss = self.loss_module
        return [
            (getattr(loss, f"{name}_params").data, getattr(loss, f"target_{name}_params").data)
            for name in loss.target_network_names
        ]

    def _leaves(self) -> tuple[list[torch.Tensor], list[torch.Tensor], list[tuple]]:
        """Returns ``(target floats, online floats, [(target, online) other leaves])``."""
        target_floats, online_floats, others = [], [], []
        for online, target in self._pairs():
            for key, target_leaf in target.items(include_nested=True, leaves_only=True):
                online_leaf = online.get(key)
                if target_leaf.is_floating_point():
                    target_floats.append(target_leaf)
                    online_floats.append(online_leaf)
                else:
                    others.append((target_leaf, online_leaf))
        return target_floats, online_floats, others

    @torch.no_grad()
    def init_(self) -> None:
        """Copies every online network into its target."""
        target_floats, online_floats, others = self._leaves()
        if target_floats:
            torch._foreach_copy_(target_floats, online_floats)
        for target_leaf, online_leaf in others:
            target_leaf.copy_(online_leaf)

    @abc.abstractmethod
    def step(self) -> None:
        """Updates the targets; call it once per optimisation step."""


class SoftUpdate(TargetNetUpdater):
    """Polyak averaging: ``target = eps * target + (1 - eps) * online`` at every :meth:`step`.

    Give either ``eps`` (the share of the old target that stays, close to 1) or ``tau = 1 -
    eps`` (the share of the online weights that comes in, close to 0). The update runs in place
    under ``no_grad`` as one fused ``lerp_`` over all floating-point entries.

    Args:
        loss_module: the loss whose targets to update.

    Keyword Args:
        eps: the decay, in ``[0, 1]``.
        tau: the step size ``1 - eps``, in ``[0, 1]``.

    Raises:
        ValueError: both or neither of ``eps`` and ``tau``, or a value outside ``[0, 1]``;
            see also :class:`TargetNetUpdater`.
        TypeError: see :class:`TargetNetUpdater`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.objectives import LossModule
        >>> from rl_objectives import SoftUpdate
        >>> class Loss(LossModule):
        ...     def __init__(self, net):
        ...         super().__init__()
        ...         self.convert_to_functional(net, "value_network", create_target_params=True)
        ...
        ...     def forward(self, td):
        ...         return TensorDict()
        >>> net = torch.nn.Linear(1, 1)
        >>> loss = Loss(net)
        >>> updater = SoftUpdate(loss, tau=0.25)
        >>> with torch.no_grad():
        ...     _ = net.weight.fill_(1.0)
        ...     _ = loss.target_value_network_params["weight"].fill_(0.0)
        >>> updater.step()
        >>> print(loss.target_value_network_params["weight"])
        tensor([[0.2500]])
    """

    def __init__(
        self,
        loss_module: LossModule,
        *,
        eps: float | None = None,
        tau: float | None = None,
    ) -> None:
        if (eps is None) == (tau is None):
            raise ValueError(
                f"SoftUpdate: pass exactly one of eps and tau (eps = 1 - tau), got eps={eps} "
                f"and tau={tau}."
            )
        name, value = ("eps", eps) if eps is not None else ("tau", tau)
        if not 0.0 <= value <= 1.0:
            raise ValueError(
                f"SoftUpdate: {name} must lie in [0, 1], got {value}. Typical values are "
                f"eps=0.995 or tau=0.005."
            )
        super().__init__(loss_module)
        self.eps = float(eps) if eps is not None else 1.0 - float(tau)

    @property
    def tau(self) -> float:
        """``1 - eps``: the weight of the online network in each update."""
        return 1.0 - self.eps

    @torch.no_grad()
    def step(self) -> None:
        """Moves every target a fraction ``tau`` of the way to its online network."""
        target_floats, online_floats, others = self._leaves()
        if target_floats:
            torch._foreach_lerp_(target_floats, online_floats, self.tau)
        for target_leaf, online_leaf in others:
            target_leaf.copy_(online_leaf)


class HardUpdate(TargetNetUpdater):
    """Copies the online networks into the targets every ``value_network_update_interval`` steps.

    The copy happens on the ``N``-th, ``2N``-th, ... call of :meth:`step`.

    Args:
        loss_module: the loss whose targets to update.

    Keyword Args:
        value_network_update_interval: ``N``, a positive int. Defaults to ``1000``.

    Raises:
        ValueError: the interval is not a positive int; see also :class:`TargetNetUpdater`.
        TypeError: see :class:`TargetNetUpdater`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.objectives import LossModule
        >>> from rl_objectives import HardUpdate
        >>> class Loss(LossModule):
        ...     def __init__(self, net):
        ...         super().__init__()
        ...         self.convert_to_functional(net, "value_network", create_target_params=True)
        ...
        ...     def forward(self, td):
        ...         return TensorDict()
        >>> net = torch.nn.Linear(1, 1)
        >>> loss = Loss(net)
        >>> updater = HardUpdate(loss, value_network_update_interval=2)
        >>> with torch.no_grad():
        ...     _ = net.weight.fill_(1.0)
        >>> updater.step()
        >>> print(loss.target_value_network_params["weight"].item() == 1.0)
        False
        >>> updater.step()
        >>> print(loss.target_value_network_params["weight"].item() == 1.0)
        True
    """

    def __init__(
        self, loss_module: LossModule, *, value_network_update_interval: int = 1000
    ) -> None:
        interval = value_network_update_interval
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ValueError(
                f"HardUpdate: value_network_update_interval must be a positive int, got "
                f"{interval!r}."
            )
        super().__init__(loss_module)
        self.value_network_update_interval = interval
        self.counter = 0

    def step(self) -> None:
        """Counts one step, and copies the online networks on every ``N``-th call."""
        self.counter += 1
        if self.counter >= self.value_network_update_interval:
            self.init_()
            self.counter = 0
