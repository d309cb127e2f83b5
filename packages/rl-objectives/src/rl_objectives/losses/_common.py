"""Helpers shared by the losses (private)."""

from __future__ import annotations

import math
import weakref
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import Tensor, nn

from rl_core import Categorical, Composite, OneHot
from rl_core import keys as K
from rl_core.modules import ValueOperator
from rl_core.objectives import LossModule
from rl_objectives._log_prob import total
from rl_objectives.utils import ValueEstimators
from rl_objectives.value import (
    GAE,
    MultiAgentGAE,
    TD0Estimator,
    TD1Estimator,
    TDLambdaEstimator,
    ValueEstimatorBase,
    VTrace,
)
from rl_objectives.value.base import expand_like

DEFAULT_GAMMA = 0.99
DEFAULT_LMBDA = 0.95


class UnsupportedEstimatorError(ValueError, NotImplementedError):
    """A loss asked for a value estimator it does not use: a ``ValueError`` (a bad argument)
    that is also TorchRL's ``NotImplementedError``, so code written for either catches it."""


# the kind of each estimator class (MultiAgentGAE before its base GAE)
_KINDS = (
    (TD0Estimator, ValueEstimators.TD0),
    (TD1Estimator, ValueEstimators.TD1),
    (TDLambdaEstimator, ValueEstimators.TDLambda),
    (MultiAgentGAE, ValueEstimators.MAGAE),
    (GAE, ValueEstimators.GAE),
    (VTrace, ValueEstimators.VTrace),
)


def is_estimator(value_type: Any) -> bool:
    """Whether ``value_type`` is an estimator instance or class (not a kind to build)."""
    return isinstance(value_type, ValueEstimatorBase) or (
        isinstance(value_type, type) and issubclass(value_type, ValueEstimatorBase)
    )


def build_estimator(
    loss: LossModule,
    value_type: Any,
    hyperparams: dict[str, Any],
    value_network: nn.Module | None,
    *,
    actor_network: nn.Module | None = None,
    allowed: tuple[ValueEstimators, ...] = tuple(ValueEstimators),
) -> Any:
    """Builds the estimator ``value_type`` for ``loss``; gamma defaults to ``loss.gamma``.

    ``value_type`` is a :class:`ValueEstimators` member (or its name), an estimator instance
    (returned as it is) or an estimator class (built with ``hyperparams`` alone, as TorchRL
    does). An estimator of a kind outside ``allowed`` raises
    :class:`UnsupportedEstimatorError`.
    """
    owner = f"{type(loss).__name__}.make_value_estimator"
    if is_estimator(value_type):
        cls = value_type if isinstance(value_type, type) else type(value_type)
        kind = next((k for base, k in _KINDS if issubclass(cls, base)), None)
        if kind is not None and kind not in allowed:
            raise UnsupportedEstimatorError(
                f"{owner}: {type(loss).__name__} does not use a {cls.__name__} (a "
                f"{kind.name} estimator); supported: {[v.name for v in allowed]}."
            )
        if isinstance(value_type, type):
            return value_type(**hyperparams)
        if hyperparams:
            raise TypeError(
                f"{owner}: got hyperparameters {sorted(hyperparams)} with an estimator "
                f"instance; set them when building the {cls.__name__}."
            )
        return value_type
    requested = value_type
    if isinstance(value_type, str):
        value_type = ValueEstimators.__members__.get(value_type)
    if value_type not in allowed:
        raise UnsupportedEstimatorError(
            f"{owner}: expected one of {[v.name for v in allowed]} (or an estimator instance "
            f"or class of those kinds), got {requested!r}."
        )
    hp = dict(hyperparams)
    gamma = hp.pop("gamma", getattr(loss, "gamma", None))
    gamma = DEFAULT_GAMMA if gamma is None else gamma
    if value_type is ValueEstimators.TD0:
        return TD0Estimator(gamma, value_network, **hp)
    if value_type is ValueEstimators.TD1:
        return TD1Estimator(gamma, value_network, **hp)
    if value_type is ValueEstimators.TDLambda:
        return TDLambdaEstimator(gamma, hp.pop("lmbda", DEFAULT_LMBDA), value_network, **hp)
    if value_type is ValueEstimators.GAE:
        return GAE(gamma, hp.pop("lmbda", DEFAULT_LMBDA), value_network, **hp)
    if value_type is ValueEstimators.MAGAE:
        return MultiAgentGAE(gamma, hp.pop("lmbda", DEFAULT_LMBDA), value_network, **hp)
    if actor_network is None:
        raise ValueError(f"{owner}: V-trace needs an actor network; this loss has none.")
    return VTrace(gamma, value_network, actor_network, **hp)


