"""A recurrent policy in ``rollout`` and ``SyncDataCollector`` on a real gymnasium env.

The hidden state travels in the TensorDict: ``TensorDictPrimer`` (built from the module's
``recurrent_state_spec()``) writes zeros at reset and carries the policy's
``("next", state)`` to the next step, ``InitTracker`` marks the first step of every episode.
The oracle is the training-time view: the sequence-mode module run on the collected
``[env, time]`` batch, from the first stored state, must give back the features the step-mode
policy computed while acting, through the resets of the vectorised envs.
"""

import pytest
import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from rl_buffers import LazyTensorStorage, ReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import Compose, TransformedEnv
from rl_core.modules import GRUModule, LSTMModule
from rl_core.transforms import InitTracker
from rl_envs import BurnInTransform, GymEnv
from rl_envs.transforms import TensorDictPrimer

NUM_ENVS, STEPS = 3, 40


def _policy_and_env(cls, python_based):
    torch.manual_seed(0)
    rnn = cls(8, 16, in_key="embed", out_key="features", python_based=python_based)
    env = TransformedEnv(
        GymEnv("CartPole-v1", num_envs=NUM_ENVS),
        Compose(InitTracker(), TensorDictPrimer(rnn.recurrent_state_spec())),
    )
    env.set_seed(0)
    n_actions = env.action_spec.shape[-1]

    def greedy(logits):
        return nn.functional.one_hot(logits.argmax(-1), n_actions)

    policy = TensorDictSequential(
        TensorDictModule(nn.Linear(4, 8), in_keys=["observation"], out_keys=["embed"]),
        rnn,
        TensorDictModule(nn.Linear(16, n_actions), in_keys=["features"], out_keys=["logits"]),
        TensorDictModule(greedy, in_keys=["logits"], out_keys=["action"]),
    )
    return rnn, policy, env


def _replay_matches(rnn, data):
    """The sequence-mode module on the collected batch reproduces the acting-time features."""
    replay = data.select("embed", "is_init", *rnn.in_keys[1:-1]).clone()
    out = rnn.set_recurrent_mode(True)(replay)
    torch.testing.assert_close(out["features"], data["features"], atol=1e-5, rtol=1e-5)


def _check_carried(rnn, data):
    """Each step's state is the previous step's next state, or zeros on a fresh episode."""
    is_init = data["is_init"].squeeze(-1)
    assert is_init[:, 0].all()
    assert is_init[:, 1:].any(), "the episodes should end and restart inside the batch"
    for key in rnn.in_keys[1:-1]:
        state, next_state = data[key], data["next", key]
        torch.testing.assert_close(
            state[:, 1:][~is_init[:, 1:]], next_state[:, :-1][~is_init[:, 1:]]
        )
        assert (state[is_init] == 0).all()
        assert next_state.abs().sum() > 0


@pytest.mark.parametrize("python_based", [False, True], ids=["torch", "python"])
@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_rollout_carries_the_hidden_state(cls, python_based):
    rnn, policy, env = _policy_and_env(cls, python_based)
    with torch.no_grad():
        data = env.rollout(STEPS, policy, break_when_any_done=False)
    assert data.batch_size == (NUM_ENVS, STEPS)
    _check_carried(rnn, data)
    with torch.no_grad():
        _replay_matches(rnn, data)
    env.close()


def test_collector_batches_replay_with_the_sequence_module():
    rnn, policy, env = _policy_and_env(LSTMModule, False)
    collector = SyncDataCollector(
        env, policy, frames_per_batch=NUM_ENVS * STEPS, total_frames=2 * NUM_ENVS * STEPS
    )
    batches = []
    with torch.no_grad():
        for data in collector:
            batches.append(data)
            _replay_matches(rnn, data)
    collector.shutdown()
    assert len(batches) == 2
    # the second batch goes on from where the first stopped: its first states are not all fresh
    second = batches[1]
    carried_on = ~second["is_init"][:, 0, 0]
    assert carried_on.any()
    torch.testing.assert_close(
        second["recurrent_state_h"][carried_on, 0],
        batches[0]["next", "recurrent_state_h"][carried_on, -1],
    )


def test_make_tensordict_primer_and_burn_in_from_a_replay_buffer():
    """TorchRL's line ``env.append_transform(lstm.make_tensordict_primer())`` primes the env;
    the collected ``[env, time]`` sequences go to a replay buffer, and ``BurnInTransform``
    burns in the first steps of each sampled sequence. With the parameters unchanged since collection,
    the burnt-in state is exactly the state the policy held at that step while acting."""
    torch.manual_seed(0)
    rnn = LSTMModule(4, 16, in_key="observation", out_key="features")
    env = TransformedEnv(GymEnv("CartPole-v1", num_envs=NUM_ENVS), InitTracker())
    env.append_transform(rnn.make_tensordict_primer())
    env.set_seed(0)
    policy = TensorDictSequential(
        rnn,
        TensorDictModule(
            lambda f: nn.functional.one_hot((f[..., 0] > 0).long(), 2),
            in_keys=["features"],
            out_keys=["action"],
        ),
    )
    with torch.no_grad():
        data = env.rollout(STEPS, policy, break_when_any_done=False)
    env.close()
    burn_in = 10
    buffer = ReplayBuffer(storage=LazyTensorStorage(NUM_ENVS), batch_size=NUM_ENVS)
    buffer.extend(data)  # one item per env: its whole [time] sequence
    replayed = buffer.sample()
    replayed.batch_size = [NUM_ENVS, STEPS]  # the stored items' time dim back in the batch
    sample = BurnInTransform([rnn.set_recurrent_mode(True)], burn_in=burn_in)(replayed)
    assert sample.batch_size == (NUM_ENVS, STEPS - burn_in)
    # rows come back in any order: match them by their observations
    order = [
        int((data["observation"][:, burn_in:] == row).all(-1).all(-1).nonzero())
        for row in sample["observation"]
    ]
    for key in ("recurrent_state_h", "recurrent_state_c"):
        torch.testing.assert_close(sample[key][:, 0], data[key][order, burn_in])
        torch.testing.assert_close(sample[key][:, 1:], data[key][order, burn_in + 1 :])
