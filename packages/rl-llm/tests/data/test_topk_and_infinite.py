import itertools

import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import TopKRewardSelector, create_infinite_iterator


def _batch(prompts, rewards, done=None):
    n = len(prompts)
    done = [True] * n if done is None else done
    return TensorDict(
        query=prompts,
        step=torch.arange(n),
        next=TensorDict(
            reward=torch.tensor(rewards).reshape(n, 1),
            done=torch.tensor(done).reshape(n, 1),
            batch_size=[n],
        ),
        batch_size=[n],
    )


def test_topk_releases_the_best_of_each_full_queue():
    sel = TopKRewardSelector(total_dialog_turns=3, topk_size=2)
    out = sel(_batch(["a", "b", "a", "b"], [1.0, 5.0, 3.0, 0.0]))
    assert out.shape == (0,)
    assert (sel.queued("a"), sel.queued("b")) == (2, 2)
    # "a" completes with 2.0: keep 3.0 and 2.0 (arrival order); "b" not yet.
    out = sel(_batch(["a", "b"], [2.0, 9.0], done=[True, False]))
    assert out["next", "reward"].squeeze(-1).tolist() == [3.0, 2.0]
    assert list(out["query"]) == ["a", "a"]
    assert (sel.queued("a"), sel.queued("b")) == (0, 2)  # the unfinished "b" is not kept
    # ties keep the earlier dialog
    out = sel(_batch(["b"], [5.0]))
    assert out["next", "reward"].squeeze(-1).tolist() == [5.0, 5.0]
    assert out["step"].tolist() == [1, 0]


def test_topk_refuses_bad_sizes_and_batches():
    with pytest.raises(
        ValueError, match="expected 1 <= topk_size <= total_dialog_turns, got topk_size=4"
    ):
        TopKRewardSelector(3, 4)
    with pytest.raises(ValueError, match=r"expected a 1-d batch of dialogs, got batch \(2, 1\)"):
        TopKRewardSelector(3, 1)(_batch(["a", "b"], [1.0, 2.0]).unsqueeze(-1))


def test_infinite_iterator_restarts_and_refuses_what_cannot():
    assert list(itertools.islice(create_infinite_iterator(range(2)), 5)) == [0, 1, 0, 1, 0]
    loader = torch.utils.data.DataLoader(list(range(3)), batch_size=2)
    got = list(itertools.islice(create_infinite_iterator(loader), 4))
    assert [b.tolist() for b in got] == [[0, 1], [2], [0, 1], [2]]
    with pytest.raises(ValueError, match="the iterable is empty"):
        next(create_infinite_iterator([]))
    one_shot = create_infinite_iterator(iter([1]))
    assert next(one_shot) == 1
    with pytest.raises(ValueError, match="yielded nothing on a new pass"):
        next(one_shot)
