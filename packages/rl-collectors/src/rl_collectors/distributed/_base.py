"""What the collectors over started nodes (``DistributedCollector``, ``RPCCollector``) share:
their argument checks, the look at their nodes, counters and checkpoints, their weight
updaters' merge of the weights to send, and shutdown at exit.

A subclass starts its nodes (``self._nodes``: handles with ``gone()``), says why node ``i``
is gone (``_gone``), stops everything (``_stop``) and sends the policy's weights tagged with
``policy_version`` (``_push``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_collectors._common import check_positive_int, check_total_frames
from rl_collectors.base import BaseCollector
from rl_collectors.weight_update import WeightUpdaterBase

_STATE_KEYS = frozenset({"frames", "iter", "policy_version", "policy_state_dict"})


class _NodeCollectorBase(BaseCollector):
    """A collector whose batches come from collector nodes (ranks 1..N) it started."""

    num_nodes: int
    policy: Any
    policy_version: int
    total_frames: int
    _frames: int
    _iter: int
    _closed: bool

    def _check_arguments(
        self,
        create_env_fn: Any,
        *,
        frames_per_batch: Any,
        total_frames: Any,
        num_workers_per_collector: Any,
        launcher: str,
        launchers: tuple[str, ...],
        timeout: Any,
        sync: bool,
    ) -> int:
        """Checks the arguments every node collector takes, sets ``total_frames``; returns
        the number of nodes."""
        where = type(self).__name__
        if isinstance(create_env_fn, str) or not isinstance(create_env_fn, Sequence):
            raise TypeError(
                f"{where}: expected create_env_fn as a list of env factories (one per node), "
                f"got {type(create_env_fn).__name__}."
            )
        if not create_env_fn:
            raise ValueError(f"{where}: expected at least one env factory, got an empty list.")
        check_positive_int(where, "frames_per_batch", frames_per_batch)
        self.total_frames = check_total_frames(where, total_frames)
        check_positive_int(where, "num_workers_per_collector", num_workers_per_collector)
        if launcher not in launchers:
            raise ValueError(f"{where}: expected launcher in {launchers}, got {launcher!r}.")
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"{where}: expected timeout as seconds > 0, got {timeout!r}.")
        n = len(create_env_fn)
        if sync and frames_per_batch % n:
            raise ValueError(
                f"{where}: with sync=True each of the {n} nodes collects frames_per_batch / "
                f"{n} frames; got frames_per_batch={frames_per_batch}, not a multiple of {n}."
            )
        return n

    def _register_exit_hook(self) -> None:
        """Shuts the nodes down when the interpreter exits (a weak reference: the hook does
        not keep the collector alive)."""
        self._exit_hook = functools.partial(_shutdown_at_exit, weakref.ref(self))
        atexit.register(self._exit_hook)

    def _unregister_exit_hook(self) -> None:
        with contextlib.suppress(AttributeError):
            atexit.unregister(self._exit_hook)

    # ------------------------------------------------------------------ nodes
    def _gone(self, i: int) -> str | None:
        """Why node ``i`` is gone, or ``None``."""
        raise NotImplementedError

    def _any_gone(self) -> str | None:
        for i in range(self.num_nodes):
            gone = self._gone(i)
            if gone is not None:
                return gone
        return None

    def _fail(self, message: str) -> None:
        self._stop(graceful=False)
        raise RuntimeError(message)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.{what}: the collector was shut down.")

    def _done(self) -> bool:
        return 0 < self.total_frames <= self._frames

    # ------------------------------------------------------------------ control
    def _push(self, weights: Any, worker_ids: Any) -> None:
        """Sends the policy's weights (``weights`` loaded into it first) to every node (or
        ``worker_ids``), tagged with ``policy_version``."""
        raise NotImplementedError

    def _stop(self, *, graceful: bool) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """What a restarted trainer needs to go on with fresh nodes: the frame and batch
        counters, the policy version and the policy's state dict (the nodes' envs are not
        saved: fresh nodes start new episodes)."""
        policy = self.policy
        return {
            "frames": self._frames,
            "iter": self._iter,
            "policy_version": self.policy_version,
            "policy_state_dict": policy.state_dict() if isinstance(policy, nn.Module) else None,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores ``state_dict()``'s counters and policy, and sends the policy to the nodes
        under the saved version: the batches of this collector's (fresh) nodes go on from
        the checkpoint."""
        where = type(self).__name__
        self._check_open("load_state_dict")
        missing = _STATE_KEYS - set(state)
        if missing:
            raise KeyError(
                f"{where}.load_state_dict: expected the keys of state_dict(), "
                f"missing {sorted(missing)}."
            )
        self._frames, self._iter = state["frames"], state["iter"]
        self.policy_version = state["policy_version"]
        if state["policy_state_dict"] is not None:
            if not isinstance(self.policy, nn.Module):
                raise TypeError(
                    f"{where}.load_state_dict: the state holds policy weights but this "
                    f"collector's policy is a {type(self.policy).__name__}."
                )
            self.policy.load_state_dict(state["policy_state_dict"])
            self._push(None, None)

    def shutdown(self) -> None:
        """Closes every node (killing those that do not exit in time); idempotent."""
        self._stop(graceful=True)

    def __del__(self) -> None:
        if sys.is_finalizing():
            return
        with contextlib.suppress(Exception):
            self.shutdown()


class _NodeWeightUpdaterBase(WeightUpdaterBase):
    """A weight updater of a node collector: one worker per node, the weights read from the
    collector's policy (``server_weights`` merged into it first)."""

    def __init__(self, collector: _NodeCollectorBase) -> None:
        super().__init__()
        self.register_collector(collector)

    def all_worker_ids(self) -> list[int]:
        return list(range(self.collector.num_nodes))

    def _get_server_weights(self) -> TensorDictBase:
        return TensorDict.from_module(self.collector.policy).data

    def _policy_weights(self, server_weights: Any) -> TensorDictBase:
        """The policy's weights (a view), ``server_weights`` written into them first."""
        full = TensorDict.from_module(self.collector.policy).data
        if server_weights is not full:
            with torch.no_grad():
                full.update_(server_weights)
        return full


def _shutdown_at_exit(ref: Callable[[], _NodeCollectorBase | None]) -> None:
    collector = ref()
    if collector is not None:
        collector.shutdown()
