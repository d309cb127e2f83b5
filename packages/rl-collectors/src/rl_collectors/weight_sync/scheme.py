"""``WeightSyncScheme``: how ONE model's weights travel from a trainer to its copies.

A scheme has two sides. The sender (the trainer, or a collector speaking for it) calls
``init_on_sender`` once, which builds one transport per worker, then ``send`` at each update.
Each receiver (a worker's copy of the scheme, pickled into its process) calls
``init_on_receiver`` with its worker index and the model to update, then ``receive`` when it
wants the latest weights. Every ``send`` carries a version (1, 2, ...), which the receiver
exposes as ``version`` once it applied them.

A concrete scheme implements ``create_transport``; the transports carry the data
(``TransportBackend``). The collectors accept ``weight_sync_schemes={"policy": scheme}`` (as
TorchRL 0.14) and drive both sides.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from tensordict import TensorDictBase
from torch import nn

from rl_collectors.weight_sync.strategy import ExtractAs, WeightStrategy

WeightSyncBackend: TypeAlias = Literal[
    "none", "direct", "shared", "thread", "process", "multiprocessing", "distributed", "rpc", "ray"
]
_ALIASES = {"direct": "none", "thread": "shared", "multiprocessing": "process"}


@runtime_checkable
class TransportBackend(Protocol):
    """What carries weights from a sender to one receiver.

    ``send_weights`` runs on the sender; ``receive_weights`` on the receiver, which applies
    what arrived to ``model`` with ``strategy`` and returns it (``None`` when nothing newer
    arrived within ``timeout`` seconds; ``None`` timeout waits). ``version`` is the version of
    the weights the receiver holds.
    """

    version: int

    def send_weights(self, weights: Any, *, version: int) -> None: ...

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> Any | None: ...


@runtime_checkable
class InitialSyncTransport(Protocol):
    """A transport that must connect both sides before the first ``send`` (a process group,
    an RPC agent): each side calls its method once, after ``init_on_*``."""

    def setup_connection_and_weights_on_sender(self) -> None: ...

    def setup_connection_and_weights_on_receiver(
        self, *, worker_idx: int, model: Any = None, strategy: WeightStrategy | None = None
    ) -> Any: ...


def resolve_model(context: Any, model_id: str) -> Any:
    """The object at ``model_id`` on ``context``: a dotted path of attributes, where a
    number indexes (``"policy"``, ``"env.transform.0.module"``)."""
    obj = context
    for part in model_id.split("."):
        try:
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
        except (AttributeError, IndexError, KeyError, TypeError) as err:
            raise KeyError(
                f"weight sync: model_id {model_id!r} does not resolve on "
                f"{type(context).__name__}: no {part!r} in {type(obj).__name__}. Pass "
                f"model= explicitly or a model_id naming an attribute path."
            ) from err
    return obj


class WeightSyncScheme(abc.ABC):
    """Synchronises one model's weights from a sender to ``num_workers`` receivers.

    Subclasses implement ``create_transport(worker_idx=..., weights=...)`` and declare their
    backend name (``class MyScheme(WeightSyncScheme, backend="mine")``), which
    ``WeightSyncScheme.from_backend("mine")`` builds.

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``: the format weights travel in.

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import WeightSyncScheme
        >>> scheme = WeightSyncScheme.from_backend("shared")
        >>> trainer, worker = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
        >>> scheme.init_on_sender(model_id="policy", model=trainer, num_workers=1)
        >>> scheme.init_on_receiver(model_id="policy", model=worker, worker_idx=0)
        >>> scheme.send()
        1
        >>> _ = scheme.receive()
        >>> scheme.version, bool((worker.weight == trainer.weight).all())
        (1, True)
    """

    _registry: ClassVar[dict[str, type[WeightSyncScheme]]] = {}

    def __init_subclass__(cls, *, backend: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if backend is not None:
            WeightSyncScheme._registry[backend] = cls

    def __init__(self, strategy: ExtractAs = "tensordict") -> None:
        self.strategy_str = strategy
        self._strategy = WeightStrategy(strategy)
        self._model_id: str | None = None
        self._sender_model: Any = None
        self._sender_transports: list[TransportBackend] | None = None
        self._receiver_model: Any = None
        self._receiver_transport: TransportBackend | None = None
        self._worker_idx: int | None = None
        self._version = 0

    @classmethod
    def from_backend(cls, backend: WeightSyncBackend, **kwargs: Any) -> WeightSyncScheme:
        """The scheme of a backend: ``"none"``, ``"shared"``, ``"process"``,
        ``"distributed"``, ``"rpc"`` or ``"ray"`` (``"direct"``, ``"thread"`` and
        ``"multiprocessing"`` are aliases); ``kwargs`` go to its constructor."""
        name = _ALIASES.get(backend, backend)
        if name not in cls._registry:
            choices = sorted({*cls._registry, *_ALIASES})
            raise ValueError(
                f"WeightSyncScheme.from_backend: unknown backend {backend!r}; expected one of "
                f"{choices}."
            )
        return cls._registry[name](**kwargs)

    # ------------------------------------------------------------------ properties
    @property
    def strategy(self) -> WeightStrategy:
        return self._strategy

    @property
    def model_id(self) -> str | None:
        return self._model_id

    @property
    def worker_idx(self) -> int | None:
        """The receiver's worker index (``None`` on a sender)."""
        return self._worker_idx

    @property
    def version(self) -> int:
        """Sender: how many times weights were sent. Receiver: the version it applied."""
        if self._receiver_transport is not None:
            return self._receiver_transport.version
        return self._version

    @property
    def initialized_on_sender(self) -> bool:
        return self._sender_transports is not None

    @property
    def initialized_on_receiver(self) -> bool:
        return self._receiver_transport is not None

    @property
    def sender_transports(self) -> dict[int, TransportBackend]:
        """``{worker index: transport}`` (empty before ``init_on_sender``)."""
        return dict(enumerate(self._sender_transports or []))

    @property
    def receiver_transport(self) -> TransportBackend | None:
        return self._receiver_transport

    # ------------------------------------------------------------------ set-up
    @abc.abstractmethod
    def create_transport(self, *, worker_idx: int, weights: TensorDictBase) -> TransportBackend:
        """The transport to worker ``worker_idx``; ``weights`` is a template of what will
        travel (the model's weights at ``init_on_sender``)."""

    def init_on_sender(
        self,
        *,
        model_id: str = "policy",
        model: Any = None,
        weights: Any = None,
        context: Any = None,
        num_workers: int = 1,
    ) -> None:
        """Prepares the sending side: one transport per worker.

        Args:
            model_id: the model's name (``"policy"``, or an attribute path on ``context``).
            model: the trainer's model, read when ``send`` gets no weights; defaults to
                ``model_id`` resolved on ``context``.
            weights: a template of the weights when there is no model.
            context: the object that owns the model (a collector).
            num_workers: how many receivers.
        """
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
            raise ValueError(
                f"{type(self).__name__}.init_on_sender: expected num_workers as an int >= 1, "
                f"got {num_workers!r}."
            )
        if model is None and weights is None and context is not None:
            model = resolve_model(context, model_id)
        if model is None and weights is None:
            raise ValueError(
                f"{type(self).__name__}.init_on_sender: pass model=, weights= or a context "
                f"on which model_id {model_id!r} resolves."
            )
        self._model_id = model_id
        self._sender_model = model
        template = self.prepare_weights(model if weights is None else weights)
        self._sender_transports = [
            self.create_transport(worker_idx=i, weights=template) for i in range(num_workers)
        ]
        for transport in self._unique(self._sender_transports):
            if isinstance(transport, InitialSyncTransport):
                transport.setup_connection_and_weights_on_sender()

    def init_on_receiver(
        self,
        *,
        model_id: str = "policy",
        model: Any = None,
        context: Any = None,
        worker_idx: int = 0,
    ) -> None:
        """Prepares the receiving side of worker ``worker_idx`` (in its own copy of the
        scheme): ``receive`` writes into ``model`` (default: ``model_id`` on ``context``)."""
        if self._sender_transports is None:
            raise RuntimeError(
                f"{type(self).__name__}.init_on_receiver: the scheme was never initialised "
                f"on its sender; call init_on_sender first and hand this copy to the worker."
            )
        n = len(self._sender_transports)
        if not isinstance(worker_idx, int) or not 0 <= worker_idx < n:
            raise ValueError(
                f"{type(self).__name__}.init_on_receiver: expected worker_idx in [0, {n}), "
                f"got {worker_idx!r}."
            )
        if model is None and context is not None:
            model = resolve_model(context, model_id)
        if not isinstance(model, nn.Module):
            raise TypeError(
                f"{type(self).__name__}.init_on_receiver: expected the model of {model_id!r} "
                f"to be an nn.Module, got {type(model).__name__}."
            )
        self._model_id = model_id
        self._receiver_model = model
        self._worker_idx = worker_idx
        self._receiver_transport = self._sender_transports[worker_idx]
        if isinstance(self._receiver_transport, InitialSyncTransport):
            self._receiver_transport.setup_connection_and_weights_on_receiver(
                worker_idx=worker_idx, model=model, strategy=self._strategy
            )

    # ------------------------------------------------------------------ data
    def prepare_weights(self, weights: Any = None) -> Any:
        """``weights`` (or the sender model's) in the strategy's format."""
        source = self._sender_model if weights is None else weights
        if source is None:
            raise ValueError(
                f"{type(self).__name__}.send: no weights given and no model to read them "
                f"from; pass weights or init_on_sender(model=...)."
            )
        return self._strategy.extract_weights(source)

    def send(self, weights: Any = None, *, worker_ids: int | Sequence[int] | None = None) -> int:
        """Sends ``weights`` (a module, TensorDict or state dict; default: the sender
        model's) to ``worker_ids`` (default: all); returns the new version."""
        if self._sender_transports is None:
            raise RuntimeError(
                f"{type(self).__name__}.send: call init_on_sender before sending weights."
            )
        data = self.prepare_weights(weights)
        if worker_ids is None:
            targets = self._sender_transports
        else:
            ids = [worker_ids] if isinstance(worker_ids, int) else list(worker_ids)
            bad = [i for i in ids if not 0 <= i < len(self._sender_transports)]
            if bad:
                raise ValueError(
                    f"{type(self).__name__}.send: unknown worker ids {bad}; the workers are "
                    f"0 to {len(self._sender_transports) - 1}."
                )
            targets = [self._sender_transports[i] for i in ids]
        self._version += 1
        for transport in self._unique(targets):
            transport.send_weights(data, version=self._version)
        return self._version

    def receive(self, timeout: float | None = 0.0) -> Any | None:
        """Applies the newest weights that arrived (waiting up to ``timeout`` seconds,
        ``None`` for ever) to the receiver's model; returns them, or ``None`` if none
        newer came."""
        if self._receiver_transport is None:
            raise RuntimeError(
                f"{type(self).__name__}.receive: call init_on_receiver before receiving."
            )
        return self._receiver_transport.receive_weights(
            timeout, model=self._receiver_model, strategy=self._strategy
        )

    def shutdown(self) -> None:
        """Releases the transports' resources (idempotent)."""
        for transport in self._unique(self._sender_transports or []):
            close = getattr(transport, "close", None)
            if callable(close):
                close()

    def __getstate__(self) -> dict[str, Any]:
        # A copy handed to a worker carries its transports, not the trainer's model.
        state = self.__dict__.copy()
        state["_sender_model"] = None
        return state

    @staticmethod
    def _unique(transports: list[TransportBackend]) -> list[TransportBackend]:
        """Each transport once (a shared-memory scheme uses one for all workers)."""
        return list({id(t): t for t in transports}.values())

    def __repr__(self) -> str:
        role = "sender" if self.initialized_on_sender else "uninitialised"
        if self.initialized_on_receiver:
            role = f"receiver {self._worker_idx}"
        return f"{type(self).__name__}(model_id={self._model_id!r}, {role}, version={self.version})"


__all__ = [
    "TransportBackend",
    "InitialSyncTransport",
    "WeightSyncBackend",
    "WeightSyncScheme",
]
