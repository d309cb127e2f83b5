"""The base of the TensorDict-aware value estimators: :class:`ValueEstimatorBase`."""

from __future__ import annotations

import abc
import dataclasses
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Self

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor, nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_objectives._log_prob import LogProbKeys, check_key_list

__all__ = ["ValueEstimatorBase"]


def _valid_key(value: object) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, tuple) and len(value) > 0 and all(isinstance(v, str) for v in value)


def expand_like(x: Tensor, like: Tensor, batch_dims: int) -> Tensor:
    """Expands a shared ``[*B, F]`` entry to a per-agent ``[*B, n, ..., F]`` one.

    Singleton dims are inserted after the ``batch_dims`` leading dims until ``x`` has as many
    dims as ``like``, then ``x`` is expanded; an entry already shaped like ``like`` is
    returned as is.
    """
    if x.shape == like.shape:
        return x
    while x.dim() < like.dim():
        x = x.unsqueeze(batch_dims)
    return x.expand(like.shape)


def _positive_or_none(owner: str, name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: expected {name} to be an int or None, got {value!r}.")
    if value < 1:
        raise ValueError(f"{owner}: expected {name} >= 1, got {value}.")
    return value


class BoundNetwork:
    """A network converted by a loss, called with the loss's current parameters by default.

    Losses give their estimators this instead of the parameter-free structure, so that
    ``loss.value_estimator(td)`` works on its own while the loss can still pass detached or
    target parameters explicitly.
    """

    def __init__(self, loss: nn.Module, name: str) -> None:
        self._loss = loss
        self._name = name

    @property
    def module(self) -> nn.Module:
        return self._loss.__dict__[self._name]

    @property
    def in_keys(self) -> list[NestedKey]:
        return list(getattr(self.module, "in_keys", []))

    def _params(self, params: TensorDictBase | None) -> TensorDictBase:
        return getattr(self._loss, f"{self._name}_params") if params is None else params

    def __call__(self, tensordict: TensorDictBase, params: TensorDictBase | None = None) -> Any:
        with self._params(params).to_module(self.module, preserve_module_state=False):
            return self.module(tensordict)

    def get_dist(self, tensordict: TensorDictBase, params: TensorDictBase | None = None) -> Any:
        with self._params(params).to_module(self.module, preserve_module_state=False):
            return self.module.get_dist(tensordict)


class ValueEstimatorBase(nn.Module, abc.ABC):
    """Reads a batch of trajectories and writes ``"advantage"`` and ``"value_target"``.

    The input is a TensorDict ``[*B, T]`` (time is the last batch dim unless ``time_dim``
    says otherwise) in the TED layout: ``("next", "reward")``, ``("next", "done")`` and
    ``("next", "terminated")``, plus whatever the value network reads at the root and under
    ``"next"``. The value network writes ``"state_value"`` (the :attr:`tensor_keys`
    ``value``) at both places. Subclasses implement :meth:`value_estimate` and, if their
    advantage is not ``value_target - value``, :meth:`forward`.

    Args:
        gamma: discount factor in ``[0, 1]``.
        value_network: a TensorDict module writing the value key, or ``None`` when the values
            are already in the data (``skip_existing=True``).

    Keyword Args:
        differentiable: keep gradients through the estimates, to the value network's inputs
            (e.g. imagined states). :meth:`forward` never sends gradient into the network's
            parameters (it evaluates them detached, as TorchRL holds the network out), so
            writing the advantage never trains the critic. Defaults to ``False``: the
            estimates are computed under ``no_grad``.
        skip_existing: reuse the values already present instead of calling the network.
            Defaults to ``False``.
        shifted: evaluate the states and the next states in one network call (stacked
            along a new leading dim) instead of two. Same results.
        time_dim: the time dim of the TensorDict; defaults to its last batch dim.
        average_gae: standardise the advantage (zero mean, unit std over the batch).
        value_chunk_size: call the value network on pieces of at most this many entries
            along ``value_chunk_dim`` (bounds its peak memory); the values are the same.
            Defaults to ``None`` (one call).
        num_chunks: call it on this many pieces instead (fewer if the dim is shorter);
            ``num_chunk`` is TorchRL's alias. Not with ``value_chunk_size``.
        value_chunk_dim: the batch dim the pieces are cut along. Defaults to 0.
        deactivate_vmap: TorchRL's switch from ``vmap`` to a loop over the stacked states
            and next states; the network is called without ``vmap`` here, so both values
            behave alike. Defaults to False.

    Raises:
        ValueError: ``gamma`` outside ``[0, 1]``; both ``value_chunk_size`` and
            ``num_chunks``, or ``num_chunks`` and a different ``num_chunk``; (when called)
            ``value_chunk_dim`` is not a batch dim of the data.
        TypeError: a chunk option is not an int (or None).
    """

    @dataclass
    class _AcceptedKeys:
        advantage: NestedKey = K.ADVANTAGE
        value_target: NestedKey = K.VALUE_TARGET
        value: NestedKey = K.STATE_VALUE
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED
        sample_log_prob: LogProbKeys = K.SAMPLE_LOG_PROB

    def __init__(
        self,
        gamma: float | Tensor,
        value_network: nn.Module | None,
        *,
        differentiable: bool = False,
        skip_existing: bool = False,
        shifted: bool = False,
        time_dim: int | None = None,
        average_gae: bool = False,
        value_chunk_size: int | None = None,
        num_chunks: int | None = None,
        num_chunk: int | None = None,
        value_chunk_dim: int = 0,
        deactivate_vmap: bool = False,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        gamma = float(gamma)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"{owner}: expected gamma in [0, 1], got {gamma}.")
        self.gamma = gamma
        # Held outside _modules: the estimator does not own the network's parameters (a loss
        # holds them and passes them in), so they stay out of its parameters()/state_dict().
        self.__dict__["value_network"] = value_network
        self.differentiable = differentiable
        self.skip_existing = skip_existing
        self.shifted = shifted
        self.time_dim = time_dim
        self.average_gae = average_gae
        self.deactivate_vmap = deactivate_vmap
        self.value_chunk_size = _positive_or_none(owner, "value_chunk_size", value_chunk_size)
        num_chunks = _positive_or_none(owner, "num_chunks", num_chunks)
        num_chunk = _positive_or_none(owner, "num_chunk", num_chunk)
        if num_chunks is not None and num_chunk is not None and num_chunks != num_chunk:
            raise ValueError(
                f"{owner}: num_chunks and num_chunk (its alias) cannot both be set to "
                f"different values, got {num_chunks} and {num_chunk}."
            )
        self.num_chunks = num_chunks if num_chunks is not None else num_chunk
        if self.value_chunk_size is not None and self.num_chunks is not None:
            raise ValueError(
                f"{owner}: value_chunk_size and num_chunks cannot both be set (got "
                f"{self.value_chunk_size} and {self.num_chunks}); pass a piece size or a "
                f"number of pieces."
            )
        if isinstance(value_chunk_dim, bool) or not isinstance(value_chunk_dim, int):
            raise TypeError(
                f"{owner}: expected value_chunk_dim to be an int, got {value_chunk_dim!r}."
            )
        self.value_chunk_dim = value_chunk_dim
        self.tensor_keys = self._AcceptedKeys()

    def set_keys(self, **kwargs: Any) -> Self:
        """Renames the entries the estimator reads or writes.

        Unknown names are rejected, so a loss forwards only the names its estimator knows.
        ``sample_log_prob`` also takes a list of keys, one per action head of a composite
        action: their log-probabilities are added.

        Raises:
            KeyError: a name is not one of the estimator's keys.
            TypeError: a value is not a key (or, for ``sample_log_prob``, a non-empty list
                of keys).
        """
        accepted = [f.name for f in dataclasses.fields(self.tensor_keys)]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise KeyError(
                f"{type(self).__name__}.set_keys: unknown key name(s) {unknown}; accepted: "
                f"{accepted}."
            )
        checked = {}
        for name, key in kwargs.items():
            if name == "sample_log_prob":
                key = check_key_list(type(self).__name__, name, key)
            elif not _valid_key(key):
                raise TypeError(
                    f"{type(self).__name__}.set_keys: {name} must be a str or a tuple of str, "
                    f"got {key!r}."
                )
            checked[name] = key
        for name, key in checked.items():
            setattr(self.tensor_keys, name, key)
        return self

    # Helpers for subclasses.

    def _time_dim(self, tensordict: TensorDictBase) -> int:
        ndim = tensordict.batch_dims
        if ndim == 0:
            raise ValueError(
                f"{type(self).__name__}: expected a TensorDict with a time dimension "
                f"(batch_size [*B, T]), got batch_size []."
            )
        time_dim = ndim - 1 if self.time_dim is None else self.time_dim
        if not -ndim <= time_dim < ndim:
            raise ValueError(
                f"{type(self).__name__}: time_dim={time_dim} is out of range for a TensorDict "
                f"with batch_size {list(tensordict.batch_size)}."
            )
        return time_dim % ndim

    def _grad_context(self) -> Any:
        return nullcontext() if self.differentiable else torch.no_grad()

    def _held_out(
        self, params: TensorDictBase | None, target_params: TensorDictBase | None
    ) -> tuple[TensorDictBase | None, TensorDictBase | None]:
        """The parameters :meth:`forward` evaluates the value network with: detached (the
        network's own when none are given), so that no gradient reaches them; unchanged when
        nothing is differentiated or there is no network."""
        if not self.differentiable or self.value_network is None:
            return params, target_params
        if params is None:
            if isinstance(self.value_network, BoundNetwork):
                params = self.value_network._params(None)
            else:
                params = TensorDict.from_module(self.value_network)
        return params.detach(), None if target_params is None else target_params.detach()

    def _split_value_net_input(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, ...]:
        """The pieces the value network is called on (``value_chunk_size``/``num_chunks``
        along ``value_chunk_dim``); the whole TensorDict when no chunking is set."""
        if self.value_chunk_size is None and self.num_chunks is None:
            return (tensordict,)
        dim = self._chunk_dim(tensordict)
        size = tensordict.batch_size[dim]
        if self.num_chunks is not None:
            if size == 0 or min(self.num_chunks, size) == 1:
                return (tensordict,)
            return tuple(tensordict.tensor_split(min(self.num_chunks, size), dim=dim))
        if size <= self.value_chunk_size:
            return (tensordict,)
        return tuple(tensordict.split(self.value_chunk_size, dim=dim))

    def _chunk_dim(self, tensordict: TensorDictBase) -> int:
        ndim = tensordict.batch_dims
        if not -ndim <= self.value_chunk_dim < ndim:
            raise ValueError(
                f"{type(self).__name__}: value_chunk_dim={self.value_chunk_dim} is not a batch "
                f"dim of the data (batch_size {list(tensordict.batch_size)}); pass a dim in "
                f"[{-ndim}, {ndim})."
            )
        return self.value_chunk_dim % ndim

    def _run(self, tensordict: TensorDictBase, params: TensorDictBase | None) -> None:
        pieces = self._split_value_net_input(tensordict)
        if len(pieces) == 1:
            self._run_whole(tensordict, params)
            return
        key = self.tensor_keys.value
        values = []
        for piece in pieces:
            self._run_whole(piece, params)
            values.append(piece.get(key))
        tensordict.set(key, torch.cat(values, dim=self._chunk_dim(tensordict)))

    def _run_whole(self, tensordict: TensorDictBase, params: TensorDictBase | None) -> None:
        if self.value_network is None:
            raise KeyError(
                f"{type(self).__name__}: the data has no {self.tensor_keys.value!r} entry and "
                f"the estimator has no value_network to compute it. Pass value_network=."
            )
        if isinstance(self.value_network, BoundNetwork):
            self.value_network(tensordict, params)
        elif params is None:
            self.value_network(tensordict)
        else:
            with params.to_module(self.value_network, preserve_module_state=False):
                self.value_network(tensordict)

    def _state_values(
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        *,
        need_value: bool = True,
        need_next: bool = True,
    ) -> tuple[Tensor | None, Tensor | None]:
        """Returns ``(value, next_value)`` (``None`` where not needed), calling the network
        where the entries are missing or ``skip_existing`` is off."""
        key = self.tensor_keys.value
        next_td = tensordict.get(K.NEXT)
        has_value = key in tensordict.keys(include_nested=True)
        has_next = key in next_td.keys(include_nested=True)
        run_value = need_value and not (self.skip_existing and has_value)
        run_next = need_next and not (self.skip_existing and has_next)
        if (run_value or run_next) and self.value_network is None and not (has_value or has_next):
            self._run(tensordict, None)  # raises the error
        if self.value_network is not None:
            in_keys = list(getattr(self.value_network, "in_keys", []) or [])
            chunked = self.value_chunk_size is not None or self.num_chunks is not None
            if (
                self.shifted
                and not chunked  # (the pieces are cut along the data's dims, one call each)
                and run_value
                and run_next
                and target_params is None
                and in_keys
            ):
                both = torch.stack([tensordict.select(*in_keys), next_td.select(*in_keys)], 0)
                self._run(both, params)
                tensordict.set(key, both[0].get(key))
                next_td.set(key, both[1].get(key))
            else:
                if run_value:
                    self._run(tensordict, params)
                if run_next:
                    self._run(next_td, params if target_params is None else target_params)
        value = tensordict.get(key) if need_value else None
        return value, (next_td.get(key) if need_next else None)

    def _next_entries(self, tensordict: TensorDictBase, like: Tensor) -> tuple[Tensor, ...]:
        """``(reward, done, terminated)`` of ``"next"``, expanded to the shape of ``like``.

        Data without a terminated entry (an env that tells no truncation apart) is read as
        terminated wherever it is done, as TorchRL does.
        """
        next_td = tensordict.get(K.NEXT)
        batch_dims = tensordict.batch_dims
        out = []
        for name in ("reward", "done", "terminated"):
            key = getattr(self.tensor_keys, name)
            entry = next_td.get(key, None)
            if entry is None and name == "terminated":
                out.append(out[1])  # done, already expanded
                continue
            if entry is None:
                raise KeyError(
                    f"{type(self).__name__}: expected an entry {(K.NEXT, key)!r} in the data, "
                    f"found none. Rename the key with set_keys({name}=...)."
                )
            out.append(expand_like(entry, like, batch_dims))
        reward, done, terminated = out
        return reward.to(like.dtype), done, terminated

    @abc.abstractmethod
    def value_estimate(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
    ) -> Tensor:
        """Returns the value target, shaped like the state value."""

    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
    ) -> TensorDictBase:
        """Writes the advantage and the value target into ``tensordict`` and returns it.

        Args:
            tensordict: the ``[*B, T]`` batch.

        Keyword Args:
            params: parameters to load into the value network (a loss's online params).
            target_params: parameters for the next-state values (a loss's target params).
        """
        params, target_params = self._held_out(params, target_params)
        with self._grad_context():
            target = self.value_estimate(tensordict, params=params, target_params=target_params)
            value, _ = self._state_values(tensordict, params, need_next=False)
            advantage = target - value
            if self.average_gae:
                advantage = _standardise(advantage)
        tensordict.set(self.tensor_keys.advantage, advantage)
        tensordict.set(self.tensor_keys.value_target, target)
        return tensordict


def _standardise(x: Tensor) -> Tensor:
    if x.numel() < 2:
        return x - x.mean()
    return (x - x.mean()) / x.std().clamp_min(1e-6)
