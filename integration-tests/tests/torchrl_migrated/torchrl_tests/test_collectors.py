"""Collectors (both generations of TorchRL's names) and code run in a subprocess."""

import subprocess
import sys

import pytest
import torch
from tensordict import TensorDict
from torchrl.collectors import Collector, SyncDataCollector
from torchrl.data import Bounded, Composite, Unbounded
from torchrl.envs import EnvBase


class DriftEnv(EnvBase):
    """Observation grows by the action; never terminates."""

    def __init__(self):
        super().__init__(batch_size=torch.Size([]))
        self.observation_spec = Composite(observation=Unbounded(shape=(1,)), shape=())
        self.action_spec = Bounded(0.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))

    def _reset(self, tensordict=None, **kwargs):
        return TensorDict({"observation": torch.zeros(1)}, batch_size=[])

    def _step(self, tensordict):
        observation = tensordict["observation"] + tensordict["action"]
        return TensorDict(
            {
                "observation": observation,
                "reward": observation.clone(),
                "done": torch.zeros(1, dtype=torch.bool),
                "terminated": torch.zeros(1, dtype=torch.bool),
            },
            batch_size=[],
        )

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize("collector_class", [SyncDataCollector, Collector])
def test_collector_yields_batches(collector_class):
    collector = collector_class(
        DriftEnv,
        lambda td: td.set("action", torch.ones(1)),
        frames_per_batch=5,
        total_frames=15,
    )
    batches = list(collector)
    collector.shutdown()
    assert len(batches) == 3
    assert all(b.batch_size == (5,) for b in batches)
    observations = torch.cat([b["next", "observation"] for b in batches]).squeeze(-1)
    assert observations.tolist() == [float(i) for i in range(1, 16)]


CODE = """
from torchrl.data import Unbounded
from torchrl.envs.utils import step_mdp
print(Unbounded(shape=(2,)).zero().tolist(), step_mdp.__name__)
"""


def test_code_run_in_a_subprocess():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[0.0,", "0.0]", "step_mdp"]
