"""Loading what a render run names: ``"module:object"`` strings, factories called with the
arguments they accept, and checkpoints (saved, hashed, their weights found)."""

from __future__ import annotations

import hashlib
import importlib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch


def import_from_string(spec: str) -> Any:
    """The object a ``"module:attribute"`` (or ``"module.attribute"``) string names; dots
    after the colon walk attributes (``"pkg.mod:Class.method"``).

    Raises:
        ValueError: the string names no module or attribute.

    Examples:
        >>> from rl_envs.render import import_from_string
        >>> import_from_string("math:pi") > 3, import_from_string("os.path.join").__name__
        (True, 'join')
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"import_from_string: expected 'module:object', got {spec!r}.")
    module_name, sep, attribute = spec.strip().partition(":")
    if not sep:
        module_name, _, attribute = module_name.rpartition(".")
    if not module_name or not attribute:
        raise ValueError(f"import_from_string: expected 'module:object', got {spec!r}.")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(
            f"import_from_string: cannot import module {module_name!r} of {spec!r} ({err})."
        ) from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"import_from_string: {spec!r}: {target!r} has no attribute {part!r}.")
        target = getattr(target, part)
    return target


def call_with_supported_kwargs(
    factory: Callable[..., Any], preferred_arg: Any, kwargs: Mapping[str, Any]
) -> Any:
    """Calls ``factory`` with the entries of ``kwargs`` it accepts (all of them if it takes
    ``**kwargs``); a factory that takes one positional parameter none of them names gets
    ``preferred_arg`` (a spec object) instead.

    Examples:
        >>> from rl_envs.render import call_with_supported_kwargs
        >>> call_with_supported_kwargs(lambda seed: seed * 2, None, {"seed": 3, "device": "cpu"})
        6
        >>> call_with_supported_kwargs(lambda spec: spec, "the spec", {"seed": 3})
        'the spec'
    """
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory(**kwargs)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return factory(**kwargs)
    chosen = {k: v for k, v in kwargs.items() if k in params}
    positional = [
        p
        for p in params.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is p.empty
        and p.name not in chosen
    ]
    if len(positional) == 1 and preferred_arg is not None:
        return factory(preferred_arg, **chosen)
    return factory(**chosen)


def checkpoint_hash(path: str | Path) -> str:
    """The SHA-256 of a checkpoint file, as hex.

    Raises:
        FileNotFoundError: no such file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint_hash: no checkpoint file at {str(path)!r}.")
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_checkpoint(
    path: str | Path, map_location: str | torch.device = "cpu", *, weights_only: bool | None = None
) -> Any:
    """``torch.load`` of a checkpoint (``weights_only=True`` unless told otherwise: a
    checkpoint of tensors, dicts, lists and numbers; pass False only for files you trust).

    Raises:
        FileNotFoundError: no such file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"load_checkpoint: no checkpoint file at {str(path)!r}.")
    return torch.load(
        path, map_location=map_location, weights_only=True if weights_only is None else weights_only
    )


_STATE_KEYS = ("policy_state_dict", "policy", "state_dict", "model_state_dict", "model", "actor")


def infer_state_dict(payload: Any, key: str | None = None) -> Mapping[str, torch.Tensor]:
    """The policy's weights in a checkpoint: ``payload[key]`` (dots walk nested dicts), else
    the first of ``policy_state_dict``, ``policy``, ``state_dict``, ``model_state_dict``,
    ``model``, ``actor`` that holds tensors, else the payload itself when all its values are
    tensors.

    Raises:
        KeyError: ``key`` is missing, or no entry holds a state dict.

    Examples:
        >>> import torch
        >>> from rl_envs.render import infer_state_dict
        >>> list(infer_state_dict({"policy": {"w": torch.zeros(1)}, "frames": 10}))
        ['w']
    """

    def is_state(value: Any) -> bool:
        return (
            isinstance(value, Mapping)
            and bool(value)
            and all(isinstance(k, str) and torch.is_tensor(v) for k, v in value.items())
        )

    if key is not None:
        value = payload
        for part in key.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise KeyError(f"infer_state_dict: the checkpoint has no entry {key!r}.")
            value = value[part]
        if not is_state(value):
            raise KeyError(f"infer_state_dict: the checkpoint's {key!r} is not a state dict.")
        return value
    if is_state(payload):
        return payload
    if isinstance(payload, Mapping):
        for name in _STATE_KEYS:
            if is_state(payload.get(name)):
                return payload[name]
    found = sorted(payload) if isinstance(payload, Mapping) else type(payload).__name__
    raise KeyError(
        f"infer_state_dict: no state dict in the checkpoint (looked for {list(_STATE_KEYS)}, "
        f"got {found}); pass state_dict_key=..."
    )


def save_render_checkpoint(
    path: str | Path | None,
    model: Any,
    *,
    env_metadata: Mapping[str, Any] | None = None,
    frames: int | None = None,
    metrics: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path | None:
    """Saves a checkpoint a render run can load: ``{"policy_state_dict": ..., "env": ...,
    "frames": ..., "metrics": ..., "config": ..., **extra}`` (written whole, then renamed).
    ``model`` is a module or a state dict; a None ``path`` saves nothing and returns None.
    """
    if path is None:
        return None
    state = model.state_dict() if hasattr(model, "state_dict") else dict(model)
    payload: dict[str, Any] = {"policy_state_dict": {k: v.detach().cpu() for k, v in state.items()}}
    for name, value in (
        ("env", env_metadata),
        ("frames", frames),
        ("metrics", metrics),
        ("config", config),
    ):
        if value is not None:
            payload[name] = dict(value) if isinstance(value, Mapping) else value
    payload.update(extra or {})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)
    return path
