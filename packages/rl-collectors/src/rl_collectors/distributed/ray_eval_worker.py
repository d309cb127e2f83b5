"""RayEvalWorker: evaluation rollouts in a Ray actor of their own, submitted without waiting."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from rl_collectors.weight_sync.ray import import_ray


class _EvalActor:
    """Runs in the Ray actor: ``init_fn`` first, then the env and the policy."""

    def __init__(
        self,
        init_fn: Callable[[], None] | None,
        env_maker: Callable[[], Any],
        policy_maker: Callable[[Any], Any],
    ) -> None:
        if init_fn is not None:
            init_fn()  # before torch is used here (process-level set-up, e.g. a simulator)
        import torch

        torch.set_num_threads(1)
        self.env = env_maker()
        self.policy = policy_maker(self.env)

    def eval(
        self,
        weights: Any,
        max_steps: int,
        reward_keys: Any,
        deterministic: bool,
        break_when_any_done: bool,
    ) -> dict[str, Any]:
        import torch

        from rl_collectors.weight_sync.strategy import WeightStrategy
        from rl_core import ExplorationType, set_exploration_type, step_mdp

        if weights is not None:
            WeightStrategy().apply_weights(self.policy, weights)
        exploration = ExplorationType.DETERMINISTIC if deterministic else ExplorationType.RANDOM
        total, steps, episode = 0.0, 0, None
        frames = []
        with set_exploration_type(exploration), torch.no_grad():
            td = self.env.reset()
            for _ in range(max_steps):
                td = self.env.step(self.policy(td))
                reward = td.get(reward_keys).float()
                total += reward.mean().item()
                episode = reward if episode is None else episode + reward
                steps += 1
                frame = self._render()
                if frame is not None:
                    frames.append(frame)
                done = td.get(("next", "done"), None)
                if break_when_any_done and done is not None and done.any():
                    break
                td = step_mdp(td)
        return {
            "reward": total / max(steps, 1),
            "episode_reward": 0.0 if episode is None else episode.mean().item(),
            "steps": steps,
            "frames": torch.stack(frames).unsqueeze(0) if frames else None,
        }

    def _render(self) -> Any:
        """An ``rgb_array`` frame ``[3, H, W]`` (uint8) of the base env, if it renders one."""
        import numpy as np
        import torch

        env = self.env
        while getattr(env, "base_env", env) is not env:  # a plain env's base_env is itself
            env = env.base_env
        render = getattr(getattr(env, "_env", env), "render", None)
        if not callable(render):
            return None
        raw = render()
        if not isinstance(raw, np.ndarray | torch.Tensor) or raw.ndim != 3:
            return None
        frame = torch.as_tensor(np.array(raw) if isinstance(raw, np.ndarray) else raw)
        return frame[..., :3].permute(2, 0, 1).to(torch.uint8)

    def shutdown(self) -> None:
        if not getattr(self.env, "is_closed", False):
            self.env.close()


class RayEvalWorker:
    """Evaluation rollouts in a dedicated Ray actor: ``submit(weights, max_steps)`` starts one
    and returns at once, ``poll()`` gives its result when it is done.

    The actor calls ``init_fn`` first (process-level set-up that must precede the rest, with
    its imports inside it), then ``env_maker()`` and ``policy_maker(env)``. Each rollout loads
    ``weights`` into the actor's policy, runs up to ``max_steps`` steps (stopping at the first
    done with ``break_when_any_done``) and returns ``{"reward": mean reward per step,
    "episode_reward": summed reward (mean over envs), "steps": steps run, "frames": the base
    env's rgb frames [1, T, 3, H, W] or None}``. A named worker (``name=``) is a detached actor
    that other processes reach with ``RayEvalWorker.from_name(name)``.

    Args:
        init_fn: called first in the actor, or ``None``.
        env_maker: builds the env in the actor.
        policy_maker: ``(env) -> policy`` in the actor (an ``nn.Module`` when weights are
            submitted).

    Keyword Args:
        num_gpus: GPUs Ray reserves for the actor (``0`` on a CPU-only cluster).
        reward_keys: the reward entry of a step (default ``("next", "reward")``).
        name: registers the actor under this name (detached).
        **remote_kwargs: more ``ray.remote`` options (``num_cpus``, ``runtime_env``, ...).

    Raises:
        RuntimeError: Ray is not initialised; the actor died (named, on ``poll``).
        TypeError: a maker is not callable.
    """

    def __init__(
        self,
        init_fn: Callable[[], None] | None,
        env_maker: Callable[[], Any],
        policy_maker: Callable[[Any], Any],
        *,
        num_gpus: int = 1,
        reward_keys: Any = ("next", "reward"),
        name: str | None = None,
        **remote_kwargs: Any,
    ) -> None:
        where = type(self).__name__
        for label, maker in (("init_fn", init_fn), ("env_maker", env_maker)):
            if maker is not None and not callable(maker):
                raise TypeError(f"{where}: expected {label} to be callable, got {maker!r}.")
        if not callable(policy_maker):
            raise TypeError(
                f"{where}: expected policy_maker as a callable (env) -> policy, got "
                f"{policy_maker!r}."
            )
        if env_maker is None:
            raise TypeError(f"{where}: expected env_maker to be callable, got None.")
        ray = import_ray(where)
        options: dict[str, Any] = {}
        if name is not None:
            options = {"name": name, "lifetime": "detached"}
        actor_class = ray.remote(num_gpus=num_gpus, **remote_kwargs)(_EvalActor)
        self._name = name
        self._reward_keys = reward_keys
        self._actor = actor_class.options(**options).remote(init_fn, env_maker, policy_maker)
        self._pending: Any = None

    @classmethod
    def from_name(cls, name: str, *, reward_keys: Any = ("next", "reward")) -> RayEvalWorker:
        """The worker of the named actor another process started (``ValueError`` if no
        actor has that name)."""
        ray = import_ray(f"{cls.__name__}.from_name")
        worker = cls.__new__(cls)
        worker._name = name
        worker._reward_keys = reward_keys
        try:
            worker._actor = ray.get_actor(name)
        except ValueError as err:
            raise ValueError(
                f"{cls.__name__}.from_name: no Ray actor named {name!r} in this cluster."
            ) from err
        worker._pending = None
        return worker

    def submit(
        self,
        weights: Any,
        max_steps: int,
        *,
        deterministic: bool = True,
        break_when_any_done: bool = True,
    ) -> None:
        """Starts a rollout with ``weights`` (a TensorDict or state dict, or ``None`` for the
        actor's current ones); a result not polled yet is dropped."""
        where = f"{type(self).__name__}.submit"
        if self._actor is None:
            raise RuntimeError(f"{where}: the worker was shut down.")
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise ValueError(f"{where}: expected max_steps as an int >= 1, got {max_steps!r}.")
        if weights is not None and hasattr(weights, "detach"):
            weights = weights.detach().cpu()
        self._pending = self._actor.eval.remote(
            weights, max_steps, self._reward_keys, deterministic, break_when_any_done
        )

    def poll(self, timeout: float = 0) -> dict[str, Any] | None:
        """The result of the submitted rollout, or ``None`` if it is not done within
        ``timeout`` seconds (or nothing was submitted)."""
        if self._pending is None:
            return None
        ray = import_ray(f"{type(self).__name__}.poll")
        ready, _ = ray.wait([self._pending], timeout=timeout)
        if not ready:
            return None
        pending, self._pending = self._pending, None
        try:
            return ray.get(pending)
        except ray.exceptions.RayActorError as err:
            label = f"named {self._name!r}" if self._name else "(unnamed)"
            raise RuntimeError(
                f"{type(self).__name__}: the evaluation actor {label} died during the rollout "
                f"({type(err).__name__})."
            ) from err

    def shutdown(self) -> None:
        """Closes the env and ends the actor (idempotent; safe after Ray shut down)."""
        if self._actor is None:
            return
        actor, self._actor, self._pending = self._actor, None, None
        import ray

        if not ray.is_initialized():
            return
        with contextlib.suppress(Exception):  # a dead actor has nothing to close
            ray.get(actor.shutdown.remote(), timeout=30)
        with contextlib.suppress(Exception):
            ray.kill(actor)


__all__ = ["RayEvalWorker"]