def batch_ndim(like: Tensor) -> int:
    """The number of dims of ``like`` without a trailing singleton feature dim."""
    return like.dim() - 1 if like.shape[-1:] == (1,) else like.dim()


def aggregate_log_prob(log_prob: Tensor | TensorDictBase, like: Tensor) -> Tensor:
    """Sums per-dimension log-probs down to the shape of ``like`` without its feature dim;
    a TensorDict of log-probs (one per action head) is summed over its heads too."""
    return total(log_prob, batch_ndim(like))


def squeeze_feature(x: Tensor) -> Tensor:
    """Drops a trailing singleton feature dim (``[*B, 1]`` -> ``[*B]``)."""
    return x.squeeze(-1) if x.shape[-1:] == (1,) else x


def get_dist(loss: LossModule, name: str, tensordict: TensorDictBase) -> Any:
    """The action distribution of the converted actor ``name`` (online parameters)."""
    with loss.use_network(name) as net:
        return actor_dist(net, tensordict)


# Structural part of _plain_parameter_step, per actor (the structure of a module is fixed
# once the loss holds it; hooks are checked on every call).
_PARAMETER_STEPS: weakref.WeakKeyDictionary[nn.Module, tuple[Any, ...] | None] = (
    weakref.WeakKeyDictionary()
)


def _parameter_step_structure(actor: nn.Module) -> tuple[Any, ...] | None:
    from tensordict.nn import (
        ProbabilisticTensorDictModule,
        ProbabilisticTensorDictSequential,
        TensorDictModule,
    )

    if not isinstance(actor, ProbabilisticTensorDictSequential):
        return None
    steps = actor.module
    if len(steps) != 2:
        return None
    first, head = steps
    if (
        type(first) is not TensorDictModule
        or not isinstance(head, ProbabilisticTensorDictModule)
        or sorted(map(str, first.out_keys)) != sorted(map(str, head.in_keys))
    ):
        return None
    return first, head, list(first.out_keys), list(head.in_keys)


def _plain_parameter_step(actor: nn.Module) -> tuple[Any, Any] | None:
    """``(parameter module, head)`` of a two-step probabilistic actor whose first step is a
    plain ``TensorDictModule`` writing exactly the head's inputs; ``None`` otherwise."""
    if torch.compiler.is_compiling():  # dynamo cannot guard on the weak dictionary
        parts = _parameter_step_structure(actor)
    else:
        try:
            parts = _PARAMETER_STEPS[actor]
        except KeyError:
            parts = _PARAMETER_STEPS[actor] = _parameter_step_structure(actor)
    if parts is None:
        return None
    first, head, out_keys, in_keys = parts
    if (
        first._forward_hooks
        or first._forward_pre_hooks
        or type(head.distribution_kwargs) is not dict
        or actor.module[0] is not first
        or actor.module[1] is not head
        or first.out_keys != out_keys
        or head.in_keys != in_keys
    ):
        return None
    return first, head


