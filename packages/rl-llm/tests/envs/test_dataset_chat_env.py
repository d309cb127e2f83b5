import pytest

from rl_llm.envs import DatasetChatEnv


def test_groups_of_repeated_prompts_and_answers():
    data = [{"question": f"q{i}", "answer": str(i)} for i in range(3)]
    env = DatasetChatEnv(data, batch_size=(6,), repeats=3, system_prompt="sys")
    td = env.reset()
    assert list(td["query"]) == ["q0"] * 3 + ["q1"] * 3
    assert list(td["answer"]) == ["0"] * 3 + ["1"] * 3
    assert td["history"].prompt.batch_size == (6, 2)
    assert list(env.reset()["query"]) == ["q2"] * 3 + ["q0"] * 3  # cycles through the data


def test_shuffle_visits_every_item_once_per_epoch():
    env = DatasetChatEnv([f"p{i}" for i in range(8)], batch_size=(4,), shuffle=True, seed=3)
    seen = [q for _ in range(2) for q in env.reset()["query"]]
    assert sorted(seen) == [f"p{i}" for i in range(8)]
    assert seen != [f"p{i}" for i in range(8)]


def test_any_iterable_and_custom_keys():
    rows = ({"prompt": f"x{i}"} for i in range(2))  # a generator, e.g. a streamed dataset
    env = DatasetChatEnv(rows, batch_size=(2,), question_key="prompt")
    assert list(env.reset()["query"]) == ["x0", "x1"]
    assert "answer" not in env.reset().keys()


def test_datasets_dataset():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"question": ["a", "b"], "answer": ["1", "2"]})
    env = DatasetChatEnv(ds, batch_size=(2,))
    assert list(env.reset()["answer"]) == ["1", "2"]


def test_bad_input_is_reported():
    with pytest.raises(ValueError, match="expected batch size 4 to be a multiple of repeats"):
        DatasetChatEnv(["a"], batch_size=(4,), repeats=3)
    with pytest.raises(ValueError, match="the dataset is empty"):
        DatasetChatEnv([], batch_size=(1,))
    with pytest.raises(
        ValueError, match="expected dataset items as strings or dicts with 'question'"
    ):
        DatasetChatEnv([{"q": "a"}], batch_size=(1,))
