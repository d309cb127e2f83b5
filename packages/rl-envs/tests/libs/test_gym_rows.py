import numpy as np
import torch

from rl_envs.libs._gym_rows import StepRows
from rl_envs.libs._gym_stepper import GymNumpyStepper


def _writer(rows: StepRows):
    """``write(obs, reward, terminated, truncated)``: one step through the stepper's rule."""
    stepper = GymNumpyStepper(None, None, vector=bool(rows.batch))

    def write(*outputs):
        return rows.write(stepper, *outputs)

    return write


def test_single_env_rows_hold_each_step_and_are_never_rewritten():
    write = _writer(StepRows((), ("observation", (2,), np.dtype(np.float32)), rows=4))
    outs = [write(np.array([i, -i], np.float32), float(i), i % 3 == 0, i == 5) for i in range(10)]
    for i, out in enumerate(outs):
        assert out["observation"].tolist() == [i, -i]
        assert out["reward"].tolist() == [float(i)]
        assert out["terminated"].tolist() == [i % 3 == 0]
        assert out["truncated"].tolist() == [i == 5]
        assert out["done"].tolist() == [i % 3 == 0 or i == 5]
        assert out["reward"].dtype == torch.float32
        assert out["done"].dtype == torch.bool


def test_vector_rows_take_gymnasium_arrays():
    write = _writer(StepRows((3,), None, rows=2))
    outs = []
    for i in range(5):
        terminated = np.array([True, False, i == 2])
        truncated = np.array([False, i == 1, False])
        outs.append(write(None, np.arange(3, dtype=np.float64) + i, terminated, truncated))
    assert "observation" not in outs[0]
    for i, out in enumerate(outs):
        assert out["reward"].shape == (3, 1)
        assert out["reward"].squeeze(-1).tolist() == [i, i + 1, i + 2]
        assert out["done"].squeeze(-1).tolist() == [True, i == 1, i == 2]
        assert out["truncated"].squeeze(-1).tolist() == [False, i == 1, False]


def test_tensors_of_different_steps_do_not_overlap():
    write = _writer(StepRows((), ("observation", (1,), np.dtype(np.float32)), rows=3))
    first = write(np.zeros(1, np.float32), 0.0, False, False)
    second = write(np.ones(1, np.float32), 1.0, False, False)
    first["observation"].add_(10)
    assert second["observation"].tolist() == [1.0]


def test_reset_rows_merge_the_reset_sub_envs_and_hold_false_flags():
    rows = StepRows((3,), ("observation", (2,), np.dtype(np.float32)), rows=2)
    previous = np.arange(6, dtype=np.float32).reshape(3, 2)
    reset = -np.ones((3, 2), dtype=np.float32)
    outs = [rows.write_reset(previous, np.array([False, True, False]), reset) for _ in range(3)]
    outs.append(rows.write_reset(previous, None, reset))
    for out in outs[:3]:
        assert out["observation"].tolist() == [[0, 1], [-1, -1], [4, 5]]
    assert outs[3]["observation"].tolist() == [[-1, -1]] * 3
    for out in outs:
        for key in ("done", "terminated", "truncated"):
            assert out[key].shape == (3, 1)
            assert not out[key].any()
    assert previous.tolist() == [[0, 1], [2, 3], [4, 5]]  # the input is not written to
