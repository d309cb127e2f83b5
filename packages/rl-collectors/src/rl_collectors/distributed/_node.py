"""A collector node: one process (or SLURM job) that runs a collector for the trainer.

``node_main`` connects to the trainer's store, takes its configuration (from its arguments
under the ``"mp"`` launcher, from the store otherwise), builds its collector, and answers
the trainer's commands until ``CLOSE`` or until the trainer is gone. An error is written to
the store (``error/<rank>``) before the node exits, so the trainer reports it by name.
"""

from __future__ import annotations

import contextlib
import gc
import pickle
import traceback
from typing import Any

import torch
from tensordict import TensorDict

from rl_collectors.distributed import _wire
from rl_collectors.utils import TRAJ_IDS
from rl_collectors.weight_sync import DistributedWeightSyncScheme

POLICY_VERSION = ("collector", "policy_version")


def build_collector(config: dict[str, Any]) -> Any:
    """The node's collector: ``collector_class(env factory or factories, policy, ...)``."""
    cls = config["collector_class"]
    workers = config["num_workers_per_collector"]
    envs = config["create_env_fn"] if workers == 1 else [config["create_env_fn"]] * workers
    kwargs = {"frames_per_batch": config["frames_per_batch"], **config["collector_kwargs"]}
    return cls(envs, config["policy"], **kwargs)


def node_main(
    rank: int,
    world_size: int,
    host: str,
    port: int,
    backend: str,
    timeout: float,
    config: dict[str, Any] | None = None,
) -> None:
    """Runs collector node ``rank`` (1..world_size-1) until the trainer closes it."""
    # A forked node inherits the trainer's objects, among them garbage process groups of
    # earlier collectors: collecting them here would run destructors that join threads this
    # process does not have, and hang. The node never collects what it inherited.
    gc.freeze()
    store = _wire.make_store(host, port, world_size, False, timeout)
    collector = None
    try:
        if config is None:
            config = pickle.loads(store.get(f"config/{rank}"))
        torch.set_num_threads(1)
        store.set(f"ready/{rank}", b"1")
        group = _wire.make_group(store, rank, world_size, backend, timeout)
        collector = build_collector(config)
        _serve(rank, world_size, store, group, collector, config)
    except Exception:
        with contextlib.suppress(Exception):
            store.set(f"error/{rank}", traceback.format_exc().encode())
        raise SystemExit(1) from None
    finally:
        if collector is not None:
            with contextlib.suppress(Exception):
                collector.shutdown()


def _serve(
    rank: int, world_size: int, store: Any, group: Any, collector: Any, config: dict[str, Any]
) -> None:
    policy = collector.policy if hasattr(collector, "policy") else config["policy"]
    schemes = config.get("weight_sync_schemes") or {}
    for model_id, scheme in schemes.items():
        if isinstance(scheme, DistributedWeightSyncScheme):
            scheme.attach(group)
        scheme.init_on_receiver(model_id=model_id, context=collector, worker_idx=rank - 1)
    weights = None
    if not schemes and isinstance(policy, torch.nn.Module):
        weights = TensorDict.from_module(policy).data
    weight_packer = _wire.Packer.of(weights) if weights is not None else None
    packer = buffer = None
    version = 0
    nodes = world_size - 1
    order = torch.empty(2, dtype=torch.int64)
    while True:
        group.recv([order], 0, 0).wait()
        code, argument = order.tolist()
        if code == _wire.COLLECT:
            batch = collector.next()
            batch.set(POLICY_VERSION, torch.full(batch.batch_size, version, dtype=torch.int64))
            ids = batch.get(TRAJ_IDS, None)
            if ids is not None:
                batch.set(TRAJ_IDS, ids * nodes + (rank - 1))
            if packer is None:
                spec = _wire.layout(batch)
                store.set(f"meta/{rank}", pickle.dumps(spec))
                packer = _wire.Packer(spec)
                buffer = packer.empty()
            group.send([packer.pack(batch, buffer)], 0, 0).wait()
        elif code == _wire.UPDATE:
            if schemes:
                for scheme in schemes.values():
                    scheme.receive(timeout=None)
            elif weight_packer is not None:
                incoming = weight_packer.empty()
                group.recv([incoming], 0, 1).wait()
                with torch.no_grad():
                    weights.update_(weight_packer.unpack(incoming))
            version = argument
        elif code == _wire.SEED:
            torch.manual_seed(argument)
            following = collector.set_seed(argument)
            collector.reset()
            group.send([torch.tensor([following], dtype=torch.int64)], 0, 0).wait()
        elif code == _wire.RESET:
            collector.reset()
            group.send([torch.zeros(1, dtype=torch.int64)], 0, 0).wait()
        elif code == _wire.CLOSE:
            return
        else:
            raise ValueError(f"collector node {rank}: unknown command {code}.")
