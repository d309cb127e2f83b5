"""RayKLRewardTransform and RayRetrieveKL: the KL transforms run in a Ray actor that holds the
reference (and generating) model, shared by every env that names the actor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm.envs.kl import RetrieveKL
from rl_llm.envs.kl_reward import KLRewardTransform


def _server_class() -> Any:
    import ray

    @ray.remote
    class _TransformServer:
        """Builds one transform in the actor and applies it to the batches it is sent."""

        def __init__(self, build: Callable[[], Transform], device: Any) -> None:
            self.transform = build()
            self.device = None if device is None else torch.device(device)

        def call(self, tensordict: TensorDictBase) -> TensorDictBase:
            if self.device is not None:
                tensordict = tensordict.to(self.device)
            return self.transform(tensordict).cpu()

    return _TransformServer


def _written(out: TensorDictBase, source: TensorDictBase) -> list[Any]:
    """The leaves of ``out`` that are new or whose tensor changed from ``source``."""
    keys = []
    for key in out.keys(include_nested=True, leaves_only=True):
        before = source.get(key, None)
        after = out.get(key)
        if before is None or (
            torch.is_tensor(after)
            and torch.is_tensor(before)
            and (after.shape != before.shape or not torch.equal(after, before.to(after)))
        ):
            keys.append(key)
    return keys


class _RayTransform(Transform):
    """Sends each step's (or batch's) entries to a transform living in a Ray actor and writes
    back what it added or changed."""

    def __init__(
        self,
        where: str,
        build: Callable[[], Transform],
        *,
        num_cpus: float | None,
        num_gpus: float,
        device: Any,
        actor_name: str | None,
        ray_init_config: dict[str, Any] | None,
    ) -> None:
        super().__init__()
        try:
            import ray
        except ModuleNotFoundError:
            raise ModuleNotFoundError(
                f'{where} needs Ray: pip install "rl-llm[ray]"', name="ray"
            ) from None
        num_cpus = 1 if num_cpus is None else num_cpus
        if num_cpus < 0 or num_gpus < 0:
            raise ValueError(
                f"{where}: expected num_cpus >= 0 and num_gpus >= 0, got num_cpus={num_cpus}, "
                f"num_gpus={num_gpus}."
            )
        if not ray.is_initialized():
            ray.init(**(ray_init_config or {}))
        options: dict[str, Any] = {"num_cpus": num_cpus, "num_gpus": num_gpus}
        if actor_name is not None:
            options.update(name=actor_name, get_if_exists=True)
        self.actor_name = actor_name
        self.actor = _server_class().options(**options).remote(build, device)

    def _remote(self, tensordict: TensorDictBase) -> TensorDictBase:
        import ray

        return ray.get(self.actor.call.remote(tensordict.cpu()))

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self._remote(tensordict)
        for key in _written(out, tensordict):
            tensordict.set(key, out.get(key).to(tensordict.device or "cpu"))
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        batch = tensordict.exclude("next")
        batch.set("next", next_tensordict)
        out = self._remote(batch)
        for key in _written(out, batch):
            value = out.get(key)
            if isinstance(key, tuple) and key[0] == "next":
                next_tensordict.set(key[1:] if len(key) > 2 else key[1], value)
            else:
                tensordict.set(key, value)
        return next_tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def shutdown(self) -> None:
        """Kills the actor (every transform sharing it by name loses it too)."""
        import ray

        ray.kill(self.actor)


def _one_of(where: str, name: str, model: Any, factory: Any) -> Callable[[], Any]:
    if (model is None) == (factory is None):
        raise ValueError(
            f"{where}: expected exactly one of {name} and {name}_factory, got "
            f"{name}={type(model).__name__}, {name}_factory={type(factory).__name__}."
        )
    return factory if factory is not None else (lambda: model)


class RayKLRewardTransform(_RayTransform):
    """A :class:`~rl_llm.envs.KLRewardTransform` run in a Ray actor.

    The actor builds the reference model (from ``ref_model_factory``, called in the actor, or
    from ``ref_model``, sent to it) and the transform; at each env step (or on a collected
    batch) the step's entries are sent to it and what it writes (``"ref_log_probs"``, the
    penalised ``("next", "reward")`` and ``("next", "kl_penalty")``) comes back. Envs that
    give the same ``actor_name`` share one actor and one reference model. Ray must be
    running or is started with ``ray_init_config``.

    Args:
        ref_model: the reference policy (anything with ``log_probs_of``), sent to the actor.
        ref_model_factory: a callable building it inside the actor instead (preferred for
            large models).
        num_cpus: CPUs reserved for the actor (default 1).
        num_gpus: GPUs reserved for the actor (default 0).
        device: the device the actor moves the entries to (results come back on CPU).
        actor_name: share the actor under this name (the first transform creates it).
        ray_init_config: ``ray.init`` keyword arguments when Ray is not running.
        **kwargs: ``coeff`` and ``reward_key`` of :class:`~rl_llm.envs.KLRewardTransform`.

    Raises:
        ValueError: both or neither of ``ref_model`` and ``ref_model_factory``.
        ModuleNotFoundError: Ray is not installed.
    """

    def __init__(
        self,
        ref_model: Any = None,
        *,
        ref_model_factory: Callable[[], Any] | None = None,
        num_cpus: float | None = None,
        num_gpus: float = 0,
        device: Any = None,
        actor_name: str | None = None,
        ray_init_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        where = "RayKLRewardTransform"
        make_ref = _one_of(where, "ref_model", ref_model, ref_model_factory)
        super().__init__(
            where,
            lambda: KLRewardTransform(make_ref(), **kwargs),
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            device=device,
            actor_name=actor_name,
            ray_init_config=ray_init_config,
        )


class RayRetrieveKL(_RayTransform):
    """A :class:`~rl_llm.envs.RetrieveKL` run in a Ray actor.

    The actor builds the reference model (``ref_model`` or ``ref_model_factory``) and, unless
    ``gen_model="from_collector"`` (the default: the policy's sampling log-probs are used), the
    generating model (``gen_model`` or ``gen_model_factory``), then :class:`RetrieveKL`. What
    the transform writes (``("log_probs", "full")``, ``("ref_log_probs", "full")``,
    ``("next", "kl_penalty")`` and the penalised reward) comes back into the step or batch.
    Envs that give the same ``actor_name`` share one actor.

    Args:
        gen_model: ``"from_collector"``, a scoring wrapper sent to the actor, or None with
            ``gen_model_factory``.
        ref_model: the reference wrapper sent to the actor, or None with
            ``ref_model_factory``.
        gen_model_factory: builds the generating (scoring) wrapper in the actor.
        ref_model_factory: builds the reference wrapper in the actor.
        num_cpus: CPUs reserved for the actor (default 1).
        num_gpus: GPUs reserved for the actor (default 0).
        device: the device the actor moves the entries to (results come back on CPU).
        actor_name: share the actor under this name.
        ray_init_config: ``ray.init`` keyword arguments when Ray is not running.
        **kwargs: the other arguments of :class:`~rl_llm.envs.RetrieveKL` (``coeff``,
            ``assistant_only``, keys, ...).

    Raises:
        ValueError: both or neither of a model and its factory.
        ModuleNotFoundError: Ray is not installed.
    """

    def __init__(
        self,
        gen_model: Any = "from_collector",
        ref_model: Any = None,
        *,
        gen_model_factory: Callable[[], Any] | None = None,
        ref_model_factory: Callable[[], Any] | None = None,
        num_cpus: float | None = None,
        num_gpus: float = 0,
        device: Any = None,
        actor_name: str | None = None,
        ray_init_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        where = "RayRetrieveKL"
        make_ref = _one_of(where, "ref_model", ref_model, ref_model_factory)
        if gen_model == "from_collector" and gen_model_factory is None:
            make_gen: Callable[[], Any] = lambda: "from_collector"  # noqa: E731
        else:
            gen = None if gen_model == "from_collector" else gen_model
            make_gen = _one_of(where, "gen_model", gen, gen_model_factory)
        super().__init__(
            where,
            lambda: RetrieveKL(make_gen(), make_ref(), **kwargs),
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            device=device,
            actor_name=actor_name,
            ray_init_config=ray_init_config,
        )
