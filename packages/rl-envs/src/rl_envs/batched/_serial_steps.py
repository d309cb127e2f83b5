"""How a SerialEnv steps and resets its sub-envs: one strategy, chosen when the env is built.

:class:`SubEnvSteps` steps the sub-envs one after the other (any env). The vector group of
unbatched gymnasium sub-envs (``rl_envs._accel.gym_group.GymGroupSteps``, in the speed folder,
answering the same calls) steps them together through one
``SyncVectorEnv``. ``SerialEnv`` holds one of the two and hands it every call, so that it has
no per-call branch on how its sub-envs step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from tensordict import TensorDictBase

from rl_core._accel.td_access import TreeBuilder, entries_view, get_leaf, is_plain, leaf_paths
from rl_core.envs import EnvBase
from rl_core.keys import DONE
from rl_envs.batched._meta import Path, rows_to_reset

if TYPE_CHECKING:
    from rl_envs.libs._gym_stepper import GymNumpyStepper


class SerialLayout(NamedTuple):
    """What a strategy knows of its SerialEnv, fixed when the env is built.

    ``paths`` holds the entry paths ``"inputs"`` (what a sub-env may read in ``_step``),
    ``"masks"`` (the ``"_reset"`` masks) and ``"reset_outputs"``.
    """

    num_workers: int
    batch_size: torch.Size
    sub_batch: torch.Size
    device: torch.device | None
    sub_device: torch.device | None
    paths: dict[str, list[Path]]

    def to_sub(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``tensordict`` on the sub-envs' device."""
        device = self.sub_device
        if device is not None and tensordict.device != device:
            return tensordict.to(device)
        return tensordict

    def to_self(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``tensordict`` (on the sub-envs' device) on the batched env's device."""
        if self.device is not None and self.device != self.sub_device:
            return tensordict.to(self.device)
        return tensordict


class SerialSteps(ABC):
    """A SerialEnv's way of stepping and resetting its sub-envs.

    Args:
        envs: the sub-envs.
        layout: the batched env's batch size, devices and entry paths.
    """

    #: Whether the sub-envs step together through one gymnasium vector env.
    vectorized = False

    def __init__(self, envs: Sequence[EnvBase], layout: SerialLayout) -> None:
        self.envs = envs
        self.layout = layout
        self._builders: dict[tuple[Path, ...], TreeBuilder] = {}

    def builder(self, paths: tuple[Path, ...]) -> TreeBuilder:
        """A (cached) builder of TensorDicts holding the entries ``paths``."""
        builder = self._builders.get(paths)
        if builder is None:
            builder = self._builders[paths] = TreeBuilder(paths)
        return builder

    @abstractmethod
    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``SerialEnv._step``."""

    @abstractmethod
    def reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """``SerialEnv._reset``."""

    @abstractmethod
    def step_and_maybe_reset(
        self, env: EnvBase, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """``SerialEnv.step_and_maybe_reset`` of ``env`` (the SerialEnv)."""

    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        """The fused step-and-reset hook (``EnvBase._step_and_reset``); ``None``: none."""
        return None

    def merge_reset_rows(self, next_root: TensorDictBase, pending: Any) -> TensorDictBase:
        """``EnvBase._merge_reset_rows``, for what :meth:`step_and_reset` returned."""
        raise NotImplementedError("SerialEnv: this strategy has no fused step-and-reset.")

    def random_rollout(
        self, start: TensorDictBase, max_steps: int, **stop: bool
    ) -> TensorDictBase | None:
        """``EnvBase._random_rollout`` (``stop``: its ``break_when_*`` options); ``None``: the
        generic loop."""
        return None

    def numpy_stepper(self) -> GymNumpyStepper | None:
        """The gymnasium stepper that steps all sub-envs on numpy rows, or ``None``."""
        return None


class SubEnvSteps(SerialSteps):
    """Steps the sub-envs one after the other, stacking their outputs (one stack per entry)."""

    def __init__(self, envs: Sequence[EnvBase], layout: SerialLayout) -> None:
        super().__init__(envs, layout)
        # (entry count of a sub-env output, its leaf paths, their builder), or None.
        self._step_layout: tuple[int, list[Path], TreeBuilder] | None = None

    def _to_sub(self, value: torch.Tensor) -> torch.Tensor:
        device = self.layout.sub_device
        if device is not None and value.device != device:
            return value.to(device)
        return value

    def _stack(self, outs: list[TensorDictBase]) -> TensorDictBase:
        """Stacks sub-env outputs along a new leading dim, one ``torch.stack`` per entry."""
        layout = self.layout
        first = outs[0]
        step_layout = self._step_layout
        size = len(entries_view(first)) if is_plain(first) else -1
        if step_layout is None or step_layout[0] != size:
            paths = leaf_paths(first)
            if paths is None:
                return layout.to_self(torch.stack(outs, 0))
            step_layout = (size, paths, self.builder(tuple(paths)))
            self._step_layout = step_layout
        _, paths, builder = step_layout
        try:
            values = []
            views = None
            for path in paths:
                if len(path) == 1:
                    name = path[0]
                    if views is None:
                        views = [entries_view(out) for out in outs]
                    column = [view[name] for view in views]
                else:
                    column = [get_leaf(out, path, None) for out in outs]
                values.append(torch.stack(column))
        except (KeyError, AttributeError, TypeError, RuntimeError):
            # Sub-envs wrote different entries or shapes: let tensordict stack (and explain).
            self._step_layout = None
            return layout.to_self(torch.stack(outs, 0))
        stacked = builder.build(values, layout.batch_size, layout.sub_device)
        return layout.to_self(stacked)

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        layout = self.layout
        paths, columns = [], []
        for path in layout.paths["inputs"]:
            value = get_leaf(tensordict, path, None)
            if value is not None:
                paths.append(path)
                columns.append(self._to_sub(value).unbind(0))
        builder = self.builder(tuple(paths))
        sub_batch, sub_device = layout.sub_batch, layout.sub_device
        outs = []
        for i, env in enumerate(self.envs):
            sub_td = builder.build([column[i] for column in columns], sub_batch, sub_device)
            outs.append(env._step(sub_td))
        return self._stack(outs)

    def step_and_maybe_reset(
        self, env: EnvBase, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        # Only the finished sub-envs are touched: each is reset directly and its rows of the
        # next root replaced, without the batch-wide mask merge of a partial reset.
        layout = self.layout
        masks = layout.paths["masks"]
        tensordict = env.step(tensordict)
        next_root = env.step_mdp_plan()(tensordict)
        done_rows = None
        for path in masks:
            done = get_leaf(next_root, (*path[:-1], DONE), None)
            rows = done.reshape(layout.num_workers, -1).any(-1)
            done_rows = rows if done_rows is None else done_rows | rows
        if done_rows is None or not bool(done_rows.any()):
            return tensordict, next_root
        indices = done_rows.nonzero().flatten().tolist()
        sub_root = layout.to_sub(next_root)
        fresh = {}
        for i in indices:
            sub_env = self.envs[i]
            if sub_env.batch_size:
                row = sub_root[i]
                for path in masks:
                    row.set(path, get_leaf(row, (*path[:-1], DONE), None).clone())
                fresh[i] = sub_env.reset(row)
            else:
                fresh[i] = sub_env.reset()
        index = torch.tensor(indices, device=layout.sub_device)
        paths, values = [], []
        for path in layout.paths["reset_outputs"]:
            old = get_leaf(sub_root, path, None)
            if old is None:
                continue
            value = old.clone()
            value[index] = torch.stack([fresh[i].get(path) for i in indices])
            paths.append(path)
            values.append(value)
        rows_td = self.builder(tuple(paths)).build(values, layout.batch_size, layout.sub_device)
        next_root.update(layout.to_self(rows_td))
        return tensordict, next_root

    def reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        layout, envs = self.layout, self.envs
        rows = None
        if tensordict is not None:
            masks = [get_leaf(tensordict, path, None) for path in layout.paths["masks"]]
            rows = rows_to_reset(masks, layout.num_workers)
        if rows is None or bool(rows.all()):
            if tensordict is None:
                outs = [env.reset(**kwargs) for env in envs]
            else:
                sub = layout.to_sub(tensordict)
                outs = [env.reset(sub[i], **kwargs) for i, env in enumerate(envs)]
            return self._stack_reset(outs)
        sub = layout.to_sub(tensordict)
        fresh = {i: envs[i].reset(sub[i], **kwargs) for i in rows.nonzero().flatten().tolist()}
        return self._merge_rows(fresh, sub)

    def _stack_reset(self, outs: list[TensorDictBase]) -> TensorDictBase:
        layout = self.layout
        paths = leaf_paths(outs[0])
        if paths is None:
            return layout.to_self(torch.stack(outs, 0))
        try:
            values = [torch.stack([get_leaf(out, path, None) for out in outs]) for path in paths]
        except (TypeError, RuntimeError):
            return layout.to_self(torch.stack(outs, 0))
        builder = self.builder(tuple(paths))
        return layout.to_self(builder.build(values, layout.batch_size, layout.sub_device))

    def _merge_rows(
        self, fresh: dict[int, TensorDictBase], previous: TensorDictBase
    ) -> TensorDictBase:
        """Reset outputs: rows of the sub-envs reset from ``fresh``, the others from ``previous``.

        The other rows are ignored by ``EnvBase.reset`` (it keeps the previous values there);
        they are filled so that the output has the full batch size.
        """
        layout = self.layout
        values, paths = [], []
        for path in layout.paths["reset_outputs"]:
            old = get_leaf(previous, path, None)
            rows = []
            for i in range(layout.num_workers):
                row = fresh[i].get(path, None) if i in fresh else None
                if row is None and old is not None:
                    row = old[i]
                rows.append(row)
            template = next((row for row in rows if row is not None), None)
            if template is None:
                continue
            rows = [torch.zeros_like(template) if row is None else row for row in rows]
            paths.append(path)
            values.append(torch.stack(rows))
        builder = self.builder(tuple(paths))
        return layout.to_self(builder.build(values, layout.batch_size, layout.sub_device))


__all__ = ["SerialLayout", "SerialSteps", "SubEnvSteps"]
