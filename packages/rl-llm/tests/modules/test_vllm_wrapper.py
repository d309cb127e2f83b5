"""vLLMWrapper against TransformersWrapper on the same tiny model (the vLLM environment only).

Run: bash scripts/vllm-env.sh && .venvs/vllm/bin/python -m pytest -m vllm packages/rl-llm
"""

import importlib.util
import os

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed (see scripts/vllm-env.sh)", allow_module_level=True)
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
vllm = pytest.importorskip("vllm")

import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402

from rl_llm.collectors import vLLMUpdater  # noqa: E402
from rl_llm.data import History  # noqa: E402
from rl_llm.modules import TransformersWrapper, vLLMWrapper  # noqa: E402

pytestmark = pytest.mark.vllm

PROMPTS = [[{"role": "user", "content": q}] for q in ["What is 1+2?", "hello world", "ok"]]


@pytest.fixture(scope="module")
def llm(tiny_model_dir):
    return vllm.LLM(
        model=str(tiny_model_dir),
        dtype="float32",
        enforce_eager=True,
        max_model_len=256,
        seed=0,
    )


def _td():
    return TensorDict(history={"prompt": History.from_chats(PROMPTS)}, batch_size=[3])


def test_generation_log_probs_match_transformers(llm, tiny_model, tiny_tokenizer):
    policy = vLLMWrapper(
        llm,
        input_mode="history",
        generate_kwargs={"max_new_tokens": 8, "do_sample": True, "seed": 0},
    )
    out = policy(_td())
    mask = out["masks"].all_assistant_mask[:, -8:]
    assert mask.any()
    scorer = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    with torch.no_grad():
        ref = scorer(out.select("tokens", "masks").clone())["log_probs"].response
    torch.testing.assert_close(out["log_probs"].response, ref, atol=1e-4, rtol=1e-4)
    assert out["history"].full.batch_size == (3, 2)


def test_scoring_matches_transformers(llm, tiny_model, tiny_tokenizer):
    hf = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    torch.manual_seed(0)
    batch = hf(_td())
    scored = vLLMWrapper(llm, generate=False)(batch.select("tokens", "masks").clone())
    torch.testing.assert_close(
        scored["log_probs"].response, batch["log_probs"].response, atol=1e-4, rtol=1e-4
    )


def test_weight_update_changes_generation_and_restores(llm, tiny_model):
    policy = vLLMWrapper(llm, generate_kwargs={"max_new_tokens": 8, "do_sample": False})
    before = policy(_td())["tokens"].response.clone()
    old = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    torch.manual_seed(0)
    drifted = {k: v + 0.5 * torch.randn_like(v) for k, v in old.items()}
    updater = vLLMUpdater(llm)
    updater.update(drifted)
    after = policy(_td())["tokens"].response.clone()
    assert not torch.equal(after, before)
    updater.update(old)
    assert torch.equal(policy(_td())["tokens"].response, before)


def test_bad_generate_kwargs(llm):
    policy = vLLMWrapper(llm, generate_kwargs={"num_beams": 2})
    with pytest.raises(ValueError, match=r"generate_kwargs \['num_beams'\] have no vLLM"):
        policy(_td())
