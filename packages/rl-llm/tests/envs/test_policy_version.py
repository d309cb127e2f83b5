import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.collectors import LLMCollector, TransformersWeightUpdater
from rl_llm.data import History
from rl_llm.envs import ChatEnv, GSM8KEnv, PolicyVersion, make_arithmetic_dataset
from rl_llm.modules import TransformersWrapper


def test_int_and_uuid_versions_are_written_on_reset_and_step():
    version = PolicyVersion()
    env = TransformedEnv(ChatEnv(batch_size=(2,)), version)
    td = env.reset(TensorDict(query=["a", "b"], batch_size=[2]))
    assert td["policy_version"].tolist() == [[0], [0]]
    assert td["policy_version"].dtype == torch.long
    assert version.increment_version() == 1
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": "x"}]] * 2)
    )
    assert env.step(td)["next", "policy_version"].tolist() == [[1], [1]]
    assert [(c.old_version, c.new_version) for c in version.version_history] == [(None, 0), (0, 1)]
    uid = PolicyVersion("uuid")
    first = uid.version
    env = TransformedEnv(ChatEnv(batch_size=(2,)), uid)
    td = env.reset(TensorDict(query=["a", "b"], batch_size=[2]))
    assert list(td["policy_version"]) == [first, first]
    assert uid.increment_version() != first
    assert "policy_version" in env.observation_spec.keys()
    with pytest.raises(
        ValueError, match="expected version_type int, 'int', str or 'uuid', got 'float'"
    ):
        PolicyVersion("float")


def test_the_collector_increments_a_policy_version(tiny_model, tiny_tokenizer):
    version = PolicyVersion()
    env = GSM8KEnv(make_arithmetic_dataset(4), batch_size=(2,), repeats=2)
    policy = TransformersWrapper(tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 2})
    collector = LLMCollector(
        env,
        policy,
        dialog_turns_per_batch=2,
        total_dialog_turns=4,
        weight_updater=TransformersWeightUpdater(tiny_model),
        track_policy_version=version,
    )
    seen = []
    for batch in collector:
        seen.append(batch["policy_version"].squeeze(-1).tolist())
        collector.update_policy_weights_(tiny_model)
    assert seen == [[0, 0], [1, 1]]
    assert version.version == 2
    with pytest.raises(
        TypeError, match="expected track_policy_version to be a bool or a PolicyVersion, got str"
    ):
        LLMCollector(env, policy, dialog_turns_per_batch=2, track_policy_version="yes")
