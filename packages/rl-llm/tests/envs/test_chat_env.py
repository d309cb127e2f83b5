import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.envs import ChatEnv
from rl_llm.modules import TransformersWrapper


def test_reset_builds_system_and_user_messages():
    env = ChatEnv(system_prompt="Be brief.", batch_size=(2,))
    td = env.reset(TensorDict(query=["Hi", "2+2?"], batch_size=[2]))
    prompt = td["history"].prompt
    assert prompt.to_chats()[1] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
    ]
    assert not td["done"].any()


def test_dialog_grows_by_one_message_per_step(tiny_model, tiny_tokenizer):
    env = ChatEnv(batch_size=(2,))
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 3, "do_sample": True}
    )
    td = env.reset(TensorDict(query=["a", "b"], batch_size=[2]))
    for turn in range(2):
        td = env.step(policy(td))
        nxt = td["next", "history"].prompt
        assert nxt.batch_size == (2, 2 + 2 * turn)
        assert list(nxt[:, -1].role) == ["assistant", "assistant"]
        assert (td["next", "reward"] == 0).all()
        td = td["next"]
        # The next prompt is a continuation of the dialog.
        td["history"].prompt = td["history"].prompt.append(
            History.from_chats([[{"role": "user", "content": "more"}]] * 2)
        )


def test_rollout_runs_the_policy(tiny_model, tiny_tokenizer):
    env = ChatEnv(batch_size=(2,))
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 2, "do_sample": True}
    )
    traj = env.rollout(
        2,
        policy,
        tensordict=env.reset(TensorDict(query=["a", "b"], batch_size=[2])),
        auto_reset=False,
    )
    assert traj.batch_size == (2, 2)
    assert traj[0, 1]["next", "history"].prompt.batch_size == (3,)


def test_bad_input_is_reported():
    with pytest.raises(ValueError, match=r"expected a 1-d batch_size \(B,\), got \(2, 2\)"):
        ChatEnv(batch_size=(2, 2))
    env = ChatEnv(batch_size=(2,))
    with pytest.raises(KeyError, match="expected a 'query' entry"):
        env.reset()
    td = env.reset(TensorDict(query=["a", "b"], batch_size=[2]))
    with pytest.raises(KeyError, match=r"expected .*'history', 'full'.* written by the policy"):
        env.step(td)
    assert torch.Size([2]) == env.batch_size


@pytest.mark.parametrize("query", [None, [None, "a"], ["a", 5], [2.5, "a"]])
def test_query_that_is_not_a_string_is_refused(query):
    env = ChatEnv(batch_size=(2,))
    with pytest.raises(
        ValueError, match=r"ChatEnv\.reset: expected 'query' as one string per dialog"
    ):
        env.reset(TensorDict(query=query, batch_size=[2]))
