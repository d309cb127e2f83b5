"""The rollout loop and the trajectory writer behind ``EnvBase.rollout``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from rl_core.envs._flags import any_set
from rl_core.envs._spec_checks import SWITCH
from rl_core.fast_td import entries, get_leaf, leaf_paths
from rl_core.keys import DONE, NEXT, TRUNCATED

if TYPE_CHECKING:
    from rl_core.envs.base import EnvBase

# Steps kept before they are stacked into the preallocated buffer, one op per entry.
_CHUNK = 64
# Leaves of at most this many elements per step are stacked into time-major blocks first.
_MAX_BLOCK_NUMEL = 4096


def _level_sizes(td: TensorDictBase) -> list[tuple[tuple[str, ...], int]]:
    sizes: list[tuple[tuple[str, ...], int]] = []

    def visit(node: TensorDict, prefix: tuple[str, ...]) -> None:
        sizes.append((prefix, len(entries(node))))
        for name, value in entries(node).items():
            if type(value) is TensorDict:
                visit(value, (*prefix, name))

    visit(td, ())
    return sizes


class _TrajectoryWriter:
    """Fills a ``[*batch, T]`` TensorDict allocated from the first step, ``_CHUNK`` steps at a time.

    Steps whose structure differs from the first one (a key more or less, another shape) switch
    the writer to a lazy stack of every step, so no entry is lost.
    """

    def __init__(self, first: TensorDictBase, max_steps: int) -> None:
        self.batch_ndim = first.batch_dims
        self.max_steps = max_steps
        self.written = 0
        self.pending: list[TensorDictBase] = []
        self.fallback: list[TensorDictBase] | None = None
        self.paths = leaf_paths(first)
        if self.paths is None or first.is_locked:
            # Lazy stacks, non-tensor payloads: keep each step and stack once at the end.
            self.fallback = []
            return
        self.sizes = _level_sizes(first)
        # Each level's parent level and name, and each leaf's level and name: a flush walks
        # every step's entry dicts once.
        index = {level: i for i, (level, _) in enumerate(self.sizes)}
        self.level_links = [(index[level[:-1]], level[-1], n) for level, n in self.sizes[1:]]
        self.slots = [(index[path[:-1]], path[-1]) for path in self.paths]
        batch = tuple(first.batch_size)
        self.buffer = first.apply(
            lambda x: torch.empty(
                (*batch, max_steps, *x.shape[len(batch) :]), dtype=x.dtype, device=x.device
            ),
            batch_size=[*batch, max_steps],
        )
        self.buffers = [get_leaf(self.buffer, path) for path in self.paths]
        # With batch dims, steps are stacked along dim 0 of time-major blocks (a contiguous
        # write, several times faster than into the strided ``[*batch, T]`` view) and copied
        # into the buffer when the trajectory is read; without, straight into the buffer.
        # Large leaves (images) go straight into the buffer: no second copy of them is kept.
        self.blocks = [
            torch.empty((max_steps, *x.shape), dtype=x.dtype, device=x.device)
            if self.batch_ndim and x.numel() <= _MAX_BLOCK_NUMEL
            else None
            for x in (get_leaf(first, path) for path in self.paths)
        ]
        self.copied = 0

    def append(self, td: TensorDictBase) -> None:
        # The loop hands over a fresh TensorDict each step (step_mdp builds a new root), so
        # keeping the reference is safe without a copy.
        if self.fallback is not None:
            self.fallback.append(td)
            return
        self.pending.append(td)
        if len(self.pending) == _CHUNK:
            self._flush()

    def _levels(self, td: TensorDictBase) -> list[dict] | None:
        """The entry dicts of ``td``'s levels (as in ``sizes``); None if its structure differs."""
        try:
            levels = [entries(td)]
            if len(levels[0]) != self.sizes[0][1]:
                return None
            for parent, name, n in self.level_links:
                level = entries(levels[parent][name])
                if len(level) != n:
                    return None
                levels.append(level)
        except (KeyError, AttributeError):
            return None
        return levels

    def _flush(self) -> None:
        pending, self.pending = self.pending, []
        if not pending:
            return
        steps = [self._levels(td) for td in pending]
        if any(levels is None for levels in steps):
            self._switch_to_fallback(pending)
            return
        start, dim = self.written, self.batch_ndim
        try:
            columns = [[levels[i][name] for levels in steps] for i, name in self.slots]
            for block, buffer, column in zip(self.blocks, self.buffers, columns):
                if block is None:
                    torch.stack(column, dim, out=buffer.narrow(dim, start, len(pending)))
                else:
                    torch.stack(column, 0, out=block.narrow(0, start, len(pending)))
        except (KeyError, AttributeError, RuntimeError):
            self._switch_to_fallback(pending)
            return
        self.written += len(pending)

    def _copy_blocks(self) -> None:
        """Copies the steps stacked into the time-major blocks since the last copy into the
        buffer."""
        start, n, dim = self.copied, self.written - self.copied, self.batch_ndim
        if dim and n:
            for block, buffer in zip(self.blocks, self.buffers):
                if block is not None:
                    buffer.narrow(dim, start, n).copy_(block.narrow(0, start, n).movedim(0, dim))
        self.copied = self.written

    def _switch_to_fallback(self, pending: list[TensorDictBase]) -> None:
        self._copy_blocks()
        done = self.buffer[(slice(None),) * self.batch_ndim + (slice(0, self.written),)]
        self.fallback = [*done.unbind(self.batch_ndim), *pending]

    def result(self, return_contiguous: bool) -> TensorDictBase:
        self._flush()
        if self.fallback is not None:
            stacked = LazyStackedTensorDict.lazy_stack(self.fallback, self.batch_ndim)
            # A dense copy keeps only the entries every step shares: densify only when that
            # is all of them, so no entry is lost.
            if return_contiguous and _same_keys(self.fallback):
                try:
                    return stacked.contiguous()
                except RuntimeError:
                    return stacked
            return stacked
        self._copy_blocks()
        index = (slice(None),) * self.batch_ndim + (slice(0, self.written),)
        return self.buffer if self.written == self.max_steps else self.buffer[index]


