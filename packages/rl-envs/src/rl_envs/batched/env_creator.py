"""EnvCreator: a picklable env factory for worker processes."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from typing import Any

from rl_core.envs import EnvBase
from rl_envs.batched._meta import EnvMetadata


def _dumps(obj: Any, what: str) -> bytes:
    try:
        import cloudpickle
    except ImportError:
        cloudpickle = None
    try:
        if cloudpickle is not None:
            return cloudpickle.dumps(obj)
        return pickle.dumps(obj)
    except Exception as err:
        hint = (
            "define it at module level"
            if cloudpickle is not None
            else "define it at module level, or pip install cloudpickle to send lambdas and "
            "closures"
        )
        raise TypeError(f"EnvCreator: cannot pickle {what} ({err}); {hint}.") from err


class EnvCreator:
    """Wraps an env factory so that it can be sent to worker processes, lambdas included.

    Calling the creator builds an env: ``create_env_fn(**create_env_kwargs, **kwargs)``.
    Pickled (as the ``spawn`` and ``forkserver`` start methods do), the factory travels through
    ``cloudpickle`` when it is installed (it comes with gymnasium), so lambdas and closures work;
    without it, only functions importable by name do. The metadata of the env (specs, batch size,
    device) is read from one env on first use and cached, also across pickling.

    Args:
        create_env_fn: a callable returning an :class:`~rl_core.envs.EnvBase`.
        create_env_kwargs: keyword arguments for it.

    Raises:
        TypeError: ``create_env_fn`` is not callable.

    Examples:
        >>> import pickle
        >>> from rl_core.testing import CountingEnv
        >>> from rl_envs.batched import EnvCreator
        >>> creator = EnvCreator(lambda max_count: CountingEnv(max_count), {"max_count": 3})
        >>> env = pickle.loads(pickle.dumps(creator))()
        >>> env.max_count, tuple(creator.meta_data.batch_size)
        (3, ())
    """

    def __init__(
        self,
        create_env_fn: Callable[..., EnvBase],
        create_env_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(create_env_fn):
            raise TypeError(
                f"EnvCreator: expected a callable returning an env, got "
                f"{type(create_env_fn).__name__}."
            )
        self.create_env_fn = create_env_fn
        self.create_env_kwargs = dict(create_env_kwargs or {})
        self._meta_data: EnvMetadata | None = None

    def __call__(self, **kwargs: Any) -> EnvBase:
        env = self.create_env_fn(**{**self.create_env_kwargs, **kwargs})
        if not isinstance(env, EnvBase):
            raise TypeError(
                f"EnvCreator: create_env_fn returned a {type(env).__name__}, expected an EnvBase."
            )
        return env

    @property
    def meta_data(self) -> EnvMetadata:
        """Specs, batch size and device of the env, read from one env built (and closed) once."""
        if self._meta_data is None:
            env = self()
            try:
                self._meta_data = EnvMetadata.from_env(env)
            finally:
                env.close()
        return self._meta_data

    def __getstate__(self) -> dict[str, Any]:
        name = getattr(self.create_env_fn, "__qualname__", type(self.create_env_fn).__name__)
        payload = _dumps((self.create_env_fn, self.create_env_kwargs), f"create_env_fn {name}")
        return {"payload": payload, "meta_data": self._meta_data}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.create_env_fn, self.create_env_kwargs = pickle.loads(state["payload"])
        self._meta_data = state["meta_data"]

    def __repr__(self) -> str:
        name = getattr(self.create_env_fn, "__qualname__", repr(self.create_env_fn))
        return f"EnvCreator({name}, create_env_kwargs={self.create_env_kwargs})"


def env_creator(fun: Callable[..., EnvBase]) -> EnvCreator:
    """``EnvCreator(fun)`` (TorchRL's helper); an :class:`EnvCreator` is returned as it is.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> type(env_creator(CountingEnv)).__name__
        'EnvCreator'
    """
    return fun if isinstance(fun, EnvCreator) else EnvCreator(fun)


def get_env_metadata(
    env_or_creator: EnvBase | Callable[..., EnvBase],
    kwargs: Mapping[str, Any] | None = None,
    *,
    env_validator: Callable[[EnvBase], None] | None = None,
) -> EnvMetadata:
    """The :class:`~rl_envs.batched.EnvMetadata` (specs, batch size, device) of an env, of an
    :class:`EnvCreator` or of any env factory (TorchRL's helper).

    A factory is called with ``kwargs`` and the env it builds is closed after reading; an
    ``EnvCreator`` answers from its cached metadata unless ``env_validator`` needs an env.

    Args:
        env_or_creator: an env, an ``EnvCreator`` or a callable returning an env.
        kwargs: keyword arguments for a factory (an ``EnvCreator`` takes none but its own).
        env_validator: called with the env before its metadata is read (keyword-only).

    Raises:
        ValueError: ``kwargs`` given for an ``EnvCreator`` that holds other ones.
        TypeError: ``env_or_creator`` is neither an env nor callable, or builds no env.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> get_env_metadata(CountingEnv, {"batch_size": [2]}).batch_size
        torch.Size([2])
    """
    if isinstance(env_or_creator, EnvBase):
        if env_validator is not None:
            env_validator(env_or_creator)
        return EnvMetadata.from_env(env_or_creator)
    if isinstance(env_or_creator, EnvCreator):
        if kwargs and dict(kwargs) != env_or_creator.create_env_kwargs:
            raise ValueError(
                f"get_env_metadata: the EnvCreator holds create_env_kwargs="
                f"{env_or_creator.create_env_kwargs}, got kwargs={dict(kwargs)}; build the "
                f"creator with these kwargs instead."
            )
        if env_validator is None:
            return env_or_creator.meta_data
        factory: Callable[..., EnvBase] = env_or_creator
        kwargs = None
    elif callable(env_or_creator):
        factory = env_or_creator
    else:
        raise TypeError(
            f"get_env_metadata: expected an env, an EnvCreator or a callable returning an env, "
            f"got {type(env_or_creator).__name__}."
        )
    env = factory(**dict(kwargs or {}))
    if not isinstance(env, EnvBase):
        raise TypeError(
            f"get_env_metadata: the factory returned a {type(env).__name__}, expected an EnvBase."
        )
    try:
        if env_validator is not None:
            env_validator(env)
        return EnvMetadata.from_env(env)
    finally:
        env.close()


__all__ = ["EnvCreator", "env_creator", "get_env_metadata"]
