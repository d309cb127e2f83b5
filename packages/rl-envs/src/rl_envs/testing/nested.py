"""Counting envs with nested and several keys, as TorchRL's ``torchrl.testing`` has them."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import expand_right

from rl_core import Binary, Bounded, Categorical, Composite, EnvBase, OneHot, TensorSpec, Unbounded
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED
from rl_envs.testing.counting import CountingEnv, _reset_rows

_DATA = "data"


def _flag(shape: tuple[int, ...], device: torch.device | None) -> Categorical:
    return Categorical(2, shape=shape, dtype=torch.bool, device=device)


class NestedCountingEnv(CountingEnv):
    """A :class:`CountingEnv` whose entries sit under ``"data"``, repeated ``nested_dim``
    times: ``("data", "states")``, ``("data", "action")``, ``("data", "reward")`` and the done
    flags ``("data", "done")``/``("data", "terminated")``, each shaped
    ``(*batch_size, nested_dim, 1)``.

    The count goes up by the largest of the ``nested_dim`` actions; every nested entry holds
    the count (or its reward and done flags).

    Args:
        max_steps: the episode is done once the count is above it.
        start_val: the count after a reset.
        nest_obs_action: whether the observation and the action are nested.
        nest_done: whether the done flags are nested.
        nest_reward: whether the reward is nested.
        nested_dim: the size of the nested dimension.
        has_root_done: with ``nest_done``, also a root ``"done"`` flag.
        **kwargs: :class:`rl_core.EnvBase`'s arguments.

    Examples:
        >>> from rl_envs.testing import NestedCountingEnv
        >>> env = NestedCountingEnv(max_steps=2, nested_dim=3)
        >>> traj = env.rollout(10, lambda td: td.set(env.action_key, env.full_action_spec[env.action_key].zero() + 1))
        >>> traj["next", "data", "states"].shape
        torch.Size([3, 3, 1])
        >>> traj["next", "data", "done"][:, 0, 0].tolist()
        [False, False, True]
    """

    def __init__(
        self,
        max_steps: int = 5,
        start_val: int = 0,
        nest_obs_action: bool = True,
        nest_done: bool = True,
        nest_reward: bool = True,
        nested_dim: int = 3,
        has_root_done: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(max_steps=max_steps, start_val=start_val, **kwargs)
        self.nested_dim = nested_dim
        self.has_root_done = has_root_done
        self.nested_obs_action = nest_obs_action
        self.nested_done = nest_done
        self.nested_reward = nest_reward
        outer = tuple(self.batch_size)
        inner = (*outer, nested_dim)
        leaf = (*inner, 1)
        device = self.device

        def nest(name: str, spec: TensorSpec) -> Composite:
            return Composite(
                {_DATA: Composite({name: spec}, shape=inner, device=device)},
                shape=outer,
                device=device,
            )

        if nest_obs_action:
            self.observation_spec = nest(
                "states", Unbounded(leaf, dtype=torch.int32, device=device)
            )
            self.action_spec = nest(ACTION, Binary(n=1, shape=leaf, device=device))
        if nest_reward:
            self.reward_spec = nest(REWARD, Unbounded(leaf, device=device))
        if nest_done:
            flags = {name: _flag(leaf, device) for name in (DONE, TERMINATED)}
            done = Composite(
                {_DATA: Composite(flags, shape=inner, device=device)},
                shape=outer,
                device=device,
            )
            if has_root_done:
                done[DONE] = _flag((*outer, 1), device)
            self.done_spec = done

    def _nest(self, value: torch.Tensor) -> torch.Tensor:
        """A ``(*batch, 1)`` value repeated along the nested dim: ``(*batch, nested_dim, 1)``."""
        return value.unsqueeze(-2).expand(*self.batch_size, self.nested_dim, 1).clone()

    def _reshape(self, out: TensorDictBase) -> TensorDictBase:
        if self.nested_done:
            for name in (DONE, TERMINATED):
                flag = out.pop(name)
                out.set((_DATA, name), self._nest(flag))
                if name == DONE and self.has_root_done:
                    out.set(DONE, flag)
        if self.nested_obs_action:
            out.set((_DATA, "states"), self._nest(out.pop(OBSERVATION)))
        if self.nested_reward and REWARD in out.keys():
            out.set((_DATA, REWARD), self._nest(out.pop(REWARD)))
        if _DATA in out.keys():
            out.get(_DATA).batch_size = (*self.batch_size, self.nested_dim)
        return out

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        return self._reshape(super()._reset(tensordict, **kwargs))

    def _increment(self, tensordict: TensorDictBase) -> torch.Tensor:
        action = tensordict.get(self.action_key).to(torch.int32)
        if self.nested_obs_action:
            action = action.amax(-2)
        return action.reshape(self.count.shape)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.count += self._increment(tensordict).to(self.count.device)
        reward_dtype = self.full_reward_spec[self.reward_key].dtype
        out = self._output(**{REWARD: torch.zeros(self.count.shape, dtype=reward_dtype)})
        return self._reshape(out)


class MultiKeyCountingEnv(EnvBase):
    """A counting env with three actions, each counting its own observation, reward and done.

    - root: ``"action"`` one-hot of 2; choosing index 1 adds 1 to the root count; the
      observation ``(10, 10, 3)`` holds the count, ``"reward"`` is the index chosen.
    - ``"nested_1"`` (3 agents): ``"action"`` categorical of 2 per agent, added to each
      agent's count; observation ``(3, 3)`` per agent; the reward is ``"gift"``.
    - ``"nested_2"`` (2 agents): ``"azione"`` in ``[0, 100]``; a non-zero action adds 1;
      observation ``(2,)`` per agent; the reward ``"reward"`` is the action.

    Each level is done once its count is above ``max_steps``; a reset restarts every count of
    the batch elements it resets (the root done prevails).

    Args:
        max_steps: a level is done once its count is above it.
        start_val: the counts after a reset.
        **kwargs: :class:`rl_core.EnvBase`'s arguments.

    Examples:
        >>> from rl_envs.testing import MultiKeyCountingEnv, MultiKeyCountingEnvPolicy
        >>> env = MultiKeyCountingEnv(max_steps=2)
        >>> policy = MultiKeyCountingEnvPolicy(env.full_action_spec, deterministic=True)
        >>> traj = env.rollout(10, policy)
        >>> traj["next", "observation"][:, 0, 0, 0].tolist()
        [1.0, 2.0, 3.0]
        >>> traj["next", "nested_1", "gift"].shape
        torch.Size([3, 3, 1])
    """

    def __init__(self, max_steps: int = 5, start_val: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.max_steps = max_steps
        self.start_val = start_val
        self.nested_dim_1 = 3
        self.nested_dim_2 = 2
        batch = tuple(self.batch_size)
        for name, size in (("count", None), ("count_nested_1", 3), ("count_nested_2", 2)):
            shape = (*batch, 1) if size is None else (*batch, size, 1)
            count = torch.full(shape, start_val, dtype=torch.int32, device=self.device)
            self.register_buffer(name, count)
        self.make_specs()

    def make_specs(self) -> None:
        """Sets the specs (each level's shapes after the batch dims, as documented above)."""
        b, d, n1, n2 = tuple(self.batch_size), self.device, self.nested_dim_1, self.nested_dim_2

        def level(n: int, **leaves: TensorSpec) -> Composite:
            return Composite(leaves, shape=(*b, n), device=d)

        def flags(*shape: int) -> dict[str, TensorSpec]:
            return {name: _flag((*b, *shape), d) for name in (DONE, TERMINATED)}

        self.observation_spec = Composite(
            nested_1=level(n1, observation=Bounded(0, 200, shape=(*b, n1, 3), device=d)),
            nested_2=level(n2, observation=Unbounded((*b, n2, 2), device=d)),
            observation=Unbounded((*b, 10, 10, 3), device=d),
            shape=b,
            device=d,
        )
        self.action_spec = Composite(
            nested_1=level(n1, action=Categorical(2, shape=(*b, n1), device=d)),
            nested_2=level(n2, azione=Bounded(0, 100, shape=(*b, n2, 1), device=d)),
            action=OneHot(2, shape=(*b, 2), device=d),
            shape=b,
            device=d,
        )
        self.reward_spec = Composite(
            nested_1=level(n1, gift=Unbounded((*b, n1, 1), device=d)),
            nested_2=level(n2, reward=Unbounded((*b, n2, 1), device=d)),
            reward=Unbounded((*b, 1), device=d),
            shape=b,
            device=d,
        )
        self.done_spec = Composite(
            nested_1=level(n1, **flags(n1, 1)),
            nested_2=level(n2, **flags(n2, 1)),
            **flags(1),
            shape=b,
            device=d,
        )

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            torch.manual_seed(seed)

    def _observe(self) -> TensorDictBase:
        out = self.observation_spec.zero()
        for prefix, count in (
            ((), self.count),
            (("nested_1",), self.count_nested_1),
            (("nested_2",), self.count_nested_2),
        ):
            key = (*prefix, OBSERVATION)
            out.set(key, out.get(key) + expand_right(count, out.get(key).shape))
        return out

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        rows = _reset_rows(self, tensordict)
        for count in (self.count, self.count_nested_1, self.count_nested_2):
            if rows is None:
                count.fill_(self.start_val)
            else:
                count[rows] = self.start_val
        out = self._observe()
        out.update(self.full_done_spec.zero())
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        reward = self.full_reward_spec.zero()
        done = self.full_done_spec.zero()

        chosen = tensordict.get(ACTION).long().argmax(-1, keepdim=True)
        reward.set(REWARD, reward.get(REWARD) + chosen)
        self.count += chosen.to(torch.int32)

        agents_1 = tensordict.get(("nested_1", ACTION)).unsqueeze(-1)
        reward.set(("nested_1", "gift"), reward.get(("nested_1", "gift")) + agents_1)
        self.count_nested_1 += agents_1.to(torch.int32)

        agents_2 = tensordict.get(("nested_2", "azione"))
        reward.set(("nested_2", REWARD), reward.get(("nested_2", REWARD)) + agents_2)
        self.count_nested_2 += (agents_2 != 0).to(torch.int32)

        for prefix, count in (
            ((), self.count),
            (("nested_1",), self.count_nested_1),
            (("nested_2",), self.count_nested_2),
        ):
            for name in (DONE, TERMINATED):
                done.set((*prefix, name), count > self.max_steps)
        out = self._observe()
        out.update(done)
        out.update(reward)
        return out


class MultiKeyCountingEnvPolicy(TensorDictModuleBase):
    """A policy for :class:`MultiKeyCountingEnv`.

    With ``count=False`` every action is the spec's zero (nothing counts). With
    ``deterministic=True`` all three levels count at every step; otherwise one of them,
    drawn with ``torch.randint``, counts and the other two write zeros.

    Args:
        full_action_spec: the env's ``full_action_spec``.
        count: whether the actions count.
        deterministic: whether every level counts at every step.

    Raises:
        ValueError: when ``count`` is False and ``deterministic`` is False (a policy that does
            not count is deterministic: pass ``deterministic=True``).
    """

    def __init__(
        self, full_action_spec: TensorSpec, count: bool = True, deterministic: bool = False
    ) -> None:
        super().__init__()
        if not count and not deterministic:
            raise ValueError(
                "MultiKeyCountingEnvPolicy: count=False is deterministic; pass "
                "deterministic=True with it."
            )
        self.full_action_spec = full_action_spec
        self.count = count
        self.deterministic = deterministic
        self.in_keys = []
        self.out_keys = list(full_action_spec.keys(True, True))

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self.full_action_spec.zero()
        if self.count:
            levels = [0, 1, 2] if self.deterministic else [int(torch.randint(0, 3, ()))]
            if 0 in levels:
                key = ("nested_1", ACTION)
                action.set(key, action.get(key) + 1)
            if 1 in levels:
                key = ("nested_2", "azione")
                action.set(key, action.get(key) + 1)
            if 2 in levels:
                action.get(ACTION)[..., 1] = True
        return tensordict.update(action)


__all__ = ["MultiKeyCountingEnv", "MultiKeyCountingEnvPolicy", "NestedCountingEnv"]