def actor_dist(actor: nn.Module, tensordict: TensorDictBase) -> Any:
    """``actor.get_dist(tensordict.copy())``, built directly when that is the same computation.

    For a ``ProbabilisticActor`` made of a plain ``TensorDictModule`` (writing the
    distribution parameters) and its distribution head, the network is called on the input
    tensors and the distribution class on its outputs, as ``get_dist`` does, without the
    TensorDict plumbing in between.
    """
    parts = _plain_parameter_step(actor)
    if parts is None:
        return actor.get_dist(tensordict.copy())
    first, head = parts
    outputs = first.module(*[tensordict.get(key) for key in first.in_keys])
    if not isinstance(outputs, tuple):
        outputs = (outputs,)
    by_key = dict(zip(map(str, first.out_keys), outputs))
    kwargs = {}
    for dist_key, td_key in zip(head.dist_keys, head.in_keys):
        name = dist_key[-1] if isinstance(dist_key, tuple) else dist_key
        kwargs[name] = by_key[str(td_key)]
    return head.distribution_class(**kwargs, **head.distribution_kwargs)


def entropy_of(dist: Any, samples: int) -> Tensor | TensorDictBase:
    """The entropy, analytic where the distribution has one, else a Monte-Carlo estimate
    (a TensorDict, one entry per head, for a distribution over several action heads)."""
    try:
        return dist.entropy()
    except NotImplementedError:
        x = dist.rsample((samples,)) if dist.has_rsample else dist.sample((samples,))
        return -dist.log_prob(x).mean(0)


def reduce(value: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return value.mean()
    if reduction == "sum":
        return value.sum()
    return value


def check_reduction(owner: str, reduction: str | None) -> str:
    reduction = "mean" if reduction is None else reduction
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{owner}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}.")
    return reduction


def check_loss_function(owner: str, name: str) -> str:
    if name not in ("l1", "l2", "smooth_l1"):
        raise ValueError(f"{owner}: loss function must be 'l1', 'l2' or 'smooth_l1', got {name!r}.")
    return name


def forward_estimator_keys(loss: LossModule, kwargs: dict[str, Any]) -> None:
    """Passes the renamed keys that the loss's value estimator knows on to it."""
    estimator = loss.value_estimator
    if estimator is None:
        return
    known = set(type(estimator.tensor_keys).__dataclass_fields__)
    estimator.set_keys(**{k: v for k, v in kwargs.items() if k in known})


class EstimatorChoice:
    """Mixin for losses with a value estimator: ``make_value_estimator`` also takes an
    estimator instance or class (see :func:`build_estimator`), as TorchRL; ``value_type`` is
    then the estimator's class."""

    def make_value_estimator(self, value_type: Any = None, **hyperparams: Any) -> Any:
        super().make_value_estimator(value_type, **hyperparams)  # type: ignore[misc]
        if isinstance(value_type, ValueEstimatorBase):
            # stored as a submodule by LossModule (an nn.Module): the estimator is registered
            # once, at value_estimator
            del self.value_type
            self.value_type = type(value_type)
        return self


class BootstrappedTargets(EstimatorChoice):
    """Mixin for losses whose TD target bootstraps from the loss's own (target) networks.

    Such a loss computes the next-state value itself and hands it to the estimator, so only
    the TD(0), TD(1) and TD(lambda) estimators apply, built without a value network and with
    ``skip_existing=True``. Renamed keys are passed on to the estimator; a loss that renames
    more (its networks' output keys) overrides ``_forward_value_estimator_keys`` and calls
    :func:`forward_estimator_keys` itself.
    """

    def _make_value_estimator(self, value_type: Any, **hyperparams: Any) -> Any:
        allowed = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
        if not is_estimator(value_type):  # one given is used as it is
            hyperparams.setdefault("skip_existing", True)
        return build_estimator(self, value_type, hyperparams, None, allowed=allowed)

    def _forward_value_estimator_keys(self, **kwargs: Any) -> None:
        forward_estimator_keys(self, kwargs)


def under_next(key: Any) -> tuple[str, ...]:
    """``key`` inside the ``"next"`` sub-TensorDict."""
    return ("next", *((key,) if isinstance(key, str) else key))


