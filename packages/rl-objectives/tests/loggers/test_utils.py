import pytest

from rl_objectives.loggers import (
    CSVLogger,
    MLFlowLogger,
    TensorboardLogger,
    WandbLogger,
    get_logger,
)


def test_builds_each_kind(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    csv = get_logger("csv", str(tmp_path / "csv"), "exp", video_format="gif")
    assert isinstance(csv, CSVLogger)
    assert csv.video_format == "gif"
    assert (tmp_path / "csv" / "exp").is_dir()
    tensorboard = get_logger("tensorboard", str(tmp_path / "tb"), "exp")
    assert isinstance(tensorboard, TensorboardLogger)
    tensorboard.close()
    mlflow = get_logger("mlflow", str(tmp_path / "mlruns"), "exp")
    assert isinstance(mlflow, MLFlowLogger)
    assert mlflow.client.get_experiment_by_name("exp") is not None
    mlflow.close()
    wandb = get_logger("wandb", str(tmp_path / "wandb"), "exp", offline=True)
    assert isinstance(wandb, WandbLogger)
    wandb.close()
    assert any((tmp_path / "wandb" / "wandb").glob("offline-run-*"))


def test_unknown_kind():
    with pytest.raises(ValueError, match=r"logger_type must be one of \('csv', "):
        get_logger("neptune", "logs", "exp")
