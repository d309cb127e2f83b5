"""RemoteTransformersWrapper: a TransformersWrapper living in a Ray actor, called like a local one."""

from __future__ import annotations

import os
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_llm._utils import import_ray
from rl_llm.modules.transformers_wrapper import TransformersWrapper


class _TransformersActor:
    """The actor's side: loads the model (from a folder or hub id) and runs the wrapper."""

    def __init__(self, model: Any, tokenizer: Any, kwargs: dict[str, Any]) -> None:
        if isinstance(model, (str, os.PathLike)):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            path = os.fspath(model)
            model = AutoModelForCausalLM.from_pretrained(path).eval()
            if tokenizer is None:
                tokenizer = path
        if isinstance(tokenizer, (str, os.PathLike)):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(os.fspath(tokenizer))
        self.wrapper = TransformersWrapper(model, tokenizer, **kwargs)

    def ready(self) -> bool:
        return True

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Tensors that carry a graph cannot leave the actor: the remote policy is for inference.
        with torch.no_grad():
            return self.wrapper(tensordict)

    def attribute(self, name: str) -> Any:
        return getattr(self.wrapper, name)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.wrapper.model.state_dict().items()}

    @torch.no_grad()
    def load_state_dict(self, weights: dict[str, torch.Tensor]) -> None:
        self.wrapper.model.load_state_dict(weights, strict=True)


