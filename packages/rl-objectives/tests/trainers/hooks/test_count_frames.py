import torch
from tensordict import TensorDict

from rl_objectives.trainers import CountFramesLog


def test_counts_valid_frames_and_restores_its_count():
    hook = CountFramesLog(frame_skip=2, log_pbar=True)
    mask = torch.tensor([True, False, True])
    assert hook(TensorDict({("collector", "mask"): mask}, [3])) == {"n_frames": 4, "log_pbar": True}
    assert hook(TensorDict(batch_size=[5]))["n_frames"] == 14
    other = CountFramesLog()
    other.load_state_dict(hook.state_dict())
    assert other.frame_count == 14
