import json

import pytest
import torch

from rl_objectives.loggers import MLFlowLogger

pytest.importorskip("mlflow", reason='needs "rl-objectives[mlflow]"')


def test_everything_is_read_back_from_the_local_store(tmp_path, monkeypatch):
    from PIL import Image, ImageSequence

    # MLflow 3 refuses its folder store unless asked for it explicitly.
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    logger = MLFlowLogger("exp", uri, run_name="first", tags={"team": "rl"})
    logger.log_scalar("train/reward", 1.5, step=10)
    logger.log_scalar("train/reward", torch.tensor(2.5), step=20)
    logger.log_video("eval/rollout", torch.rand(3, 3, 4, 5), step=20)
    logger.log_histogram("weights", torch.tensor([0.0, 1.0, 1.0]), step=20, bins=2)
    logger.log_hparams({"lr": 1e-3, "net": {"depth": 2}})
    logger.close()

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(logger.run_id)
    assert (run.info.run_name, run.info.status, run.data.tags["team"]) == (
        "first",
        "FINISHED",
        "rl",
    )
    history = client.get_metric_history(logger.run_id, "train/reward")
    assert [(m.step, m.value) for m in history] == [(10, 1.5), (20, 2.5)]
    assert run.data.params == {"lr": "0.001", "net.depth": "2"}

    video = client.download_artifacts(logger.run_id, "videos/eval/rollout_20.gif", str(tmp_path))
    with Image.open(video) as gif:
        assert (gif.size, len(list(ImageSequence.Iterator(gif)))) == ((5, 4), 3)
    histogram = client.download_artifacts(
        logger.run_id, "histograms/weights_20.json", str(tmp_path)
    )
    with open(histogram) as file:
        assert json.load(file) == {"step": 20, "bin_edges": [0.0, 0.5, 1.0], "counts": [1, 2]}

    # A second logger of the same experiment adds a run to it.
    second = MLFlowLogger("exp", uri)
    assert second.experiment.info.experiment_id == run.info.experiment_id
    assert second.run_id != logger.run_id
    second.close()