class RemoteTransformersWrapper:
    """A :class:`TransformersWrapper` in a Ray actor, called like the local wrapper.

    The actor loads the model itself (``AutoModelForCausalLM.from_pretrained(model)``; a
    model object is not shipped to it unless ``validate_model=False``) and builds the wrapper
    with ``**kwargs``; ``remote(td)`` runs it in the actor and returns the result (no
    ``.remote``/``ray.get`` at the call site). Several callers (collectors in other actors)
    can share one actor by ``actor_name``. The actor computes without gradients: use it to
    generate or to score; train a local model and send its weights with
    :meth:`load_state_dict`.

    Ray must be running (``ray.init()``), or is started with default settings.

    Args:
        model: a model folder or hub id (what ``from_pretrained`` reads).
        max_concurrency: calls the actor serves at once.
        validate_model: refuse a ``model`` that is not a path or id (a model object would be
            pickled into the actor).
        actor_name: a named actor; an actor of that name that already runs is reused (its
            wrapper settings are those it was built with).
        num_gpus: GPUs of the actor (TorchRL's code defaults to 1; 0 here, so the wrapper
            runs on machines without a GPU).
        num_cpus: CPUs of the actor.
        **kwargs: :class:`TransformersWrapper`'s arguments (``tokenizer``: an object, a folder
            or ``None`` for the model's own folder; ``input_mode``, ``generate``,
            ``generate_kwargs``, ...).

    Raises:
        ImportError: Ray is not installed (``pip install "rl-llm[ray]"``).
        ValueError: ``model`` is not a path or id (with ``validate_model``), ``num_gpus`` or
            ``num_cpus`` beyond what the cluster has, or an actor that fails to build the
            wrapper (the cause is named).

    Examples:
        >>> policy = RemoteTransformersWrapper(  # doctest: +SKIP
        ...     "path/to/model", input_mode="history", generate_kwargs={"max_new_tokens": 8})
        >>> out = policy(td)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: Any,
        max_concurrency: int = 16,
        validate_model: bool = True,
        actor_name: str | None = None,
        num_gpus: int = 0,
        num_cpus: int = 1,
        **kwargs: Any,
    ) -> None:
        ray = import_ray("RemoteTransformersWrapper")
        if validate_model and not isinstance(model, (str, os.PathLike)):
            raise ValueError(
                f"RemoteTransformersWrapper: expected model as a folder or hub id (the actor "
                f"loads it with from_pretrained), got {type(model).__name__}. Save the model "
                f"with save_pretrained and pass its folder, or pass validate_model=False to "
                f"ship the object to the actor."
            )
        if isinstance(model, (str, os.PathLike)):
            path = os.path.expanduser(os.fspath(model))
            looks_local = os.path.isabs(path) or path.startswith(("./", "../"))
            if looks_local and not os.path.isdir(path):
                raise ValueError(
                    f"RemoteTransformersWrapper: the model folder {path!r} does not exist; save "
                    f"the model there with save_pretrained (or pass a hub id)."
                )
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(
                f"RemoteTransformersWrapper: expected max_concurrency >= 1, got "
                f"{max_concurrency!r}."
            )
        if not ray.is_initialized():
            ray.init()
        self._owned = True
        if actor_name is not None:
            try:
                self._actor = ray.get_actor(actor_name)
                self._owned = False
            except ValueError:
                self._actor = None
        if self._owned:
            resources = ray.cluster_resources()
            for name, value in (("num_gpus", num_gpus), ("num_cpus", num_cpus)):
                have = resources.get("GPU" if name == "num_gpus" else "CPU", 0)
                if value < 0 or value > have:
                    raise ValueError(
                        f"RemoteTransformersWrapper: {name}={value} but the Ray cluster has "
                        f"{have:g}; the actor would wait forever. Ask for at most {have:g}."
                    )
            actor_class = ray.remote(_TransformersActor).options(
                max_concurrency=max_concurrency,
                name=actor_name,
                num_gpus=num_gpus,
                num_cpus=num_cpus,
            )
            self._actor = actor_class.remote(model, kwargs.pop("tokenizer", None), kwargs)
            try:
                ray.get(self._actor.ready.remote())
            except ray.exceptions.RayError as err:
                raise ValueError(
                    f"RemoteTransformersWrapper: the actor could not build a "
                    f"TransformersWrapper from model={model!r}: {err}"
                ) from err
        self.actor_name = actor_name

    @property
    def actor(self) -> Any:
        """The Ray actor handle (pass it to other actors to share the model)."""
        return self._actor

    def _get(self, ref: Any) -> Any:
        return import_ray("RemoteTransformersWrapper").get(ref)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.forward(tensordict)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs the wrapper in the actor on ``tensordict``; returns its output (a copy: the
        input is not written in place, unlike the local wrapper)."""
        if not isinstance(tensordict, TensorDictBase):
            raise TypeError(
                f"RemoteTransformersWrapper: expected a TensorDict, got "
                f"{type(tensordict).__name__}."
            )
        return self._get(self._actor.forward.remote(tensordict))

    def state_dict(self) -> dict[str, torch.Tensor]:
        """A copy of the actor model's weights."""
        return self._get(self._actor.state_dict.remote())

    def load_state_dict(self, weights: dict[str, torch.Tensor] | torch.nn.Module) -> None:
        """Loads weights (a state dict or a module's) into the actor's model (strict)."""
        if isinstance(weights, torch.nn.Module):
            weights = weights.state_dict()
        weights = {k: v.detach().cpu() for k, v in weights.items()}
        self._get(self._actor.load_state_dict.remote(weights))

    def _attribute(self, name: str) -> Any:
        return self._get(self._actor.attribute.remote(name))

    @property
    def generate(self) -> bool:
        """Whether the wrapper generates (True) or scores given responses."""
        return self._attribute("generate")

    @property
    def input_mode(self) -> str:
        return self._attribute("input_mode")

    @property
    def tokenizer(self) -> Any:
        """A copy of the actor's tokenizer."""
        return self._attribute("tokenizer")

    @property
    def pad_token_id(self) -> int | None:
        return self._attribute("pad_token_id")

    def shutdown(self) -> None:
        """Ends the actor if this wrapper started it (a reused named actor is left running)."""
        if self._owned and self._actor is not None:
            import_ray("RemoteTransformersWrapper").kill(self._actor)
        self._actor = None

    def __enter__(self) -> RemoteTransformersWrapper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
