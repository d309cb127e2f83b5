"""ConsistentDropout(Module): a mask drawn at an episode's first step is kept for the episode,
stored in the rollout and replayed when the loss runs the module on the collected data."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_core import TransformedEnv
from rl_core.testing import CountingEnv
from rl_objectives.modules import ConsistentDropout, ConsistentDropoutModule

WIDTH = 16


def _policy(dropout):
    return TensorDictSequential(
        TensorDictModule(
            lambda obs: obs.expand(*obs.shape[:-1], WIDTH) + 1.0, ["observation"], ["hidden"]
        ),
        dropout,
        TensorDictModule(
            lambda h: torch.ones(*h.shape[:-1], 1, dtype=torch.long), ["hidden"], ["action"]
        ),
    )


def test_masks_are_kept_through_an_episode_and_replayed_in_the_loss():
    torch.manual_seed(0)
    dropout = ConsistentDropoutModule(0.5, in_keys=["hidden", "mask"], input_shape=(WIDTH,))
    policy = _policy(dropout)
    env = TransformedEnv(CountingEnv(max_count=4, batch_size=[2]), dropout.make_tensordict_primer())
    rollout = env.rollout(10, policy, break_when_any_done=False)
    mask = rollout["mask"]  # [2, 10, WIDTH]
    assert not torch.isnan(mask).any()
    assert set(mask.unique().tolist()) <= {0.0, 2.0}
    for start in (0, 4):  # episodes of 4 steps: one mask each
        episode = mask[:, start : start + 4]
        assert (episode == episode[:, :1]).all()
    assert (mask[:, 0] != mask[:, 4]).any()  # a new episode draws a new mask
    torch.testing.assert_close(rollout["hidden"], (rollout["observation"] + 1.0) * mask)
    # the loss runs the module on the collected data: the stored masks are replayed
    replay = dropout(
        TensorDict(hidden=torch.full((2, 10, WIDTH), 3.0), mask=mask, batch_size=[2, 10])
    )
    torch.testing.assert_close(replay["hidden"], 3.0 * mask)


def test_eval_mode_passes_the_input_through():
    dropout = ConsistentDropoutModule(0.5, in_keys="x").eval()
    td = dropout(TensorDict(x=torch.ones(3, 4), batch_size=[3]))
    torch.testing.assert_close(td["x"], torch.ones(3, 4))
    assert list(td.keys()) == ["x"]


def test_consistent_dropout_mask_statistics_and_replay():
    torch.manual_seed(0)
    drop = ConsistentDropout(p=0.25)
    _, mask = drop(torch.ones(20_000, dtype=torch.float64))
    assert set(mask.unique().tolist()) == {0.0, 1 / 0.75}
    assert (mask == 0).float().mean().item() == pytest.approx(0.25, abs=0.02)
    x = torch.randn(20_000, dtype=torch.float64)
    torch.testing.assert_close(drop(x, mask)[0], x * mask)
    partly_unset = mask.clone()
    partly_unset[:10] = float("nan")
    _, redrawn = drop(x, partly_unset)
    torch.testing.assert_close(redrawn[10:], mask[10:])
    assert not torch.isnan(redrawn).any()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"p to be a probability in \[0, 1\), got 1.0"):
        ConsistentDropoutModule(1.0, in_keys="x")
    with pytest.raises(ValueError, match="in_keys and out_keys of two entries"):
        ConsistentDropoutModule(0.1, in_keys=["x", "m", "z"])
    with pytest.raises(RuntimeError, match="build the module with input_shape"):
        ConsistentDropoutModule(0.1, in_keys="x").make_tensordict_primer()
    with pytest.raises(ValueError, match=r"mask of the input's shape \(3,\), got \(2,\)"):
        ConsistentDropout(0.1)(torch.ones(3), torch.ones(2))
    with pytest.raises(ValueError, match="expected input= or shape="):
        ConsistentDropout(0.1).make_mask()
