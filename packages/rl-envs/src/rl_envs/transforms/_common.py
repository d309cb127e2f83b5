"""Helpers shared by the transform catalogue: spec look-ups, spec rebuilding, reset masks."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDictBase

from rl_core import Bounded, Categorical, Compose, Composite, TensorSpec, Transform, Unbounded
from rl_core.keys import DONE_KEYS, RESET, NestedKey

OBSERVATION_GROUP = "full_observation_spec"
REWARD_GROUP = "full_reward_spec"


def writes_no_done_flag(out_keys: list[NestedKey]) -> bool:
    """Whether none of ``out_keys`` is named like a done flag (``done``, ``terminated``,
    ``truncated``, at any level): the condition on which a transform that maps the env's
    outputs is ``fusable`` (the fused step-and-reset decides the resets from the base env's
    own flags, the generic path from the transformed ones)."""
    return not any((key if isinstance(key, str) else key[-1]) in DONE_KEYS for key in out_keys)


def maps_outputs_only(transform: Transform) -> bool:
    """The ``fusable`` rule of a transform whose step and reset only map outputs (an inverse
    path maps actions before the step): it holds unless an output is named like a done flag
    (``rl_envs.transforms._plans`` declares it with ``declare_fusable``)."""
    return writes_no_done_flag(transform.out_keys)


def leaf_keys(spec: Composite) -> list[NestedKey]:
    """Every leaf key of a Composite."""
    return list(spec.keys(include_nested=True, leaves_only=True))


def find_group(output_spec: Composite, key: NestedKey, where: str) -> str:
    """The output-spec group (observations or rewards) holding ``key``.

    Raises:
        KeyError: naming ``where`` and the keys the env has, when no group holds ``key``.
    """
    for group in (OBSERVATION_GROUP, REWARD_GROUP):
        if key in leaf_keys(output_spec[group]):
            return group
    known = leaf_keys(output_spec[OBSERVATION_GROUP]) + leaf_keys(output_spec[REWARD_GROUP])
    raise KeyError(
        f"{where}: the key {key!r} is not an observation or reward of the env below it "
        f"(it has {known}). Fix in_keys, or place the transform after the one that writes it."
    )


def map_output_leaves(
    output_spec: Composite,
    in_keys: list[NestedKey],
    out_keys: list[NestedKey],
    fn: Callable[[NestedKey, TensorSpec], TensorSpec],
    where: str,
) -> Composite:
    """Writes ``fn(in_key, spec)`` at ``out_key`` (same group) for each in/out key pair."""
    for in_key, out_key in zip(in_keys, out_keys):
        group = find_group(output_spec, in_key, where)
        leaves = output_spec[group]
        leaves[out_key] = fn(in_key, leaves[in_key])
    return output_spec


def map_spec_leaves(
    spec: TensorSpec,
    in_keys: list[NestedKey],
    out_keys: list[NestedKey],
    fn: Callable[[NestedKey, TensorSpec], TensorSpec],
    where: str,
) -> TensorSpec:
    """A transform's ``transform_observation_spec``/``transform_reward_spec`` on a spec given
    directly (TorchRL's form, outside an env): a Composite gets ``fn(in_key, spec[in_key])``
    at ``out_key`` for each ``in_keys`` entry it holds; a single spec is the one entry of a
    transform with one in-key and is returned mapped.

    Raises:
        TypeError: ``spec`` is not a TensorSpec.
        ValueError: a single spec given to a transform of several in-keys.
    """
    if isinstance(spec, Composite):
        present = set(leaf_keys(spec))
        for in_key, out_key in zip(in_keys, out_keys):
            if in_key in present:
                spec[out_key] = fn(in_key, spec[in_key])
        return spec
    if not isinstance(spec, TensorSpec):
        raise TypeError(
            f"{where}: expected a TensorSpec or a Composite, got {type(spec).__name__}."
        )
    if len(in_keys) != 1:
        raise ValueError(
            f"{where}: a single spec stands for one entry, but the transform reads "
            f"{len(in_keys)} in_keys {in_keys}; pass a Composite holding them."
        )
    return fn(in_keys[0], spec)


def continuous_like(
    spec: TensorSpec,
    *,
    low: torch.Tensor | float | None = None,
    high: torch.Tensor | float | None = None,
    shape: torch.Size | tuple[int, ...] | None = None,
    dtype: torch.dtype | None = None,
) -> TensorSpec:
    """A Bounded spec (when ``low`` and ``high`` are given) or an Unbounded one, on the device
    of ``spec``, with its shape and dtype unless overridden."""
    shape = spec.shape if shape is None else torch.Size(shape)
    dtype = spec.dtype if dtype is None else dtype
    if low is not None and high is not None:
        return Bounded(low, high, shape=shape, device=spec.device, dtype=dtype)
    return Unbounded(shape=shape, device=spec.device, dtype=dtype)


def bounds(spec: TensorSpec) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(low, high)`` of a Bounded spec with finite bounds, else ``None``."""
    if isinstance(spec, Bounded):
        low, high = spec.low, spec.high
        if bool(low.isfinite().all() & high.isfinite().all()):
            return low, high
    return None


def with_dtype(spec: TensorSpec, dtype: torch.dtype, where: str) -> TensorSpec:
    """The same spec with values of another dtype (Bounded, Unbounded or Categorical)."""
    if isinstance(spec, Bounded):
        if dtype.is_floating_point or not spec.dtype.is_floating_point:
            low, high = spec.low.to(dtype), spec.high.to(dtype)
        else:
            low, high = spec.low.ceil().to(dtype), spec.high.floor().to(dtype)
        return Bounded(low, high, shape=spec.shape, device=spec.device, dtype=dtype)
    if isinstance(spec, Unbounded):
        return Unbounded(shape=spec.shape, device=spec.device, dtype=dtype)
    if isinstance(spec, Categorical) and not dtype.is_floating_point and dtype is not torch.bool:
        return Categorical(spec.n, shape=spec.shape, device=spec.device, dtype=dtype)
    raise TypeError(
        f"{where}: cannot show a {type(spec).__name__} spec of dtype {spec.dtype} as {dtype}; "
        f"expected a Bounded, Unbounded or (to an integer dtype) Categorical spec."
    )


def reset_weight(
    tensordict: TensorDictBase | None, reference: torch.Tensor, batch_ndim: int
) -> torch.Tensor | None:
    """The root ``"_reset"`` mask of a partial reset as a float weight shaped
    ``batch + (1,) * event_ndim`` of ``reference``; ``None`` for a full reset."""
    if tensordict is None:
        return None
    mask = tensordict.get(RESET, None)
    if mask is None:
        return None
    mask = mask.reshape(*mask.shape[:batch_ndim], -1).any(-1)
    extra = reference.ndim - batch_ndim
    return mask.reshape(*mask.shape, *([1] * extra)).to(reference.dtype)


def check_negative_dim(
    dim: int, where: str, arg: str = "dim", *, allow_positive_dim: bool = False
) -> int:
    """Event dims are counted from the end, so they do not depend on the batch size; with
    ``allow_positive_dim`` a dim ``>= 0`` is accepted too (see :func:`feature_dim`)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{where}: expected an int {arg}, got {type(dim).__name__} {dim!r}.")
    if dim >= 0 and not allow_positive_dim:
        raise ValueError(
            f"{where}: expected a negative {arg} (counted from the last dim, so that it means "
            f"the same for any batch size), got {dim!r}. Pass allow_positive_dim=True to count "
            f"it from the first dim after the env's batch dims."
        )
    return dim


def feature_dim(transform: Transform, dim: int) -> int:
    """The tensor dim that ``dim`` names for ``transform``: a negative dim as it is; a dim
    ``>= 0`` is the ``dim``-th dim after the batch dims of the env the transform sits in
    (``len(parent.batch_size) + dim``), or the tensor's own dim ``dim`` outside an env."""
    if dim < 0:
        return dim
    parent = transform.parent
    return dim if parent is None else len(parent.batch_size) + dim


def map_action_leaves(
    input_spec: Composite,
    in_keys_inv: list[NestedKey],
    out_keys_inv: list[NestedKey],
    fn: Callable[[NestedKey, TensorSpec], TensorSpec],
    where: str,
) -> Composite:
    """Shows the action (or state) ``in_key`` of the env below as ``fn(in_key, spec)`` at
    ``out_key``: the spec of what the policy writes."""
    for in_key, out_key in zip(in_keys_inv, out_keys_inv):
        for group in ("full_action_spec", "full_state_spec"):
            leaves = input_spec[group]
            if in_key in leaf_keys(leaves):
                new = fn(in_key, leaves[in_key])
                if out_key != in_key:
                    del leaves[in_key]
                leaves[out_key] = new
                break
        else:
            known = leaf_keys(input_spec["full_action_spec"])
            raise KeyError(
                f"{where}: in_keys_inv entry {in_key!r} is not an action of the env below it "
                f"(it has {known})."
            )
    return input_spec


def clipped_spec(spec: TensorSpec, low: float | None, high: float | None) -> TensorSpec:
    """The spec of ``value.clamp(low, high)`` for values in ``spec`` (clamp is monotone, so the
    bounds are the clamped bounds)."""
    if isinstance(spec, Bounded):
        old_low, old_high = spec.low, spec.high
    else:
        old_low = torch.full(spec.shape, -torch.inf, device=spec.device)
        old_high = torch.full(spec.shape, torch.inf, device=spec.device)
    dtype = spec.dtype if spec.dtype.is_floating_point else torch.float32
    new_low, new_high = old_low.to(dtype).clamp(low, high), old_high.to(dtype).clamp(low, high)
    return Bounded(new_low, new_high, shape=spec.shape, device=spec.device, dtype=spec.dtype)


def parent_input(transform: Transform, tensordict: TensorDictBase) -> TensorDictBase:
    """``tensordict`` (what the policy wrote) as the env below ``transform`` reads it: a
    shallow copy with the inverse paths of the transforms after ``transform`` applied."""
    inner = tensordict.copy()
    container = transform.container
    if isinstance(container, Compose):
        index = next(i for i, t in enumerate(container.transforms) if t is transform)
        for later in reversed(list(container.transforms)[index + 1 :]):
            inner = later._inv_call(inner)
    return inner


def episode_windows(
    tensordict: TensorDictBase, n: int, done_key: NestedKey, where: str
) -> tuple[int, list[tuple[torch.Tensor, torch.Tensor]]]:
    """For a trajectory (last batch dim = time), the indices of the ``n`` steps ending at each
    step, oldest first, clamped to the step's episode start; with a mask of the indices that
    lie inside the episode. An episode starts at index 0 and after each step with
    ``done_key`` set.

    Returns:
        ``(time_dim, [(index, valid), ...])``, each shaped like the batch.
    """
    if tensordict.batch_dims == 0:
        raise ValueError(
            f"{where}: a TensorDict outside an env needs a time dim (its last batch dim); got "
            f"batch size ()."
        )
    shape = tensordict.batch_size
    time_dim = len(shape) - 1
    length = shape[time_dim]
    start = torch.zeros(shape, dtype=torch.bool, device=tensordict.device)
    start.select(time_dim, 0).fill_(True)
    done = tensordict.get(done_key, None)
    if done is not None:
        done = done.reshape(*shape, -1).any(-1)
        start.narrow(time_dim, 1, length - 1).copy_(done.narrow(time_dim, 0, length - 1))
    steps = torch.arange(length, device=start.device).expand_as(start)
    first = torch.where(start, steps, torch.zeros_like(steps)).cummax(time_dim).values
    windows = []
    for back in range(n - 1, -1, -1):
        windows.append((torch.maximum(steps - back, first), steps - back >= first))
    return time_dim, windows


def gather_steps(values: torch.Tensor, index: torch.Tensor, time_dim: int) -> torch.Tensor:
    """``values`` (batch dims first) taken at the time ``index`` of each batch element."""
    extra = values.ndim - index.ndim
    return values.gather(time_dim, index.reshape(*index.shape, *([1] * extra)).expand_as(values))
