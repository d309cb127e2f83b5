"""VecNormV2: normalisation by exponential moving averages of the first two moments."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Composite, EnvBase, TensorSpec, Transform, Unbounded
from rl_core.keys import RESET, NestedKey
from rl_envs.transforms._common import OBSERVATION_GROUP, find_group, map_output_leaves

_PREFIX = "_vecnorm"


def moments_update(
    loc: torch.Tensor,
    var: torch.Tensor,
    count: torch.Tensor,
    value: torch.Tensor,
    decay: float,
    n: int = 1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One update of VecNormV2's running moments (new tensors; the inputs are left as they are).

    ``count' = count + n`` and, with ``w = 1 - decay ** n`` (``n / count'`` when
    ``decay == 1``, the plain average), ``loc' = loc + w * (value - loc)`` and
    ``var' = var + w * (value ** 2 - var)``: ``loc`` and ``var`` are running averages of the
    values and of their squares.

    Args:
        loc: the running first moment, shaped like ``value``.
        var: the running second moment (not centred), shaped like ``value``.
        count: how many values were averaged, an int64 tensor broadcastable to ``value``.
        value: the new value, or the mean of ``n`` values (and then ``var``'s update uses the
            mean of their squares, see ``square``).
        decay: in ``(0, 1]``.
        n: how many values ``value`` stands for.

    Returns:
        ``(loc', var', count')``.

    Examples:
        >>> loc, var, count = moments_update(
        ...     torch.zeros(1), torch.zeros(1), torch.zeros(1, dtype=torch.int64),
        ...     torch.tensor([2.0]), decay=1.0)
        >>> loc.tolist(), var.tolist(), count.tolist()
        ([2.0], [4.0], [1])
    """
    return _update(loc, var, count, value, value * value, decay, n)


