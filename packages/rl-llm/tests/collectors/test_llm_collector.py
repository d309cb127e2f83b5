import pytest
import torch
from tensordict import TensorDict

from rl_llm.collectors import LLMCollector
from rl_llm.envs import ChatEnv, DatasetChatEnv, GSM8KEnv
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import MCAdvantage


def _policy(model, tokenizer, n=6):
    return TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": n, "do_sample": True}
    )


def test_batches_of_padded_turns_keep_their_log_probs(tiny_model, tiny_tokenizer):
    torch.manual_seed(0)
    # Questions of different lengths: each step has its own prompt width.
    data = [
        {"question": "What is 1+2?", "answer": "3"},
        {"question": "hello world, what is the sum of 12 and 30 please?", "answer": "42"},
    ]
    env = GSM8KEnv(data, batch_size=(4,), repeats=2, system_prompt=None)
    collector = LLMCollector(
        env,
        _policy(tiny_model, tiny_tokenizer),
        dialog_turns_per_batch=6,
        total_dialog_turns=16,
        postproc=MCAdvantage(grpo_size=2),
    )
    batches = list(collector)
    assert [b.batch_size for b in batches] == [torch.Size([8]), torch.Size([8])]
    batch = batches[0]
    tokens, masks = batch["tokens"], batch["masks"]
    assert torch.equal(tokens.full, torch.cat([tokens.prompt, tokens.response], -1))
    assert torch.equal(
        masks.all_attention_mask[:, : tokens.prompt.shape[1]],
        tokens.prompt != tiny_tokenizer.pad_token_id,
    )
    assert batch["advantage"].shape == (8, 1)
    assert batch["next", "done"].all()
    # Scoring the padded batch gives back the log-probs recorded at generation.
    score = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    with torch.no_grad():
        rescored = score(batch.select("tokens", "masks").clone())["log_probs"].response
    torch.testing.assert_close(rescored, batch["log_probs"].response, atol=1e-5, rtol=1e-5)


def test_multi_turn_dialogs_grow(tiny_model, tiny_tokenizer):
    env = DatasetChatEnv(["a", "b"], batch_size=(2,))
    collector = LLMCollector(env, _policy(tiny_model, tiny_tokenizer, 2), dialog_turns_per_batch=2)
    sizes = []
    for i, batch in enumerate(collector):
        sizes.append(batch["next", "history"].prompt.batch_size[-1])
        if i == 2:
            break
    assert sizes == [2, 3, 4]


def test_update_needs_an_updater(tiny_model, tiny_tokenizer):
    collector = LLMCollector(
        ChatEnv(batch_size=(1,)), _policy(tiny_model, tiny_tokenizer), dialog_turns_per_batch=1
    )
    with pytest.raises(RuntimeError, match="no weight_updater was given"):
        collector.update_policy_weights_({})


def test_bad_input_is_reported(tiny_model, tiny_tokenizer):
    policy = _policy(tiny_model, tiny_tokenizer)
    with pytest.raises(ValueError, match="expected dialog_turns_per_batch >= 1"):
        LLMCollector(ChatEnv(batch_size=(1,)), policy, dialog_turns_per_batch=0)
    assert TensorDict(batch_size=[1]).batch_size == (1,)
