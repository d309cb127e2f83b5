import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import LogScalar


def test_reductions_and_mask():
    mask = torch.tensor([True, True, False])
    batch = TensorDict(
        {("next", "reward"): torch.tensor([1.0, 2.0, 100.0]), ("collector", "mask"): mask}, [3]
    )
    assert LogScalar()(batch)["next_reward"] == 1.5
    assert LogScalar(reduction="max", include_std=False)(batch) == {
        "next_reward": 2.0,
        "log_pbar": False,
    }
    out = LogScalar(("next", "reward"), "ret", reduction="sum", log_pbar=True)(batch)
    assert (out["ret"], out["log_pbar"]) == (3.0, True)
    assert out["ret_std"] == pytest.approx(0.7071067811865476)


def test_default_logname_from_key_and_errors():
    batch = TensorDict({("a", "b"): torch.ones(2)}, [2])
    assert "a_b" in LogScalar(("a", "b"))(batch)
    with pytest.raises(
        KeyError, match=r"LogScalar: the batch has no entry .*next.*reward.*it has .*a.*b"
    ):
        LogScalar()(batch)
    with pytest.raises(ValueError, match="reduction must be one of"):
        LogScalar(reduction="median")
