"""Runs one RPCCollector scenario in a fresh process (torch starts one RPC agent per process)
and prints what it saw as JSON; tests/distributed/test_rpc.py checks it.

Usage: python rpc_scenarios.py sync|async, or checkpoint|restart PATH (the trainer's state)
"""

import json
import os
import signal
import sys
import time
from functools import partial

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import SyncDataCollector
from rl_collectors.distributed import RPCCollector
from rl_collectors.weight_sync import RPCWeightSyncScheme
from rl_core.testing import CountingEnv

make = partial(CountingEnv, max_count=4, batch_size=[2])
WEIGHTS = [0.1, -2.5, 3e-7]


class Probe(nn.Module):
    """Random 0/1 actions (torch's RNG) and its weights written into the batch: what a node
    holds is read bit for bit."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(3))

    def forward(self, obs):
        action = torch.randint(0, 2, (*obs.shape[:-1], 1))
        return action, self.w.detach().expand(*obs.shape[:-1], 3).clone()


def probe_policy():
    return TensorDictModule(Probe(), in_keys=["observation"], out_keys=["action", "probe"])


def local_batches(seeds, frames, n_batches):
    """The oracle: each node's envs collected here with the same seeds."""
    out = []
    for seed in seeds:
        collector = SyncDataCollector(make(), probe_policy(), frames_per_batch=frames)
        torch.manual_seed(seed)
        collector.set_seed(seed)
        out.append([collector.next().exclude("collector", "probe") for _ in range(n_batches)])
    return out


def set_weights(policy):
    with torch.no_grad():
        policy.module.w.copy_(torch.tensor(WEIGHTS))


def sync_scenario(facts):
    policy = probe_policy()
    collector = RPCCollector([make, make], policy, frames_per_batch=16, sync=True)
    processes = [node.process for node in collector._nodes]
    facts["node_pids"] = [p.pid for p in processes]
    facts["updater"] = type(collector.weight_updater).__name__
    facts["final_seed"] = collector.set_seed(10)
    batches = [collector.next(), collector.next()]
    facts["shapes"] = [list(b.batch_size) for b in batches]
    expected = local_batches([10, 11], 8, 2)
    facts["match_local"] = all(
        bool((b.exclude("collector", "probe") == torch.cat([expected[0][k], expected[1][k]])).all())
        for k, b in enumerate(batches)
    )
    facts["probe_before"] = batches[-1]["probe"].unique().tolist()
    set_weights(policy)
    collector.update_policy_weights_()
    batch = collector.next()
    facts["weights_identical"] = torch.equal(batch["probe"], torch.tensor(WEIGHTS).expand(4, 4, 3))
    facts["versions"] = batch["collector", "policy_version"].unique().tolist()
    os.kill(processes[0].pid, signal.SIGKILL)
    processes[0].join(5)
    pushed_at = time.monotonic()
    try:
        collector.update_policy_weights_()
    except RuntimeError as err:
        facts["push_error"] = str(err)
        facts["seconds_to_push_error"] = time.monotonic() - pushed_at
    collector.shutdown()
    facts["alive_after_shutdown"] = [p.is_alive() for p in processes]
    try:
        RPCCollector([make], None, frames_per_batch=8)
    except RuntimeError as err:
        facts["second_collector"] = str(err)


def async_scenario(facts):
    policy = probe_policy()
    collector = RPCCollector(
        [make, make],
        policy,
        frames_per_batch=8,
        weight_sync_schemes={"policy": RPCWeightSyncScheme()},
    )
    processes = [node.process for node in collector._nodes]
    facts["node_pids"] = [p.pid for p in processes]
    collector.set_seed(10)
    expected = local_batches([10, 11], 8, 4)
    seen = [0, 0]
    matches = []
    for _ in range(4):  # any node may deliver any share; trajectory ids say which
        batch = collector.next()
        node = int(batch["collector", "traj_ids"][0, 0]) % 2
        matches.append(
            bool((batch.exclude("collector", "probe") == expected[node][seen[node]]).all())
        )
        seen[node] += 1
    facts["batches_match_their_node"] = matches
    set_weights(policy)
    collector.update_policy_weights_()
    updated = set()
    for _ in range(20):  # a batch in flight during the update still has the old weights
        batch = collector.next()
        if (batch["collector", "policy_version"] == 1).all():
            assert torch.equal(batch["probe"], torch.tensor(WEIGHTS).expand(2, 4, 3))
            updated.add(int(batch["collector", "traj_ids"][0, 0]) % 2)
        if updated == {0, 1}:
            break
    facts["nodes_with_new_weights"] = sorted(updated)
    victim = processes[1]
    os.kill(victim.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    try:
        for _ in range(1000):
            collector.next()
    except RuntimeError as err:
        facts["error"] = str(err)
        facts["seconds_to_error"] = time.monotonic() - killed_at
    collector.shutdown()
    for p in processes:
        p.join(5)
    facts["alive_after_shutdown"] = [p.is_alive() for p in processes]


def checkpoint_scenario(facts):
    """The first trainer: a weight push, a batch, then its state saved to ``sys.argv[2]``."""
    policy = probe_policy()
    collector = RPCCollector([make, make], policy, frames_per_batch=16, sync=True)
    collector.next()
    set_weights(policy)
    collector.update_policy_weights_()
    collector.next()
    torch.save(collector.state_dict(), sys.argv[2])
    facts["node_pids"] = [node.process.pid for node in collector._nodes]
    collector.shutdown()


def restart_scenario(facts):
    """A restarted trainer (fresh policy, fresh nodes) going on from ``sys.argv[2]``."""
    collector = RPCCollector([make, make], probe_policy(), frames_per_batch=16, sync=True)
    facts["node_pids"] = [node.process.pid for node in collector._nodes]
    collector.load_state_dict(torch.load(sys.argv[2]))
    batch = collector.next()
    facts["versions"] = batch["collector", "policy_version"].unique().tolist()
    facts["weights_identical"] = torch.equal(batch["probe"], torch.tensor(WEIGHTS).expand(4, 4, 3))
    facts["frames"] = collector._frames
    collector.update_policy_weights_()
    facts["next_versions"] = collector.next()["collector", "policy_version"].unique().tolist()
    collector.shutdown()


SCENARIOS = {
    "sync": sync_scenario,
    "async": async_scenario,
    "checkpoint": checkpoint_scenario,
    "restart": restart_scenario,
}

if __name__ == "__main__":
    facts = {"pid": os.getpid()}
    SCENARIOS[sys.argv[1]](facts)
    print("FACTS " + json.dumps(facts), flush=True)