def _update(
    loc: torch.Tensor,
    var: torch.Tensor,
    count: torch.Tensor,
    mean: torch.Tensor,
    square: torch.Tensor,
    decay: float,
    n: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    count = count + n
    if decay == 1.0:
        weight: torch.Tensor | float = (n / count).to(loc.dtype)
    else:
        weight = 1.0 - decay**n
    return loc + weight * (mean - loc), var + weight * (square - var), count


def moments_loc_scale(
    loc: torch.Tensor, var: torch.Tensor, count: torch.Tensor, decay: float, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and standard deviation VecNormV2 normalises with, from its running moments.

    Both moments are bias-corrected by ``c = 1 - decay ** count`` (the weight the running
    averages have given to data so far; ``c = 1`` when ``decay == 1``): ``mean = loc / c`` and
    ``std = sqrt(max(var / c - mean ** 2, 0))``, floored at ``eps``.

    Args:
        loc: the running first moment.
        var: the running second moment.
        count: the number of updates (int64, broadcastable).
        decay: in ``(0, 1]``.
        eps: the smallest standard deviation.

    Returns:
        ``(mean, std)`` shaped like ``loc``.

    Examples:
        >>> mean, std = moments_loc_scale(
        ...     torch.tensor([2.0]), torch.tensor([5.0]), torch.tensor(2), decay=1.0, eps=1e-4)
        >>> mean.tolist(), std.tolist()
        ([2.0], [1.0])
    """
    if decay == 1.0:
        correction: torch.Tensor | float = 1.0
    else:
        correction = (1.0 - torch.exp(count.to(loc.dtype) * math.log(decay))).clamp_min(1e-12)
    mean = loc / correction
    scale = (var / correction - mean * mean).clamp_min(0.0).sqrt().clamp_min(eps)
    return mean, scale


def _as_path(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


class VecNormV2(Transform):
    """Normalises entries (observations, rewards) by running averages of their first two moments
    (TorchRL's ``VecNormV2``).

    Each reset and step output updates, per key, ``count += 1``, ``loc += w * (x - loc)`` and
    ``var += w * (x ** 2 - var)`` with ``w = 1 - decay`` (``1 / count`` when ``decay == 1``:
    every value weighs the same), then writes ``(x - mean) / std`` at the out key, with the
    bias-corrected ``mean`` and ``std`` of :func:`moments_loc_scale`. The update runs before
    the normalisation, so the first value comes out as 0. A key missing from an output (the
    reward at a reset) is neither updated nor written; each key has its own ``count``.

    The statistics have the shape of the entry, batch dims included: in a batched env each
    sub-env has its own. With ``reduce_batch_dims=True`` they are shared across the batch: the
    update takes the mean of ``x`` and of ``x ** 2`` over the batch dims, adds the batch's
    number of elements ``n`` to ``count`` and weighs the update by ``1 - decay ** n``
    (``n / count`` when ``decay == 1``), i.e. as ``n`` values fed one by one would weigh.

    Modes:

    - ``stateful=True`` (default): the statistics live in the transform (:attr:`loc`,
      :attr:`scale`, ``state_dict``). To share them between the workers of a ``ParallelEnv``,
      build them once in shared memory with :meth:`build_shared_data`, and give them as
      ``shared_data`` to the VecNormV2 of every worker together with one ``lock`` (a
      ``multiprocessing.Lock``): every worker then updates the same tensors. (TorchRL shares
      them through ``EnvCreator``; here they are passed explicitly.)
    - ``stateful=False``: the statistics travel in the TensorDict, as observations
      ``"_vecnorm_loc"``, ``"_vecnorm_var"`` and ``"_vecnorm_count"`` (each a sub-TensorDict
      keyed like ``in_keys``); a reset starts them at zero for the sub-envs it resets, and a
      step reads them from its input and writes the updated ones in its output.

    Integer entries are normalised as floats (the default dtype); bounded specs become
    unbounded. Called on a TensorDict outside an env (a replay-buffer sample), the stateful
    transform normalises with its current statistics and does not update them.

    The variance is bias-corrected as ``var / c - (loc / c) ** 2``; TorchRL 0.14 computes
    ``(var - loc ** 2) / c``, which differs while ``c = 1 - decay ** count`` is below 1 (early
    in a run with ``decay < 1``) and is the same with ``decay=1``.

    Args:
        in_keys: the entries to normalise.
        out_keys: where to write them; default ``in_keys``.
        lock: held while the statistics are updated (keyword-only); give a
            ``multiprocessing.Lock`` shared by the workers that share ``shared_data``.
        stateful: see above (keyword-only). Defaults to True.
        decay: the decay of the running averages, in ``(0, 1]`` (keyword-only).
        eps: the smallest standard deviation (keyword-only).
        shared_data: ``TensorDict(loc=..., var=..., count=...)`` (see
            :meth:`build_shared_data`) to use and update instead of own statistics
            (keyword-only; stateful only).
        reduce_batch_dims: share the statistics across the batch dims (keyword-only;
            stateful only). Defaults to False.

    Raises:
        ValueError: ``decay`` outside ``(0, 1]``, a negative ``eps``, or ``reduce_batch_dims``
            or ``shared_data`` with ``stateful=False``.
        KeyError: ``shared_data`` lacks an entry for one of ``in_keys``.

    Examples:
        >>> import torch
        >>> from rl_core import TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> env = TransformedEnv(CountingEnv(max_count=10), VecNormV2(["observation"], decay=1.0))
        >>> policy = lambda td: td.set("action", torch.ones(1, dtype=torch.int64))
        >>> traj = env.rollout(2, policy)  # observations 0 (reset), 1, 2
        >>> env.transform.loc["observation"].item(), round(env.transform.scale["observation"].item(), 4)
        (1.0, 0.8165)
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey],
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        lock: Any = None,
        stateful: bool = True,
        decay: float = 0.9999,
        eps: float = 1e-4,
        shared_data: TensorDictBase | None = None,
        reduce_batch_dims: bool = False,
    ) -> None:
        if in_keys is None:
            raise TypeError("VecNormV2: in_keys is required (e.g. ['observation', 'reward']).")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"VecNormV2: expected 0 < decay <= 1, got decay={decay}.")
        if eps < 0:
            raise ValueError(f"VecNormV2: expected eps >= 0, got eps={eps}.")
        if not stateful and (reduce_batch_dims or shared_data is not None):
            raise ValueError(
                "VecNormV2: reduce_batch_dims and shared_data need stateful=True (the "
                "statistics of a stateless VecNormV2 travel in the TensorDict); got "
                f"reduce_batch_dims={reduce_batch_dims}, shared_data "
                f"{'given' if shared_data is not None else 'None'}."
            )
        self.stateful = bool(stateful)
        self.decay = float(decay)
        self.eps = float(eps)
        self.reduce_batch_dims = bool(reduce_batch_dims)
        self.frozen = False
        self.__dict__["lock"] = lock
        self._batch_ndim = 0  # the env's batch dims, learnt from its first output
        self._loc: TensorDictBase | None = None
        self._var: TensorDictBase | None = None
        self._count: TensorDictBase | None = None
        if shared_data is not None:
            for part in ("loc", "var", "count"):
                for key in self.in_keys:
                    if (part, *_as_path(key)) not in shared_data.keys(True, True):
                        raise KeyError(
                            f"VecNormV2: shared_data has no {part!r} entry for the key "
                            f"{key!r}; build it with VecNormV2.build_shared_data(env, in_keys)."
                        )
            self._loc = shared_data.get("loc")
            self._var = shared_data.get("var")
            self._count = shared_data.get("count")

    # ------------------------------------------------------------------ shared statistics
    @staticmethod
    def build_shared_data(
        env: EnvBase,
        in_keys: NestedKey | Sequence[NestedKey],
        *,
        reduce_batch_dims: bool = False,
    ) -> TensorDict:
        """Zeroed statistics for ``in_keys`` of ``env`` (one worker's env), in shared memory.

        Args:
            env: the env whose entries will be normalised.
            in_keys: the entries.
            reduce_batch_dims: shape them for ``reduce_batch_dims=True`` (without the env's
                batch dims).

        Returns:
            ``TensorDict(loc={key: ...}, var={key: ...}, count={key: int64 scalar})``.
        """
        keys = VecNormV2(in_keys).in_keys
        loc, var, count = TensorDict(), TensorDict(), TensorDict()
        ndim = len(env.batch_size)
        dtype = torch.get_default_dtype()
        for key in keys:
            group = find_group(env.output_spec, key, "VecNormV2.build_shared_data")
            spec = env.output_spec[group][key]
            shape = spec.shape[ndim:] if reduce_batch_dims else spec.shape
            dtype_key = spec.dtype if spec.dtype.is_floating_point else dtype
            loc.set(key, torch.zeros(shape, dtype=dtype_key))
            var.set(key, torch.zeros(shape, dtype=dtype_key))
            count.set(key, torch.zeros((), dtype=torch.int64))
        return TensorDict(loc=loc, var=var, count=count).share_memory_()

    # ------------------------------------------------------------------ statistics
    @property
    def prefix(self) -> str:
        """The prefix of the entries that carry a stateless VecNormV2's statistics."""
        return _PREFIX

    def _stat_keys(self) -> tuple[str, str, str]:
        return (f"{self.prefix}_loc", f"{self.prefix}_var", f"{self.prefix}_count")

    @staticmethod
    def _float(value: torch.Tensor) -> torch.Tensor:
        return value if value.dtype.is_floating_point else value.to(torch.get_default_dtype())

    def _ensure(self, key: NestedKey, value: torch.Tensor, batch_ndim: int) -> None:
        if self._loc is None:
            self._loc, self._var, self._count = TensorDict(), TensorDict(), TensorDict()
        if key in self._loc.keys(True, True):
            return
        shape = value.shape[batch_ndim:] if self.reduce_batch_dims else value.shape
        zeros = torch.zeros(shape, dtype=self._float(value).dtype, device=value.device)
        self._loc.set(key, zeros)
        self._var.set(key, zeros.clone())
        self._count.set(key, torch.zeros((), dtype=torch.int64, device=value.device))

    def _update_stateful(self, key: NestedKey, value: torch.Tensor, batch_ndim: int) -> None:
        loc, var, count = self._loc.get(key), self._var.get(key), self._count.get(key)
        value = self._float(value).to(loc.device, loc.dtype)
        if self.reduce_batch_dims and batch_ndim:
            dims = tuple(range(batch_ndim))
            n = math.prod(value.shape[:batch_ndim])
            new = _update(
                loc, var, count, value.mean(dims), (value * value).mean(dims), self.decay, n
            )
        else:
            if loc.shape != value.shape:
                raise ValueError(
                    f"VecNormV2: the statistics of {key!r} have shape {tuple(loc.shape)}, got a "
                    f"value of shape {tuple(value.shape)}; with reduce_batch_dims=False they "
                    f"include the env's batch dims (build shared_data for this env's batch)."
                )
            new = moments_update(loc, var, count, value, self.decay)
        for stat, updated in zip((loc, var, count), new):
            stat.copy_(updated)

    def _align(self, stat: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        # Per-sub-env statistics ([*env_batch, *feature]) against data with more dims (a
        # rollout's [*env_batch, T, *feature]): the extra dims go after the env's batch dims.
        extra = value.ndim - stat.ndim
        batch_ndim = self._batch_ndim
        if extra > 0 and not self.reduce_batch_dims and batch_ndim:
            stat = stat.reshape(*stat.shape[:batch_ndim], *(1,) * extra, *stat.shape[batch_ndim:])
        return stat.to(value.device, value.dtype)

    def _normalize(
        self, value: torch.Tensor, loc: torch.Tensor, var: torch.Tensor, count: torch.Tensor
    ) -> torch.Tensor:
        value = self._float(value)
        mean, scale = moments_loc_scale(loc, var, count, self.decay, self.eps)
        return (value - self._align(mean, value)) / self._align(scale, value)

    def _require_stats(self, where: str) -> None:
        if not self.stateful:
            raise RuntimeError(
                f"VecNormV2.{where}: a stateless VecNormV2 keeps no statistics (they travel in "
                f"the TensorDict under {self._stat_keys()})."
            )
        if self._loc is None:
            raise RuntimeError(
                f"VecNormV2.{where}: no statistics yet; put the transform in an env and reset "
                f"it, pass shared_data, or load a state_dict."
            )

    def _loc_scale(self) -> tuple[TensorDict, TensorDict]:
        loc, scale = TensorDict(), TensorDict()
        for key in self._loc.keys(True, True):
            mean, std = moments_loc_scale(
                self._loc.get(key),
                self._var.get(key),
                self._count.get(key),
                self.decay,
                self.eps,
            )
            loc.set(key, mean)
            scale.set(key, std)
        return loc, scale

    @property
    def loc(self) -> TensorDict:
        """The bias-corrected running mean of each key (a TensorDict)."""
        self._require_stats("loc")
        return self._loc_scale()[0]

    @property
    def scale(self) -> TensorDict:
        """The running standard deviation of each key, floored at ``eps`` (a TensorDict)."""
        self._require_stats("scale")
        return self._loc_scale()[1]

    @property
    def standard_normal(self) -> bool:
        """Always True: the output is ``(x - loc) / scale`` (as ObservationNorm's flag)."""
        return True

    # ------------------------------------------------------------------ env paths
    def _stateful(self, data: TensorDictBase) -> TensorDictBase:
        batch_ndim = self._batch_ndim = data.batch_dims
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = data.get(in_key, None)
            if value is None:
                continue
            if not self.frozen:
                if self.lock is None:
                    self._ensure(in_key, value, batch_ndim)
                    self._update_stateful(in_key, value, batch_ndim)
                else:
                    with self.lock:
                        self._ensure(in_key, value, batch_ndim)
                        self._update_stateful(in_key, value, batch_ndim)
            if self._loc is None or in_key not in self._loc.keys(True, True):
                raise RuntimeError(
                    f"VecNormV2: no statistics for {in_key!r} yet (the transform is frozen); "
                    f"unfreeze it or load a state_dict."
                )
            data.set(
                out_key,
                self._normalize(
                    value, self._loc.get(in_key), self._var.get(in_key), self._count.get(in_key)
                ),
            )
        return data

    def _stateless(self, source: TensorDictBase | None, data: TensorDictBase) -> TensorDictBase:
        loc_key, var_key, count_key = self._stat_keys()
        stats = {name: data.get(name, None) for name in (loc_key, var_key, count_key)}
        if source is not None and all(source.get(n, None) is not None for n in stats):
            stats = {name: source.get(name).clone() for name in stats}
        else:
            stats = {name: TensorDict(batch_size=data.batch_size) for name in stats}
        loc, var, count = stats[loc_key], stats[var_key], stats[count_key]
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = data.get(in_key, None)
            if value is None:
                if in_key not in loc.keys(True, True):
                    # A reset has no reward: its statistics start at zero all the same, so
                    # that every output carries the same entries (the specs say so).
                    self._zero_stats(in_key, loc, var, count)
                continue
            value = self._float(value)
            if in_key not in loc.keys(True, True):
                loc.set(in_key, torch.zeros_like(value))
                var.set(in_key, torch.zeros_like(value))
                count.set(in_key, torch.zeros(value.shape, dtype=torch.int64, device=value.device))
            state = (loc.get(in_key), var.get(in_key), count.get(in_key))
            if not self.frozen:
                state = moments_update(*state, value, self.decay)
                for part, updated in zip((loc, var, count), state):
                    part.set(in_key, updated)
            data.set(out_key, self._normalize(value, *state))
        data.set(loc_key, loc)
        data.set(var_key, var)
        data.set(count_key, count)
        return data

    def _zero_stats(
        self, key: NestedKey, loc: TensorDictBase, var: TensorDictBase, count: TensorDictBase
    ) -> None:
        parent = self.parent
        if parent is None:
            return
        output_spec = parent.output_spec
        spec = output_spec[find_group(output_spec, key, "VecNormV2")][key]
        zeros = self._float(spec.zero())
        loc.set(key, zeros)
        var.set(key, zeros.clone())
        count.set(key, torch.zeros(zeros.shape, dtype=torch.int64, device=zeros.device))

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.stateful:
            return self._stateful(next_tensordict)
        return self._stateless(tensordict, next_tensordict)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if self.stateful:
            return self._stateful(tensordict_reset)
        out = self._stateless(None, tensordict_reset)
        mask = None if tensordict is None else tensordict.get(RESET, None)
        if mask is not None and tensordict.get(self._stat_keys()[0], None) is not None:
            # Sub-envs that were not reset keep the statistics they carried.
            keep = ~mask.reshape(tensordict_reset.batch_size)
            for name in self._stat_keys():
                fresh, old = out.get(name), tensordict.get(name)
                out.set(name, _where(keep, old, fresh))
        return out

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.stateful:
            raise RuntimeError(
                "VecNormV2: a stateless VecNormV2 normalises inside an env only (its statistics "
                "come from the step's input); use stateful=True to normalise a TensorDict."
            )
        self._require_stats("forward")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(in_key, None)
            if value is not None:
                tensordict.set(
                    out_key,
                    self._normalize(
                        value,
                        self._loc.get(in_key),
                        self._var.get(in_key),
                        self._count.get(in_key),
                    ),
                )
        return tensordict

    def denorm(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The inverse map on a shallow copy: ``out_keys`` values times ``scale`` plus ``loc``,
        written at ``in_keys`` (stateful only).

        Raises:
            RuntimeError: stateless, or no statistics yet.
        """
        self._require_stats("denorm")
        loc, scale = self._loc_scale()
        out = tensordict.copy()
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = out.get(out_key, None)
            if value is not None:
                out.set(
                    in_key,
                    value * self._align(scale.get(in_key), value)
                    + self._align(loc.get(in_key), value),
                )
        return out

    def to_observation_norm(self) -> Transform:
        """The current normalisation as fixed :class:`~rl_envs.transforms.ObservationNorm`
        transforms (one per key, in a ``Compose`` when there are several)."""
        from rl_core import Compose
        from rl_envs.transforms.observation_norm import ObservationNorm

        self._require_stats("to_observation_norm")
        loc, scale = self._loc_scale()
        norms = [
            ObservationNorm(
                loc=loc.get(in_key).clone(),
                scale=scale.get(in_key).clone(),
                in_keys=[in_key],
                out_keys=[out_key],
                standard_normal=True,
                eps=self.eps,
            )
            for in_key, out_key in zip(self.in_keys, self.out_keys)
        ]
        return norms[0] if len(norms) == 1 else Compose(*norms)

    # ------------------------------------------------------------------ frozen mode, state
    def freeze(self) -> VecNormV2:
        """Stops updating the statistics (evaluation); returns ``self``."""
        self.frozen = True
        return self

    def unfreeze(self) -> VecNormV2:
        """Updates the statistics again; returns ``self``."""
        self.frozen = False
        return self

    def clone(self) -> VecNormV2:
        lock = self.lock
        self.__dict__["lock"] = None
        try:
            out = super().clone()
        finally:
            self.__dict__["lock"] = lock
        return out  # type: ignore[return-value]

    def frozen_copy(self) -> VecNormV2:
        """A frozen copy with its own (copied) statistics, for an evaluation env."""
        self._require_stats("frozen_copy")
        return self.clone().freeze()

    def _parts(self) -> tuple[tuple[str, TensorDictBase | None], ...]:
        return (("loc", self._loc), ("var", self._var), ("count", self._count))

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if not self.stateful or self._loc is None:
            return
        for part, stats in self._parts():
            for key, value in stats.items(True, True):
                name = ".".join(_as_path(key))
                destination[f"{prefix}{part}.{name}"] = value if keep_vars else value.detach()

    def _load_from_state_dict(
        self,
        state_dict: dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list,
        unexpected_keys: list,
        error_msgs: list,
    ) -> None:
        if self.stateful:
            loaded: dict[str, TensorDict] = {}
            for part in ("loc", "var", "count"):
                head = f"{prefix}{part}."
                loaded[part] = TensorDict()
                for name in [k for k in state_dict if k.startswith(head)]:
                    loaded[part].set(tuple(name[len(head) :].split(".")), state_dict.pop(name))
            if loaded["loc"].keys():
                if self._loc is None:
                    self._loc, self._var, self._count = (
                        loaded["loc"].clone(),
                        loaded["var"].clone(),
                        loaded["count"].clone(),
                    )
                else:  # statistics already there (maybe shared with workers): load in place
                    for part, stats in self._parts():
                        stats.update_(loaded[part])
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["lock"] = None
        return state

    # ------------------------------------------------------------------ specs
    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        dtype = spec.dtype if spec.dtype.is_floating_point else torch.get_default_dtype()
        return Unbounded(shape=spec.shape, dtype=dtype, device=spec.device)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        output_spec = map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "VecNormV2"
        )
        if self.stateful:
            return output_spec
        observations = output_spec[OBSERVATION_GROUP]
        for name in self._stat_keys():
            if name in observations.keys():
                raise ValueError(
                    f"VecNormV2: the env already has an entry {name!r}; a second stateless "
                    f"VecNormV2 would overwrite it. Normalise every key with one VecNormV2."
                )
            stats = Composite(shape=observations.shape, device=observations.device)
            for key in self.in_keys:
                group = find_group(output_spec, key, "VecNormV2")
                spec = self._map_spec(key, output_spec[group][key])
                if name.endswith("_count"):
                    spec = Unbounded(shape=spec.shape, dtype=torch.int64, device=spec.device)
                stats[key] = spec
            observations[name] = stats
        return output_spec

    def extra_repr(self) -> str:
        return (
            f"{super().extra_repr()}, decay={self.decay}, stateful={self.stateful}, "
            f"reduce_batch_dims={self.reduce_batch_dims}, frozen={self.frozen}"
        )


def _where(keep: torch.Tensor, old: TensorDictBase, fresh: TensorDictBase) -> TensorDictBase:
    out = fresh.clone()
    out[keep] = old[keep]
    return out


__all__ = ["VecNormV2"]
