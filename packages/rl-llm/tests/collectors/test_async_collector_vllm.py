"""Asynchronous LLMCollector generation with vLLM (the vLLM environment only).

Run: bash scripts/vllm-env.sh && .venvs/vllm/bin/python -m pytest -m vllm packages/rl-llm
"""

import copy
import importlib.util
import os
import time

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed (see scripts/vllm-env.sh)", allow_module_level=True)
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
vllm = pytest.importorskip("vllm")

import torch  # noqa: E402

from rl_llm.collectors import LLMCollector, vLLMUpdater  # noqa: E402
from rl_llm.envs import GSM8KEnv, make_arithmetic_dataset  # noqa: E402
from rl_llm.modules import TransformersWrapper, vLLMWrapper  # noqa: E402

pytestmark = pytest.mark.vllm


def test_vllm_generates_while_the_learner_updates_and_versions_match(
    tiny_model_dir, tiny_model, tiny_tokenizer
):
    llm = vllm.LLM(
        model=str(tiny_model_dir),
        dtype="float32",
        enforce_eager=True,
        max_model_len=256,
        seed=0,
    )
    train_model = copy.deepcopy(tiny_model)
    env = GSM8KEnv(make_arithmetic_dataset(8), batch_size=(4,), repeats=2)
    policy = vLLMWrapper(
        llm, input_mode="history", generate_kwargs={"max_new_tokens": 4, "do_sample": True}
    )
    collector = LLMCollector(
        env,
        policy,
        dialog_turns_per_batch=4,
        weight_updater=vLLMUpdater(llm),
        track_policy_version=True,
    )
    snapshots = {0: copy.deepcopy(train_model.state_dict())}
    torch.manual_seed(0)
    collector.start(queue_size=1)
    try:
        batches = []
        for i, batch in enumerate(collector):
            batches.append(batch)
            with torch.no_grad():
                for p in train_model.parameters():
                    p.add_(0.02 * torch.randn_like(p))
            deadline = time.monotonic() + 60
            while collector.queued_batches() < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            # vLLM filled the queue while the learner worked.
            assert collector.queued_batches() >= 1
            collector.update_policy_weights_(train_model.state_dict())
            snapshots[collector.policy_version] = copy.deepcopy(train_model.state_dict())
            if i == 3:
                break
    finally:
        collector.async_shutdown()
    versions = [int(b["policy_version"].unique().item()) for b in batches]
    assert versions[0] == 0
    assert versions == sorted(versions)
    assert versions[-1] >= 1  # some batch came from updated weights
    # Each batch's sampling log-probs are those of the weights of its recorded version.
    scorer_model = copy.deepcopy(train_model)
    scorer = TransformersWrapper(scorer_model, tiny_tokenizer, generate=False)
    for batch, version in zip(batches, versions):
        scorer_model.load_state_dict(snapshots[version])
        with torch.no_grad():
            got = scorer(batch.select("tokens", "masks").clone())["log_probs"].response
        torch.testing.assert_close(got, batch["log_probs"].response, atol=1e-4, rtol=1e-4)
