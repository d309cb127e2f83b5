"""RPCCollector over torch.distributed.rpc: real spawned node processes on localhost, each
scenario in a fresh process (torch starts one RPC agent per process)."""

import json
import os
import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import torch
from torch import nn

from rl_collectors.distributed import RPCCollector
from rl_collectors.weight_sync import RPCTransport, RPCWeightSyncScheme
from rl_core.testing import CountingEnv

make = partial(CountingEnv, max_count=4, batch_size=[2])


def run_scenario(name, *args):
    """Runs ``rpc_scenarios.py name *args`` in a fresh process; returns the facts it printed."""
    script = Path(__file__).with_name("rpc_scenarios.py")
    result = subprocess.run(
        [sys.executable, str(script), name, *args], capture_output=True, text=True, timeout=400
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("FACTS ")]
    assert result.returncode == 0, result.stderr[-3000:]
    assert lines, result.stdout[-3000:]
    return json.loads(lines[-1][len("FACTS ") :])


def assert_gone(pids):
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.slow  # a fresh process spawning two nodes (a torch import each)
def test_sync_frames_match_local_weights_arrive_and_a_push_to_a_dead_node_fails_fast():
    facts = run_scenario("sync")
    assert facts["updater"] == "RPCWeightUpdater"
    assert facts["final_seed"] == 12  # CountingEnv.set_seed returns seed + 1, node by node
    assert facts["shapes"] == [[4, 4], [4, 4]]  # each node's [2, 4] share, concatenated
    assert facts["match_local"]
    assert facts["probe_before"] == [0.0]
    assert facts["weights_identical"]  # bit for bit, on both nodes
    assert facts["versions"] == [1]
    # A push to a node that was killed fails fast, naming it.
    assert re.search(
        r"collector node 0 \(rank 1, RPC worker 'COLLECTOR_NODE_1', pid \d+, exit code -9\)",
        facts["push_error"],
    ), facts
    assert facts["seconds_to_push_error"] < 3.0
    assert facts["alive_after_shutdown"] == [False, False]
    assert_gone(facts["node_pids"])
    assert "torch cannot start a second one in the same process" in facts["second_collector"]


@pytest.mark.slow  # a fresh process spawning two nodes (a torch import each)
def test_async_batches_scheme_weights_and_a_killed_node_named_within_3_s():
    facts = run_scenario("async")
    assert facts["batches_match_their_node"] == [True] * 4
    assert facts["nodes_with_new_weights"] == [0, 1]
    assert re.search(
        r"collector node 1 \(rank 2, RPC worker 'COLLECTOR_NODE_2', pid \d+, exit code -9\) is gone",
        facts["error"],
    ), facts["error"]
    assert facts["seconds_to_error"] < 3.0
    assert facts["alive_after_shutdown"] == [False, False]
    assert_gone(facts["node_pids"])


@pytest.mark.slow  # two fresh processes spawning two nodes each
def test_a_restarted_trainer_goes_on_from_its_checkpoint_with_fresh_nodes(tmp_path):
    state = tmp_path / "trainer.pt"
    first = run_scenario("checkpoint", str(state))
    assert_gone(first["node_pids"])
    # A new trainer process: a fresh (zero) policy and new nodes, then the checkpoint.
    facts = run_scenario("restart", str(state))
    assert facts["versions"] == [1]  # the saved version, not a new one
    assert facts["weights_identical"]  # the saved weights, on both fresh nodes
    assert facts["frames"] == 48  # two batches before the checkpoint, one after
    assert facts["next_versions"] == [2]
    assert_gone(facts["node_pids"])


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="expected create_env_fn as a list of env factories"):
        RPCCollector(make, None, frames_per_batch=8)
    with pytest.raises(ValueError, match="expected launcher in"):
        RPCCollector([make], None, frames_per_batch=8, launcher="ssh")
    with pytest.raises(ValueError, match="frames_per_batch=7, not a multiple of 2"):
        RPCCollector([make, make], None, frames_per_batch=7, sync=True)
    with pytest.raises(ValueError, match=r"collector_class as a class or one of .* got 'multi'"):
        RPCCollector([make], None, frames_per_batch=8, collector_class="multi")
    with pytest.raises(ValueError, match="max_weight_update_interval as -1"):
        RPCCollector([make], None, frames_per_batch=8, max_weight_update_interval=0)
    with pytest.raises(ValueError, match="expected worker_name as the receiver's RPC name"):
        RPCTransport("")
    with pytest.raises(ValueError, match="2 worker_names for more workers"):
        RPCWeightSyncScheme(worker_names=["a", "b"]).init_on_sender(
            model=nn.Linear(1, 1), num_workers=3
        )


def test_a_send_to_an_unknown_worker_names_it():
    # No RPC agent runs in this process: the send fails at once and names the receiver.
    transport = RPCTransport("COLLECTOR_NODE_9", timeout=1.0)
    with pytest.raises(RuntimeError, match="to RPC worker 'COLLECTOR_NODE_9' failed"):
        transport.send_weights(torch.zeros(1), version=1)
