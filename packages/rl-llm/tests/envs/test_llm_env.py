import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import PromptGroupSampler
from rl_llm.envs import ChatEnv, DataLoadingPrimer, LLMEnv, make_gsm8k_env
from rl_llm.envs.data_loading_primer import split_items


def test_llm_env_continues_text_and_reports_missing_keys():
    env = LLMEnv(batch_size=(2,), no_stack=True)
    td = env.reset(TensorDict(query=["a", "b"], batch_size=[2]))
    td["response"] = ["x", "y"]
    assert list(env.step(td)["next", "query"]) == ["x", "y"]
    with pytest.raises(KeyError, match="expected 'query'"):
        env.reset()
    with pytest.raises(ValueError, match="expected a TensorDict with batch size"):
        env.reset(TensorDict(query=["a"], batch_size=[]))  # caught by EnvBase


def test_primer_reads_batches_of_a_torch_dataloader_and_wraps_epochs():
    rows = [{"query": f"q{i}", "answer": str(i)} for i in range(3)]
    loader = torch.utils.data.DataLoader(rows, batch_size=2)  # batches of dicts of lists
    env = TransformedEnv(LLMEnv(batch_size=(2,)), DataLoadingPrimer(loader))
    seen = [list(env.reset()["query"]) for _ in range(3)]
    assert seen == [["q0", "q1"], ["q2", "q0"], ["q1", "q2"]]


def test_primer_feeds_a_chat_env_with_groups_and_tensors():
    rows = [{"query": "a", "ids": torch.tensor([1, 2])}, {"query": "b", "ids": torch.tensor([3])}]
    env = TransformedEnv(
        ChatEnv(batch_size=(4,)),
        DataLoadingPrimer(rows, repeats=2, stack_method="as_padded_tensor"),
    )
    td = env.reset()
    assert td["history"].prompt.batch_size == (4, 1)
    assert [str(c) for c in td["history"].prompt[:, 0].content] == ["a", "a", "b", "b"]
    assert td["ids"].tolist() == [[1, 2], [1, 2], [3, 0], [3, 0]]


def test_primer_with_a_group_sampler_loader():
    rows = [{"query": q} for q in "abc"]
    loader = torch.utils.data.DataLoader(
        rows, sampler=PromptGroupSampler(rows, group_size=2, shuffle=False), batch_size=2
    )
    env = TransformedEnv(LLMEnv(batch_size=(4,)), DataLoadingPrimer(loader))
    assert list(env.reset()["query"]) == ["a", "a", "b", "b"]


def test_primer_errors():
    with pytest.raises(ValueError, match="pass a dataloader"):
        DataLoadingPrimer()
    with pytest.raises(ValueError, match="expected stack_method"):
        DataLoadingPrimer([{"q": "a"}], stack_method="concat")
    env = TransformedEnv(LLMEnv(batch_size=(3,)), DataLoadingPrimer([{"query": "a"}], repeats=2))
    with pytest.raises(ValueError, match="not a multiple of repeats=2"):
        env.reset()
    with pytest.raises(TypeError, match="expected the data loader to yield mappings"):
        split_items("text")
    with pytest.raises(ValueError, match="fields of different lengths"):
        split_items({"a": [1, 2], "b": [1]})
    with pytest.raises(ValueError, match="expected service_backend None or 'ray'"):
        DataLoadingPrimer([{"query": "a"}], service_backend="http")
    with pytest.raises(ValueError, match="apply with use_ray_service=True"):
        DataLoadingPrimer([{"query": "a"}], service_backend_options={"actor_name": "x"})


def test_make_gsm8k_env_rewards_and_ends_after_one_step():
    data = [{"question": "2+2?", "answer": "so 4\n#### 4"}, {"question": "1+5?", "answer": "6"}]
    env = make_gsm8k_env(data, num_envs=2, repeats=2)
    td = env.reset()
    assert list(td["query"]) == ["2+2?", "2+2?", "1+5?", "1+5?"]
    td["response"] = ["<answer>4</answer>", "<answer>5</answer>", "six", "<answer>6</answer>"]
    out = env.step(td)
    torch.testing.assert_close(
        out["next", "reward"].squeeze(-1), torch.tensor([1.0, 0.1, 0.0, 1.0])
    )
    assert out["next", "done"].all()
    assert out["next", "query"][0] == "2+2?<answer>4</answer>"
