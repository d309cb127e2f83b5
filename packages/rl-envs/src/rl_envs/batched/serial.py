"""SerialEnv: several envs stepped one after the other in this process, seen as one batched env."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core.envs import EnvBase
from rl_core.fast_td import TreeBuilder, entries, get_leaf, is_plain, leaf_paths
from rl_core.keys import DONE
from rl_envs.batched._gym_group import gym_vector_group
from rl_envs.batched._meta import EnvMetadata, Path, as_env_factories
from rl_envs.batched.base import BatchedEnvBase
from rl_envs.libs._gym_stepper import GymNumpyStepper


class SerialEnv(BatchedEnvBase):
    """Runs ``num_workers`` envs in this process, one after the other, as one env.

    The batch size is ``[num_workers, *sub_env.batch_size]`` and the specs are the sub-env
    specs expanded along the new leading dim. Each step hands every sub-env its rows of the
    observations, actions and states, calls its ``_step``, and stacks the results (one
    ``torch.stack`` per entry). A partial reset (``"_reset"`` masks) resets only the sub-envs
    with a set mask row. ``set_seed(seed)`` gives sub-env ``i`` the seed ``seed + i`` (for
    unbatched sub-envs; see :class:`BatchedEnvBase`).

    Args:
        num_workers: the number of sub-envs.
        create_env_fn: a callable returning an env (a class, a function, an
            :class:`EnvCreator`), or a list of ``num_workers`` of them; all envs must have the
            same specs, batch size and device.
        create_env_kwargs: keyword arguments for ``create_env_fn``, or a list of one dict per
            sub-env.
        device: the device of the batched env; defaults to the sub-envs' device. Data moves
            between the two when they differ.
        vectorize: step unbatched ``GymEnv``/``GymWrapper`` sub-envs together through one
            ``gymnasium.vector.SyncVectorEnv`` over their gymnasium envs (autoreset disabled,
            partial resets through ``reset_mask``), which converts the outputs of all sub-envs
            at once. Used only when it gives the same specs (not with info readers or pixels).
            ``False`` always steps the sub-envs one by one.

    Raises:
        ValueError: ``num_workers`` < 1, a list of the wrong length, or sub-envs whose specs
            differ (the message names the sub-env and what differs).
        TypeError: ``create_env_fn`` is not callable or does not return an env.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_envs.batched import SerialEnv
        >>> env = SerialEnv(3, CountingEnv, create_env_kwargs={"max_count": 4})
        >>> env.batch_size
        torch.Size([3])
        >>> env.set_seed(0)
        3
        >>> traj = env.rollout(10, break_when_any_done=False)
        >>> traj.batch_size
        torch.Size([3, 10])
        >>> env.close()
    """

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[..., EnvBase] | Sequence[Callable[..., EnvBase]],
        *,
        create_env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        device: torch.device | str | int | None = None,
        vectorize: bool = True,
    ) -> None:
        factories = as_env_factories(num_workers, create_env_fn, create_env_kwargs, "SerialEnv")
        envs: list[EnvBase] = []
        try:
            for factory in factories:
                envs.append(factory())
            meta_data = EnvMetadata.from_env(envs[0])
            for i, env in enumerate(envs[1:], start=1):
                difference = meta_data.difference(EnvMetadata.from_env(env))
                if difference is not None:
                    raise ValueError(
                        f"SerialEnv: sub-env {i} ({type(env).__name__}) has {difference}, unlike "
                        f"sub-env 0 ({meta_data.env_type}). All sub-envs must have the same "
                        f"specs, batch size and device."
                    )
        except BaseException:
            for env in envs:
                env.close()
            raise
        super().__init__(num_workers, meta_data, device=device)
        self.__dict__["_envs"] = envs
        self.__dict__["_builders"] = {}
        self.__dict__["_step_layout"] = None
        self.__dict__["_group"] = gym_vector_group(envs, self) if vectorize else None

    @property
    def vectorized(self) -> bool:
        """Whether the sub-envs step together through one gymnasium ``SyncVectorEnv``."""
        return self._group is not None

    def numpy_stepper(self) -> GymNumpyStepper | None:
        """The gymnasium stepper of the vector group (see :meth:`GymWrapper.numpy_stepper`),
        for paths that step it on numpy rows; ``None`` when the sub-envs step one by one or
        the outputs move to another device."""
        if self._group is None or self.device != self.sub_device:
            return None
        return self._group.numpy_stepper()

    # ------------------------------------------------------------------ helpers
    def _builder(self, paths: tuple[Path, ...]) -> TreeBuilder:
        builder = self._builders.get(paths)
        if builder is None:
            builder = self._builders[paths] = TreeBuilder(paths)
        return builder

    def _to_sub(self, value: torch.Tensor) -> torch.Tensor:
        device = self.sub_device
        if device is not None and value.device != device:
            return value.to(device)
        return value

    def _to_self(self, td: TensorDictBase) -> TensorDictBase:
        if self.device is not None and self.device != self.sub_device:
            return td.to(self.device)
        return td

    def _stack(self, outs: list[TensorDictBase]) -> TensorDictBase:
        """Stacks sub-env outputs along a new leading dim, one ``torch.stack`` per entry."""
        first = outs[0]
        layout = self._step_layout
        size = len(entries(first)) if is_plain(first) else -1
        if layout is None or layout[0] != size:
            paths = leaf_paths(first)
            if paths is None:
                return self._to_self(torch.stack(outs, 0))
            layout = (size, paths, self._builder(tuple(paths)))
            self.__dict__["_step_layout"] = layout
        _, paths, builder = layout
        try:
            values = []
            for path in paths:
                if len(path) == 1:
                    name = path[0]
                    column = [entries(out)[name] for out in outs]
                else:
                    column = [get_leaf(out, path, None) for out in outs]
                values.append(torch.stack(column))
        except (KeyError, AttributeError, TypeError, RuntimeError):
            # Sub-envs wrote different entries or shapes: let tensordict stack (and explain).
            self.__dict__["_step_layout"] = None
            return self._to_self(torch.stack(outs, 0))
        stacked = builder.build(values, self.batch_size, self.sub_device)
        return self._to_self(stacked)

    # ------------------------------------------------------------------ contract
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._group is not None:
            return self._to_self(self._group._step(self._to_sub_td(tensordict)))
        paths, columns = [], []
        for path in self._paths("inputs"):
            value = get_leaf(tensordict, path, None)
            if value is not None:
                paths.append(path)
                columns.append(self._to_sub(value).unbind(0))
        builder = self._builder(tuple(paths))
        sub_batch, sub_device = self.meta_data.batch_size, self.sub_device
        outs = []
        for i, env in enumerate(self._envs):
            sub_td = builder.build([column[i] for column in columns], sub_batch, sub_device)
            outs.append(env._step(sub_td))
        return self._stack(outs)

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, then resets the sub-envs that are done, as :meth:`EnvBase.step_and_maybe_reset`.

        Only the finished sub-envs are touched: each is reset directly (an unbatched sub-env
        fully, a batched one through its own ``"_reset"`` masks) and its rows of the next root
        are replaced, without the batch-wide mask merge of a partial ``reset``.
        """
        if self._group is not None:
            # One masked reset of the vector env beats resetting sub-envs one by one.
            return super().step_and_maybe_reset(tensordict)
        tensordict = self.step(tensordict)
        next_root = self.step_mdp_plan()(tensordict)
        done_rows = None
        for path in self._paths("masks"):
            done = get_leaf(next_root, (*path[:-1], DONE), None)
            rows = done.reshape(self.num_workers, -1).any(-1)
            done_rows = rows if done_rows is None else done_rows | rows
        if done_rows is None or not bool(done_rows.any()):
            return tensordict, next_root
        indices = done_rows.nonzero().flatten().tolist()
        sub_root = self._to_sub_td(next_root)
        fresh = {}
        for i in indices:
            env = self._envs[i]
            if env.batch_size:
                row = sub_root[i]
                for path in self._paths("masks"):
                    row.set(path, get_leaf(row, (*path[:-1], DONE), None).clone())
                fresh[i] = env.reset(row)
            else:
                fresh[i] = env.reset()
        index = torch.tensor(indices, device=self.sub_device)
        paths, values = [], []
        for path in self._paths("reset_outputs"):
            old = get_leaf(sub_root, path, None)
            if old is None:
                continue
            value = old.clone()
            value[index] = torch.stack([fresh[i].get(path) for i in indices])
            paths.append(path)
            values.append(value)
        rows_td = self._builder(tuple(paths)).build(values, self.batch_size, self.sub_device)
        next_root.update(self._to_self(rows_td))
        return tensordict, next_root

    def _step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        """A vector group steps and resets its finished sub-envs in one go (its own
        ``_step_and_reset``, where that applies) when this class steps and resets as
        ``SerialEnv`` does and the outputs stay on the sub-envs' device."""
        kind = type(self)
        if (
            self._group is None
            or self.device != self.sub_device
            or kind._step is not SerialEnv._step
            or kind._reset is not SerialEnv._reset
        ):
            return None
        return self._group._step_and_reset(tensordict)

    def _merge_reset_rows(self, next_root: TensorDictBase, pending: Any) -> TensorDictBase:
        """The vector group's reset rows into ``next_root`` (see :meth:`_step_and_reset`)."""
        return self._group._merge_reset_rows(next_root, pending)

    def _random_rollout(
        self,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        """Vectorized gymnasium sub-envs take random rollouts in the group's gymnasium loop."""
        if self._group is None:
            return None
        out = self._group._random_rollout(
            self._to_sub_td(start),
            max_steps,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
        )
        return None if out is None else self._to_self(out)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        if self._group is not None:
            sub = None if tensordict is None else self._to_sub_td(tensordict)
            return self._to_self(self._group._reset(sub, **kwargs))
        envs = self._envs
        masks = []
        if tensordict is not None:
            masks = [get_leaf(tensordict, path, None) for path in self._paths("masks")]
            masks = [mask for mask in masks if mask is not None]
        rows = self._sub_rows_to_reset(masks) if masks else None
        if rows is None or bool(rows.all()):
            if tensordict is None:
                outs = [env.reset(**kwargs) for env in envs]
            else:
                sub = self._to_sub_td(tensordict)
                outs = [env.reset(sub[i], **kwargs) for i, env in enumerate(envs)]
            return self._stack_reset(outs)
        sub = self._to_sub_td(tensordict)
        fresh = {i: envs[i].reset(sub[i], **kwargs) for i in rows.nonzero().flatten().tolist()}
        return self._merge_rows(fresh, sub)

    def _to_sub_td(self, tensordict: TensorDictBase) -> TensorDictBase:
        device = self.sub_device
        if device is not None and tensordict.device != device:
            return tensordict.to(device)
        return tensordict

    def _stack_reset(self, outs: list[TensorDictBase]) -> TensorDictBase:
        paths = leaf_paths(outs[0])
        if paths is None:
            return self._to_self(torch.stack(outs, 0))
        try:
            values = [torch.stack([get_leaf(out, path, None) for out in outs]) for path in paths]
        except (TypeError, RuntimeError):
            return self._to_self(torch.stack(outs, 0))
        builder = self._builder(tuple(paths))
        return self._to_self(builder.build(values, self.batch_size, self.sub_device))

    def _merge_rows(
        self, fresh: dict[int, TensorDictBase], previous: TensorDictBase
    ) -> TensorDictBase:
        """Reset outputs: rows of the sub-envs reset from ``fresh``, the others from ``previous``.

        The other rows are ignored by ``EnvBase.reset`` (it keeps the previous values there);
        they are filled so that the output has the full batch size.
        """
        values, paths = [], []
        for path in self._paths("reset_outputs"):
            old = get_leaf(previous, path, None)
            rows = []
            for i in range(self.num_workers):
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
        builder = self._builder(tuple(paths))
        return self._to_self(builder.build(values, self.batch_size, self.sub_device))

    def _seed_sub_envs(self, seed: int | None, static_seed: bool) -> int | None:
        for env in self._envs:
            seed = env.set_seed(seed, static_seed=static_seed)
        return seed

    def close(self) -> None:
        """Closes every sub-env; calling it twice is harmless."""
        if not self.is_closed:
            for env in self._envs:
                env.close()
        super().close()


__all__ = ["SerialEnv"]
