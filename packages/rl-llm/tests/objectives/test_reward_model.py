"""Reward models: the Bradley-Terry loss by hand, GPT2RewardModel, and a learning test."""

import math
import random

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_llm.data import PairwiseDataset
from rl_llm.modules import GPT2RewardModel
from rl_llm.objectives import RewardModelLoss, RewardModelLossOutput, reward_model_loss

transformers = pytest.importorskip("transformers", reason='pip install "rl-llm[transformers]"')


def test_bradley_terry_loss_and_gradient_by_hand():
    chosen = torch.tensor([2.0, 0.0, -1.5, 3.0], dtype=torch.float64, requires_grad=True)
    rejected = torch.tensor([0.0, 1.0, -1.5, -2.0], dtype=torch.float64)
    loss = reward_model_loss(chosen, rejected)
    diffs = [2.0, -1.0, 0.0, 5.0]
    expected = sum(math.log1p(math.exp(-d)) for d in diffs) / 4
    assert loss.item() == pytest.approx(expected, rel=1e-14)
    loss.backward()
    # d/dc of log(1 + e^-(c - r)) = -1 / (1 + e^(c - r)), over 4 pairs.
    grads = [-1 / (1 + math.exp(d)) / 4 for d in diffs]
    assert chosen.grad.tolist() == pytest.approx(grads, rel=1e-12)
    per_pair = reward_model_loss(chosen.detach(), rejected, "none")
    assert per_pair.tolist() == pytest.approx([math.log1p(math.exp(-d)) for d in diffs])
    assert reward_model_loss(chosen, rejected, "sum").item() == pytest.approx(4 * expected)


def test_loss_module_with_precomputed_scores_and_centering():
    td = TensorDict(
        chosen=TensorDict(score=torch.tensor([[2.0], [0.0]]), batch_size=[2]),
        rejected=TensorDict(score=torch.tensor([[0.0], [1.0]]), batch_size=[2]),
        batch_size=[2],
    )
    out = RewardModelLoss(center_coeff=0.1)(td)
    assert isinstance(out, RewardModelLossOutput)
    assert out.accuracy.item() == 0.5
    assert out.loss_center.item() == pytest.approx(0.1 * (4 + 0 + 0 + 1) / 2)
    assert RewardModelLoss()(td).loss_center is None
    with pytest.raises(ValueError, match=r"expected reduction in .* got 'avg'"):
        RewardModelLoss(reduction="avg")
    with pytest.raises(KeyError, match="expected the rejected entries at 'rejected'"):
        RewardModelLoss()(td.exclude("rejected"))
    with pytest.raises(ValueError, match=r"one shape, got \(2,\) and \(3,\)"):
        reward_model_loss(torch.zeros(2), torch.zeros(3))


def _tiny_reward_model(vocab_size, seed=0):
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        n_layer=1,
        n_embd=32,
        n_head=2,
        vocab_size=vocab_size,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2RewardModel(config=config)


def test_end_scores_read_each_sequence_last_real_token():
    model = _tiny_reward_model(50).eval()
    ids = torch.tensor([[5, 6, 7, 0, 0], [0, 0, 8, 9, 10], [1, 2, 3, 4, 5]])
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], dtype=torch.bool)
    with torch.no_grad():
        _, end = model(ids, mask)
        for i in range(3):
            alone, alone_end = model(ids[i][mask[i]].unsqueeze(0))
            torch.testing.assert_close(end[i], alone_end[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(alone[0, -1], alone_end[0])


def _pairs(tokenizer, n, seed):
    rng = random.Random(seed)
    prompts, chosen, rejected = [], [], []
    for _ in range(n):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        prompts.append(f"What is {a} + {b}? ")
        # The annotators prefer a polite reply, whatever the prompt and the wording.
        chosen.append(f"It is {a + b}, {rng.choice(['thanks', 'glad to help', 'please ask more'])}")
        rejected.append(f"It is {a + b}, {rng.choice(['whatever', 'go away', 'no idea why'])}")
    return PairwiseDataset.from_pairs(prompts, chosen, rejected, tokenizer, max_length=32)


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only cost time on a loaded machine
    yield
    torch.set_num_threads(threads)


def test_a_tiny_reward_model_learns_to_rank_held_out_pairs(tiny_tokenizer, one_thread):
    train, held_out = _pairs(tiny_tokenizer, 64, seed=0), _pairs(tiny_tokenizer, 32, seed=1)
    model = _tiny_reward_model(len(tiny_tokenizer))
    scorer = TensorDictModule(
        model, in_keys=["input_ids", "attention_mask"], out_keys=["rewards", "score"]
    )
    loss_fn = RewardModelLoss(scorer).set_keys(chosen="chosen_data", rejected="rejected_data")
    with torch.no_grad():
        before = loss_fn(held_out.to_tensordict())
    optim = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = train.to_tensordict()
    for step in range(40):
        batch = data[torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(step))]
        loss = loss_fn(batch).loss_reward_model
        optim.zero_grad()
        loss.backward()
        optim.step()
    with torch.no_grad():
        after = loss_fn(held_out.to_tensordict())
    assert after.accuracy.item() >= 0.9, (before.accuracy.item(), after.accuracy.item())
    assert after.loss_reward_model.item() < min(math.log(2), before.loss_reward_model.item())


def test_pairwise_dataset_refuses_bad_input(tiny_tokenizer):
    with pytest.raises(ValueError, match="expected as many prompts, chosen and rejected texts"):
        PairwiseDataset.from_pairs(["a"], ["b", "c"], ["d"], tiny_tokenizer)
    with pytest.raises(ValueError, match="expected strings in rejected, got NoneType at index 0"):
        PairwiseDataset.from_pairs(["a"], ["b"], [None], tiny_tokenizer)