def _same_keys(tds: list[TensorDictBase]) -> bool:
    reference = set(tds[0].keys(include_nested=True, leaves_only=True))
    return all(set(td.keys(include_nested=True, leaves_only=True)) == reference for td in tds[1:])


def _done_per_sub_env(td: TensorDictBase, done_paths: list[tuple[str, ...]]) -> torch.Tensor:
    """One flag per sub-env (shape ``env.batch_size``): any done flag of it is set."""
    flags = None
    batch_ndim = td.batch_dims
    for path in done_paths:
        value = get_leaf(td, path)
        value = value.reshape(*value.shape[:batch_ndim], -1).any(-1)
        flags = value if flags is None else flags | value
    return flags


def _any_done(td: TensorDictBase, done_paths: list[tuple[str, ...]]) -> bool:
    return any(any_set(get_leaf(td, path)) for path in done_paths)


def rollout(
    env: EnvBase,
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
    """Runs ``policy`` in ``env`` for up to ``max_steps`` steps and returns the trajectory.

    The output, shaped ``[*env.batch_size, T]``, is allocated on the first step and filled in
    place. Stopping rules: with ``break_when_any_done`` (the default) the rollout stops after
    the first step at which any sub-env is done. Otherwise finished sub-envs are reset and the
    rollout goes on; with ``break_when_all_done`` it stops after the step at which every
    sub-env has finished at least one episode, else after ``max_steps``.

    Args:
        env: the environment.
        max_steps: the most steps to take (>= 1).
        policy: reads the root TensorDict and writes the action(s); ``None`` takes random
            actions from the action spec (through the env's ``_random_rollout`` when it has
            one: a loop without a TensorDict per step).
        callback: called as ``callback(env, transition)`` after each step.
        auto_reset: reset the env first; else ``tensordict`` is the starting point.
        auto_cast_to_device: move data to the policy's device (its first parameter's) before
            calling it and back to the env device after.
        break_when_any_done: stop when any sub-env is done.
        break_when_all_done: stop once every sub-env has finished an episode.
        return_contiguous: stack heterogeneous steps into a contiguous TensorDict when possible
            (a lazy stack otherwise).
        tensordict: the starting TensorDict when ``auto_reset`` is False; with ``auto_reset``,
            it is passed to ``reset`` (reset arguments, carried entries).
        set_truncated: mark the last step ``truncated`` (and ``done``) when the rollout stops on
            ``max_steps``; ``terminated`` is untouched.

    Returns:
        The trajectory: a TensorDict of batch size ``[*env.batch_size, T]``, ``T <= max_steps``.

    Raises:
        ValueError: ``max_steps`` < 1, or neither ``auto_reset`` nor ``tensordict``.
    """
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(
            f"{type(env).__name__}.rollout: expected max_steps >= 1, got {max_steps!r}."
        )
    if auto_reset:
        td = env.reset(tensordict)
    elif tensordict is None:
        raise ValueError(
            f"{type(env).__name__}.rollout: with auto_reset=False, pass the starting TensorDict "
            f"as tensordict=...; got none."
        )
    else:
        td = tensordict
    if policy is None:
        if callback is None and not SWITCH.enabled:
            out = env._random_rollout(
                td,
                max_steps,
                break_when_any_done=break_when_any_done,
                break_when_all_done=break_when_all_done,
            )
            if out is not None:
                if set_truncated:
                    _mark_last_truncated(env, out)
                return out
        policy = env.rand_action
    policy_device = _policy_device(policy) if auto_cast_to_device else None
    env_device = env.device
    # `step` completes the flags, so `done` (one per level) says it all.
    done_paths = [(NEXT, *done_path) for done_path, _ in env._done_paths()]
    mdp_plan = env.step_mdp_plan()
    writer: _TrajectoryWriter | None = None
    ever_done: torch.Tensor | None = None
    for _ in range(max_steps):
        if policy_device is not None:
            td = policy(td.to(policy_device, non_blocking=True))
            if env_device is not None:
                td = td.to(env_device, non_blocking=True)
        else:
            td = policy(td)
        if break_when_any_done:
            td = env.step(td)
            next_root = None
        else:
            td, next_root = env.step_and_maybe_reset(td)
        if writer is None:
            writer = _TrajectoryWriter(td, max_steps)
        writer.append(td)
        if callback is not None:
            callback(env, td)
        if break_when_any_done:
            if _any_done(td, done_paths):
                break
            td = mdp_plan(td)
        else:
            if break_when_all_done:
                done = _done_per_sub_env(td, done_paths)
                ever_done = done if ever_done is None else ever_done | done
                if bool(ever_done.all()):
                    break
            td = next_root
    out = writer.result(return_contiguous)
    if set_truncated:
        _mark_last_truncated(env, out)
    return out


def _mark_last_truncated(env: EnvBase, out: TensorDictBase) -> None:
    """Sub-envs not done at the last step are cut there: truncated (and done) become True."""
    last = (slice(None),) * len(env.batch_size) + (-1,)
    for level in env._done_levels():
        done_key, trunc_key = (NEXT, *level, DONE), (NEXT, *level, TRUNCATED)
        done, truncated = out.get(done_key).clone(), out.get(trunc_key).clone()
        cut = ~done[last]
        truncated[last] |= cut
        done[last] |= cut
        out.set(done_key, done)
        out.set(trunc_key, truncated)


def _policy_device(policy: Callable) -> torch.device | None:
    parameters = getattr(policy, "parameters", None)
    if parameters is None:
        return None
    for parameter in parameters():
        return parameter.device
    return None
