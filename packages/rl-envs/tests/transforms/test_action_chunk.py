"""ActionChunkTransform: chunks of upcoming actions against a hand-written loop, episode
ends inside a window, an env left as it is, and bad input (the replay-buffer sample path
is in integration-tests/tests/test_imitation.py)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_envs.transforms import ActionChunkTransform
from rl_envs.transforms.action_chunk import action_chunks


def _reference(action, chunk_size, done):
    """The definition, one slot at a time: slot j of step t is a[t + j] while t + j stays in
    the window and no episode ended at a step in [t, t + j); otherwise the episode's last."""
    rows, steps, _ = action.shape
    chunk = torch.empty(rows, steps, chunk_size, action.shape[-1], dtype=action.dtype)
    pad = torch.empty(rows, steps, chunk_size, dtype=torch.bool)
    for b in range(rows):
        for t in range(steps):
            last = t
            while last < steps - 1 and not done[b, last]:
                last += 1
            for j in range(chunk_size):
                pad[b, t, j] = t + j > last
                chunk[b, t, j] = action[b, min(t + j, last)]
    return chunk, pad


def test_chunks_match_the_definition_with_episode_ends_inside_windows():
    generator = torch.Generator().manual_seed(0)
    action = torch.randn(3, 9, 2, generator=generator, dtype=torch.float64)
    done = torch.rand(3, 9, generator=generator) < 0.25
    done[1] = False
    td = TensorDict(action=action, batch_size=[3, 9])
    td["next", "done"] = done.unsqueeze(-1)
    out = ActionChunkTransform(4)(td)
    chunk, pad = _reference(action, 4, done)
    torch.testing.assert_close(out["vla_action", "chunk"], chunk, rtol=0, atol=0)
    assert torch.equal(out["action_is_pad"], pad)
    # without the done entry (or with done_key=None) each window is one episode
    no_done = _reference(action, 4, torch.zeros(3, 9, dtype=torch.bool))
    ignored = ActionChunkTransform(4, done_key=None)(td.clone())
    torch.testing.assert_close(ignored["vla_action", "chunk"], no_done[0], rtol=0, atol=0)
    chunk2, pad2 = action_chunks(action, 4)
    torch.testing.assert_close(chunk2, no_done[0], rtol=0, atol=0)
    assert torch.equal(pad2, no_done[1])


def test_custom_keys_and_a_chunk_longer_than_the_window():
    td = TensorDict(batch_size=[2])
    td["agent", "act"] = torch.arange(2.0).view(2, 1)
    t = ActionChunkTransform(
        3, action_key=("agent", "act"), chunk_key="target", pad_key="pad", time_dim=0
    )
    out = t(td)
    assert out["target"][..., 0].tolist() == [[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    assert out["pad"].tolist() == [[False, False, True], [False, True, True]]


def test_in_an_env_steps_resets_and_specs_pass_through(pendulum):
    env = TransformedEnv(pendulum, ActionChunkTransform(4))
    assert env.full_action_spec == pendulum.full_action_spec
    assert env.observation_spec == pendulum.observation_spec
    rollout = env.rollout(3)
    assert "vla_action" not in rollout.keys()
    assert rollout["action"].shape == (3, 1)


def test_bad_input_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"chunk_size to be an int >= 1.*got 0"):
        ActionChunkTransform(0)
    with pytest.raises(TypeError, match="time_dim to be an int"):
        ActionChunkTransform(2, time_dim=1.5)
    t = ActionChunkTransform(2)
    with pytest.raises(KeyError, match="no action at 'action'"):
        t(TensorDict(observation=torch.zeros(4, 3), batch_size=[4]))
    with pytest.raises(ValueError, match=r"time_dim=0, got an action of shape \(2, 4, 1\)"):
        ActionChunkTransform(2, time_dim=0)(TensorDict(action=torch.zeros(2, 4, 1), batch_size=[2]))
    td = TensorDict(action=torch.zeros(2, 4, 1), batch_size=[2])
    td["next", "done"] = torch.zeros(2, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"\('next', 'done'\) entry has shape \(2, 3\)"):
        t(td)
