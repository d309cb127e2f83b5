"""SerialEnv: several envs stepped one after the other in this process, seen as one batched env."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core.envs import EnvBase, StepPlan
from rl_envs._accel.seam import GymGroupSteps, gym_vector_group
from rl_envs.batched._factories import as_env_factories
from rl_envs.batched._meta import EnvMetadata
from rl_envs.batched._serial_steps import SerialLayout, SubEnvSteps
from rl_envs.batched.base import BatchedEnvBase


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
        layout = SerialLayout(
            num_workers,
            self.batch_size,
            meta_data.batch_size,
            self.device,
            self.sub_device,
            {name: self._paths(name) for name in ("inputs", "masks", "reset_outputs")},
        )
        group = gym_vector_group(envs, self) if vectorize else None
        steps = SubEnvSteps(envs, layout) if group is None else GymGroupSteps(envs, layout, group)
        self.__dict__["_envs"] = envs
        # How the sub-envs step, chosen once: one by one, or together as a vector group.
        self.__dict__["_steps"] = steps

    @property
    def vectorized(self) -> bool:
        """Whether the sub-envs step together through one gymnasium ``SyncVectorEnv``."""
        return self._steps.vectorized

    # ------------------------------------------------------------------ contract
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._steps.step(tensordict)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        return self._steps.reset(tensordict, **kwargs)

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, then resets the sub-envs that are done, as :meth:`EnvBase.step_and_maybe_reset`.

        Only the finished sub-envs are touched: sub-envs stepping one by one are each reset
        directly (an unbatched sub-env fully, a batched one through its own ``"_reset"``
        masks) and their rows of the next root replaced, without the batch-wide mask merge of
        a partial ``reset``; a vector group resets them with one masked reset.
        """
        return self._steps.step_and_maybe_reset(self, tensordict)

    def _make_step_plan(self) -> StepPlan:
        """The vector group's routes (fused step-and-reset, random rollouts), where the
        sub-envs step together; see :class:`~rl_core.envs.StepPlan`."""
        return SerialStepPlan(self)

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


class SerialStepPlan(StepPlan):
    """The step plan of a :class:`SerialEnv`: its vector group's fused step-and-reset and
    random rollouts (``rl_envs._accel.gym_group``); sub-envs stepping one by one have none.

    Args:
        env: the SerialEnv.
    """

    def __init__(self, env: SerialEnv) -> None:
        super().__init__(env)
        self.steps = env._steps

    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        return self.steps.step_and_reset(tensordict)

    def merge_reset_rows(self, next_root: TensorDictBase, pending: Any) -> TensorDictBase:
        return self.steps.merge_reset_rows(next_root, pending)

    def random_rollout(
        self,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        stop = {
            "break_when_any_done": break_when_any_done,
            "break_when_all_done": break_when_all_done,
        }
        return self.steps.random_rollout(start, max_steps, **stop)


__all__ = ["SerialEnv"]