def bootstrap_in_keys(
    loss: LossModule,
    tensordict: TensorDictBase | None,
    *,
    root: tuple[str, ...],
    following: tuple[str, ...],
) -> list[Any]:
    """The inputs of a loss that bootstraps its target from the next state: the data action,
    the ``in_keys`` of the networks ``root`` (run on the batch) and ``following`` (run on
    ``"next"``, where the action they read is the one the loss computes), and the next
    reward, done and terminated flags (done is not needed by the TD(0) estimator)."""
    keys = loss.tensor_keys
    action = keys.action if isinstance(keys.action, str) else tuple(keys.action)
    out: list[Any] = [keys.action]
    for name in root:
        out += loss._network_in_keys(name)
    for name in following:
        out += [under_next(k) for k in loss._network_in_keys(name) if k != action]
    flags = [keys.reward, keys.done, keys.terminated]
    if tensordict is not None and type(loss.value_estimator) is TD0Estimator:
        flags = [keys.reward, keys.terminated]
    return out + [under_next(k) for k in flags]


#: TorchRL's names of the two encodings of a discrete action
ACTION_SPACES = {
    "one_hot": "one_hot",
    "one-hot": "one_hot",
    "onehot": "one_hot",
    "categorical": "categorical",
}


def check_action_space(owner: str, action_space: Any) -> str | None:
    """``"one_hot"``, ``"categorical"`` or ``None`` (read from the action) from TorchRL's
    ``action_space=`` argument: a name or a ``OneHot``/``Categorical`` spec.

    Raises:
        ValueError: an unknown name.
        TypeError: neither a name nor one of those specs.
    """
    if action_space is None:
        return None
    if isinstance(action_space, str):
        space = ACTION_SPACES.get(action_space.lower())
        if space is None:
            raise ValueError(
                f"{owner}: expected action_space 'one_hot' (or 'one-hot') or 'categorical', "
                f"got {action_space!r}."
            )
        return space
    if isinstance(action_space, OneHot):
        return "one_hot"
    if isinstance(action_space, Categorical):
        return "categorical"
    raise TypeError(
        f"{owner}: expected action_space to be a string or a OneHot or Categorical spec, got "
        f"{type(action_space).__name__}."
    )


def encoded_action(
    owner: str, action_space: str | None, action: Tensor, n: int, batch_dims: int
) -> Tensor:
    """The data action checked against ``action_space``: an index ``[*B, 1]`` for
    ``"categorical"`` (a ``[*B]`` one gets its trailing dim), a one-hot ``[*B, n]`` for
    ``"one_hot"``; unchanged for ``None``.

    Raises:
        ValueError: the action is not encoded as ``action_space`` says.
    """
    if action_space == "categorical":
        if action.dim() == batch_dims:
            action = action.unsqueeze(-1)
        if action.shape[batch_dims:] != (1,) or action.is_floating_point():
            raise ValueError(
                f"{owner}: action_space='categorical' expects an integer action index of shape "
                f"[*B] or [*B, 1], got {action.dtype} of shape {tuple(action.shape)}."
            )
        return action.long()
    if action_space == "one_hot" and action.shape[batch_dims:] != (n,):
        raise ValueError(
            f"{owner}: action_space='one_hot' expects a one-hot action of {n} entries, got "
            f"shape {tuple(action.shape)}."
        )
    return action


def gather_action_value(action_value: Tensor, action: Tensor) -> Tensor:
    """The value of the taken action, ``[*B, 1]``: one-hot (same shape) or index actions."""
    if action.shape == action_value.shape:
        return (action_value * action.to(action_value.dtype)).sum(-1, keepdim=True)
    if action.is_floating_point() or action.dtype == torch.bool:
        raise ValueError(
            f"expected a one-hot action of shape {tuple(action_value.shape)} (the action "
            f"values) or an integer index, got {action.dtype} of shape {tuple(action.shape)}."
        )
    index = action if action.dim() == action_value.dim() else action.unsqueeze(-1)
    return action_value.gather(-1, index.long())


