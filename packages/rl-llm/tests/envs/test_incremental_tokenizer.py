import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import ChatEnv, IncrementalTokenizer


def test_each_turn_extends_the_previous_prompt_ids(tiny_tokenizer):
    inc = IncrementalTokenizer(tiny_tokenizer)
    env = TransformedEnv(ChatEnv(batch_size=(2,)), inc)
    td = env.reset(TensorDict(query=["what is 2+2?", "hi"], batch_size=[2]))
    pad = tiny_tokenizer.pad_token_id
    previous = [[t for t in row.tolist() if t != pad] for row in td["tokens", "prompt"]]
    # Replies whose text, once rendered after the assistant header, could merge tokens
    # across the boundary if the dialog were tokenised whole.
    replies = [["4", "ok then"], ["hello world", "x"]]
    for turn in range(2):
        td["history"].full = td["history"].prompt.append(
            History.from_chats([[{"role": "assistant", "content": r[turn]}] for r in replies])
        )
        nxt = env.step(td)["next"]
        nxt["history"].prompt = nxt["history"].prompt.append(
            History.from_chats([[{"role": "user", "content": "and?"}]] * 2)
        )
        nxt = inc(nxt)
        rows = [[t for t in row.tolist() if t != pad] for row in nxt["tokens", "prompt"]]
        for old, new in zip(previous, rows):
            assert new[: len(old)] == old
            assert len(new) > len(old)
        # The ids decode to the rendered dialog exactly.
        texts = nxt["history"].prompt.apply_chat_template(tiny_tokenizer)
        assert tiny_tokenizer.batch_decode(rows) == texts
        previous, td = rows, nxt
    assert inc.retokenized == 0


def test_a_new_dialog_starts_over_and_ids_are_left_padded(tiny_tokenizer):
    inc = IncrementalTokenizer(tiny_tokenizer)
    long = History.from_chats([[{"role": "user", "content": "a long first question here"}]])
    inc(TensorDict(history={"prompt": long}, batch_size=[1]))
    short = History.from_chats(
        [[{"role": "user", "content": "b"}], [{"role": "user", "content": "c d e f g"}]]
    )
    out = inc(TensorDict(history={"prompt": short}, batch_size=[2]))["tokens", "prompt"]
    full = short.apply_chat_template(tiny_tokenizer)
    enc = tiny_tokenizer(full, add_special_tokens=False)["input_ids"]
    pad = tiny_tokenizer.pad_token_id
    assert [[t for t in row.tolist() if t != pad] for row in out] == enc
    assert out[0, 0].item() == pad  # the shorter row is padded on the left
    with pytest.raises(KeyError, match=r"expected the prompt history at \('history', 'prompt'\)"):
        inc(TensorDict(batch_size=[1]))


def test_the_tokenizer_needs_a_pad_token(tiny_tokenizer):
    class NoPad:
        pad_token_id = None

    with pytest.raises(ValueError, match="expected a tokenizer with a pad token"):
        IncrementalTokenizer(NoPad())
    assert torch.is_tensor(
        IncrementalTokenizer(tiny_tokenizer)(
            TensorDict(
                history={"prompt": History.from_chats([[{"role": "user", "content": "x"}]])},
                batch_size=[1],
            )
        )["tokens", "prompt"]
    )
