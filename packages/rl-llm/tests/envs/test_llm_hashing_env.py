import hashlib

import pytest
import torch
from tensordict import TensorDict

from rl_core.ted import step_mdp
from rl_llm.envs import LLMHashingEnv
from rl_llm.envs.llm_hashing_env import token_chain_hash


def _blake(values):
    """The hash by its definition: BLAKE2b-64 of the int64 little-endian bytes, signed."""
    data = b"".join(int(v).to_bytes(8, "little", signed=True) for v in values)
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def test_hashes_follow_the_chain_by_hand():
    env = LLMHashingEnv(10, text_output=False, batch_size=(3,))
    prompt = torch.tensor([[1, 2], [1, 2], [2, 1]])
    td = env.reset(TensorDict(observation=prompt, batch_size=[3]))
    h0 = [_blake([1, 2]), _blake([1, 2]), _blake([2, 1])]
    assert td["hashing"].squeeze(-1).tolist() == h0
    td["action"] = torch.tensor([[3], [3], [3]])
    nxt = env.step(td)["next"]
    assert nxt["observation"].tolist() == [[1, 2, 3], [1, 2, 3], [2, 1, 3]]
    h1 = [_blake([h, 3]) for h in h0]
    assert nxt["hashing"].squeeze(-1).tolist() == h1
    # The same chain reached in two rows has one hash; a different chain has another.
    assert h1[0] == h1[1] != h1[2]
    assert nxt["reward"].shape == (3, 1)
    assert not nxt["done"].any()
    td = step_mdp(env.step(td))
    td["action"] = torch.tensor([[4], [5], [4]])
    nxt = env.step(td)["next"]
    assert nxt["hashing"].squeeze(-1).tolist() == [
        _blake([h1[0], 4]),
        _blake([h1[1], 5]),
        _blake([h1[2], 4]),
    ]


def test_text_output_and_make_tensordict_with_a_local_tokenizer():
    pytest.importorskip("transformers", reason='needs pip install "rl-llm[transformers]"')
    from rl_llm.testing import build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    env = LLMHashingEnv(tokenizer=tokenizer, batch_size=(2,))
    assert env.vocab_size == len(tokenizer)
    td = env.make_tensordict(["What is", "print code"])
    ids = [tokenizer("What is", add_special_tokens=False)["input_ids"]]
    assert td["observation"][0].tolist() == ids[0]
    assert list(td["text"]) == ["What is", "print code"]
    assert td["hashing"][0, 0].item() == _blake(ids[0])
    token = tokenizer(" of", add_special_tokens=False)["input_ids"]
    assert len(token) == 1
    td["action"] = torch.tensor([token, token])
    assert list(env.step(td)["next", "text"]) == ["What is of", "print code of"]
    with pytest.raises(ValueError, match=r"expected prompts of one token length, got lengths"):
        env.make_tensordict(["What is", "hello world python code"])
    with pytest.raises(ValueError, match=r"expected 2 prompt\(s\) for batch_size \(2,\), got 1"):
        env.make_tensordict("What is")


def test_a_custom_hashing_module_and_an_unbatched_env():
    env = LLMHashingEnv(
        5, text_output=False, batch_size=(), hashing_module=lambda rows: rows.sum(-1)
    )
    td = env.reset(TensorDict(observation=torch.tensor([1, 2]), batch_size=[]))
    assert td["hashing"].tolist() == [3]
    td["action"] = torch.tensor([4])
    assert env.step(td)["next", "hashing"].tolist() == [7]
    assert token_chain_hash(torch.tensor([[1, 2]])).tolist() == [_blake([1, 2])]


def test_bad_arguments_and_inputs_are_named():
    with pytest.raises(ValueError, match=r"expected vocab_size .* or a tokenizer"):
        LLMHashingEnv()
    with pytest.raises(
        ValueError, match="text_output=True decodes each chain and needs a tokenizer"
    ):
        LLMHashingEnv(10)
    with pytest.raises(ValueError, match="expected vocab_size >= 1, got 0"):
        LLMHashingEnv(0, text_output=False)
    with pytest.raises(ValueError, match="expected hashing_module to be callable"):
        LLMHashingEnv(10, text_output=False, hashing_module=3)
    env = LLMHashingEnv(10, text_output=False, batch_size=(2,))
    with pytest.raises(ValueError, match=r"reset: expected the token chain at 'observation'"):
        env.reset()
    with pytest.raises(ValueError, match=r"expected integer tokens of shape \(2, 'L'\).*float32"):
        env.reset(TensorDict(observation=torch.zeros(2, 3), batch_size=[2]))
    td = env.reset(TensorDict(observation=torch.ones(2, 3, dtype=torch.long), batch_size=[2]))
    td["action"] = torch.tensor([[1], [10]])
    with pytest.raises(ValueError, match=r"expected 'action' as integer tokens in \[0, 10\)"):
        env.step(td)
    bad = LLMHashingEnv(10, text_output=False, batch_size=(2,), hashing_module=lambda r: r)
    with pytest.raises(ValueError, match=r"one hash per row, shape \(2,\), got \(2, 3\)"):
        bad.reset(TensorDict(observation=torch.ones(2, 3, dtype=torch.long), batch_size=[2]))