def next_value_td(
    tensordict: TensorDictBase, value_key: Any, next_value: Tensor, keys: Any
) -> TensorDictBase:
    """A ``[*B]`` TensorDict holding ``next/value`` plus the reward and done flags, for an
    estimator built with ``skip_existing`` and no network (without a terminated flag, the
    estimator reads done in its place)."""
    from tensordict import TensorDict

    src = tensordict.get("next")
    nxt = TensorDict({value_key: next_value}, batch_size=tensordict.batch_size)
    for name in ("reward", "done", "terminated"):
        key = getattr(keys, name)
        entry = src.get(key, None)
        if entry is None and name == "terminated":
            continue
        if entry is None:
            raise KeyError(f"expected an entry {('next', key)!r} in the data, found none.")
        nxt.set(key, entry)
    return TensorDict(next=nxt, batch_size=tensordict.batch_size)


def bootstrap_target(loss: LossModule, tensordict: TensorDictBase, next_value: Tensor) -> Tensor:
    """The value target of ``loss.value_estimator`` from precomputed next-state values."""
    estimator = loss.value_estimator
    if type(estimator) is TD0Estimator:
        # Fast path: what TD0Estimator.value_estimate computes, without building its input.
        keys = estimator.tensor_keys
        src = tensordict.get("next")
        batch_dims = tensordict.batch_dims
        reward = expand_like(src.get(keys.reward), next_value, batch_dims)
        # without a terminated flag, done stands for it (as in the estimators)
        terminated = src.get(keys.terminated, None)
        if terminated is None:
            terminated = src.get(keys.done)
        terminated = expand_like(terminated, next_value, batch_dims)
        reward = reward.to(next_value.dtype)
        return reward + estimator.gamma * (~terminated).to(reward.dtype) * next_value
    value_key = loss.value_estimator.tensor_keys.value
    td = next_value_td(tensordict, value_key, next_value, loss.value_estimator.tensor_keys)
    return loss.value_estimator.value_estimate(td)


def action_bounds(
    owner: str, action_spec: Any, bounds: Any, action_key: Any = K.ACTION
) -> tuple[Any, Any] | None:
    """``(low, high)`` from a ``Bounded`` spec (or a ``Composite`` holding one at
    ``action_key``, as TorchRL reads an env's full action spec) or an explicit pair; ``None``
    if neither."""
    if bounds is not None:
        low, high = bounds
        return torch.as_tensor(low, dtype=torch.float32), torch.as_tensor(high, dtype=torch.float32)
    if action_spec is None:
        return None
    if isinstance(action_spec, Composite):
        entry = action_spec.get(action_key, None)
        if entry is None:
            raise KeyError(
                f"{owner}: the Composite action_spec has no entry {action_key!r} (its keys: "
                f"{list(action_spec.keys(True, True))}). Pass the action's Bounded spec."
            )
        action_spec = entry
    low, high = getattr(action_spec, "low", None), getattr(action_spec, "high", None)
    if low is None or high is None:
        raise TypeError(
            f"{owner}: action_spec must be a Bounded spec (with low and high), got "
            f"{type(action_spec).__name__}. Pass bounds=(low, high) instead."
        )
    return low, high


def sample_with_log_prob(
    dist: Any, like_batch_dims: int, sample_shape: tuple[int, ...] = ()
) -> tuple[Tensor, Tensor]:
    """A reparameterised action and its log-prob summed to ``[*sample_shape, *B]``."""
    if hasattr(dist, "rsample_and_log_prob"):
        action, log_prob = dist.rsample_and_log_prob(sample_shape)
    else:
        action = dist.rsample(sample_shape)
        log_prob = dist.log_prob(action)
    while log_prob.dim() > like_batch_dims + len(sample_shape):
        log_prob = log_prob.sum(-1)
    return action, log_prob


