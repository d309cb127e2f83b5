import copy
import time

import pytest
import torch
from tensordict import TensorDict

from rl_llm.collectors import LLMCollector, TransformersWeightUpdater
from rl_llm.envs import GSM8KEnv, make_arithmetic_dataset
from rl_llm.modules import TransformersWrapper


def test_generation_goes_on_while_the_learner_updates_and_versions_match(
    tiny_model, tiny_tokenizer
):
    torch.manual_seed(0)
    infer_model = tiny_model
    train_model = copy.deepcopy(tiny_model)
    env = GSM8KEnv(make_arithmetic_dataset(8), batch_size=(4,), repeats=2)
    policy = TransformersWrapper(
        infer_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 4, "do_sample": True}
    )
    collector = LLMCollector(
        env,
        policy,
        dialog_turns_per_batch=4,
        weight_updater=TransformersWeightUpdater(infer_model),
        track_policy_version=True,
    )
    snapshots = {0: copy.deepcopy(train_model.state_dict())}
    collector.start(queue_size=3)
    try:
        batches = []
        for i, batch in enumerate(collector):
            batches.append(batch)
            # The learner "updates" (changes the weights, takes its time) ...
            with torch.no_grad():
                for p in train_model.parameters():
                    p.add_(0.02 * torch.randn_like(p))
            deadline = time.monotonic() + 20
            while collector.queued_batches() < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            # ... and the generator filled the queue meanwhile (no consumer was waiting).
            assert collector.queued_batches() >= 1
            collector.update_policy_weights_(train_model)
            snapshots[collector.policy_version] = copy.deepcopy(train_model.state_dict())
            if i == 3:
                break
    finally:
        collector.async_shutdown()
    versions = [int(b["policy_version"].unique().item()) for b in batches]
    assert versions == sorted(versions)
    assert versions[0] == 0
    # Batches are generated ahead of the learner: each is at most a queue behind.
    assert all(v <= i for i, v in enumerate(versions))
    # Each batch's log-probs are those of the weights of its recorded version.
    scorer_model = copy.deepcopy(train_model)
    scorer = TransformersWrapper(scorer_model, tiny_tokenizer, generate=False)
    for batch, version in zip(batches, versions):
        scorer_model.load_state_dict(snapshots[version])
        with torch.no_grad():
            got = scorer(batch.select("tokens", "masks").clone())["log_probs"].response
        torch.testing.assert_close(got, batch["log_probs"].response, atol=1e-5, rtol=1e-5)
    # After a shutdown the collector iterates synchronously again.
    assert next(iter(collector))["policy_version"].unique().item() == collector.policy_version


def test_start_errors_and_a_failing_generator_is_reported(tiny_model, tiny_tokenizer):
    env = GSM8KEnv(make_arithmetic_dataset(4), batch_size=(2,), repeats=1)

    def broken_policy(td: TensorDict) -> TensorDict:
        raise RuntimeError("generation exploded")

    collector = LLMCollector(env, broken_policy, dialog_turns_per_batch=2)
    with pytest.raises(ValueError, match="queue_size >= 1"):
        collector.start(queue_size=0)
    collector.start()
    with pytest.raises(RuntimeError, match="the generation thread failed"):
        next(iter(collector))
    with pytest.raises(RuntimeError, match="already running"):
        collector.start()
    collector.async_shutdown()
