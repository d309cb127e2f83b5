import time

import pytest
import torch

from rl_objectives.trainers import LogTiming, Trainer


def test_times_collection_and_optimisation(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    trainer = Trainer(
        collector, 24, loss, torch.optim.SGD(loss.parameters(), lr=0.01), progress_bar=False
    )
    trainer.register_op("batch_process", lambda batch: time.sleep(0.03))  # counts as collection
    trainer.register_op("post_optim", lambda: time.sleep(0.05))  # counts as optimisation
    per_call = LogTiming()
    per_call.register(trainer)
    totals = LogTiming("cumulative", percall=False)
    totals.register(trainer, name="totals")
    trainer.train()  # 3 batches
    logs = trainer.latest_logs
    assert 0.03 <= logs["time/collect"] < 0.03 + 0.5
    assert 0.05 <= logs["time/optim"] < 0.05 + 0.5
    assert logs["time/total"] == pytest.approx(logs["time/collect"] + logs["time/optim"])
    assert logs["cumulative/optim"] >= 3 * 0.05
    assert totals.state_dict()["optim_total"] == logs["cumulative/optim"]


def test_bad_prefix():
    with pytest.raises(ValueError, match="prefix must be a non-empty str"):
        LogTiming("")