class DetachedParamsCache:
    """Mixin for losses: ``self._detached(name)`` returns ``{name}_params`` detached, cached.

    The detached tensors are views of the parameters (same storage), so optimizer steps and
    ``load_state_dict`` show through; ``.to()``/``.float()``/... replace the parameters and
    go through ``nn.Module._apply``, which drops the cache.
    """

    def _detached(self, name: str) -> TensorDictBase:
        cache = self.__dict__.setdefault("_detached_cache", {})
        params = cache.get(name)
        if params is None:
            params = cache[name] = getattr(self, f"{name}_params").detach()
        return params

    def _critic_params(
        self, name: str, against: tuple[str, ...] = ("actor_network",)
    ) -> TensorDictBase | None:
        """The parameters to run the network ``name`` with in a critic term.

        With ``self.separate_losses`` (TorchRL's option), the entries ``{name}_params``
        shares with the networks ``against`` (a common trunk) are detached, so that only the
        policy loss trains them; the set is built once and cached like :meth:`_detached`.
        Otherwise ``{name}_params`` itself, or ``None`` (its own parameters) for a network
        kept with ``functional=False``.
        """
        if not getattr(self, "separate_losses", False):
            if name in self._plain_networks:  # type: ignore[attr-defined]
                return None
            return getattr(self, f"{name}_params")
        cache = self.__dict__.setdefault("_detached_cache", {})
        params = cache.get(("separate", name))
        if params is None:
            shared = {
                id(leaf)
                for other in against
                for leaf in getattr(self, f"{other}_params").values(True, True)
            }
            params = TensorDict()
            for key, leaf in getattr(self, f"{name}_params").items(True, True):
                params.set(key, leaf.detach() if id(leaf) in shared else leaf)
            cache[("separate", name)] = params
        return params

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.__dict__.pop("_detached_cache", None)
        return super()._apply(fn, *args, **kwargs)  # type: ignore[misc]

    def __getstate__(self) -> dict[str, Any]:
        # a copy's detached views must look at the copy's parameters: rebuilt on first use
        state = dict(super().__getstate__())  # type: ignore[misc]
        state.pop("_detached_cache", None)
        return state


def read_output(module: nn.Module, tensordict: TensorDictBase, out_key: Any) -> Tensor:
    """``module(td.copy())[out_key]``, calling the wrapped network directly when that is the
    same computation: a plain ``TensorDictModule``/``ValueOperator`` with one output calls its
    network on the tensors at ``in_keys``, in order, and writes the result at ``out_key``."""
    if (
        type(module) in (TensorDictModule, ValueOperator)
        and len(module.out_keys) == 1
        and module.out_keys[0] == out_key
        and not module._forward_hooks
        and not module._forward_pre_hooks
    ):
        return module.module(*[tensordict.get(key) for key in module.in_keys])
    return module(tensordict.copy()).get(out_key)


def loss_device(owner: str, device: Any, module: nn.Module) -> torch.device:
    """``device`` as a ``torch.device``; by default the device of ``module``'s first
    parameter (the CPU without one). The loss's own tensors go there; the networks stay."""
    if device is None:
        first = next(iter(module.parameters()), None)
        return first.device if first is not None else torch.device("cpu")
    try:
        return torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"{owner}: device must be a torch.device or a device string such as 'cuda:0', "
            f"got {device!r}."
        ) from None


def register_log_alpha(loss: nn.Module, alpha_init: float, *, fixed: bool) -> None:
    """Gives ``loss`` its entropy temperature ``log_alpha``: a parameter, or a buffer if fixed."""
    log_alpha = torch.tensor(math.log(alpha_init))
    if fixed:
        loss.register_buffer("log_alpha", log_alpha)
    else:
        loss.log_alpha = nn.Parameter(log_alpha)


def continuous_entropy_target(action_spec: Any) -> float | None:
    """The ``"auto"`` entropy target of a continuous action: minus its number of dims."""
    shape = getattr(action_spec, "shape", None)
    return None if shape is None else -float(math.prod(shape))


def resolve_target_entropy(owner: str, target_entropy: Any, auto: float | None) -> float | None:
    """``target_entropy`` as a float, ``auto`` for ``"auto"``.

    Raises:
        ValueError: ``target_entropy`` is neither a number nor ``"auto"``.
    """
    if target_entropy == "auto":
        return auto
    if isinstance(target_entropy, int | float):
        return float(target_entropy)
    raise ValueError(f"{owner}: target_entropy must be a float or 'auto', got {target_entropy!r}.")
