"""Learning test: a tiny reward model learns a preference from a PairwiseDataset, and DAPO
raises its reward on a tiny policy."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_llm.data import History, PairwiseDataset, RewardData
from rl_llm.modules import GPT2RewardModel, TransformersWrapper
from rl_llm.objectives import DAPO, MCAdvantage, RewardModelLoss

transformers = pytest.importorskip("transformers", reason='pip install "rl-llm[transformers]"')


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only cost time on a loaded machine
    yield
    torch.set_num_threads(threads)


def _pairs(good_ids, bad_ids, n, generator):
    """Replies of 3 tokens; the chosen one holds one more "good" token than the rejected."""
    k = torch.randint(0, 3, (n,), generator=generator)

    def replies(count):
        seq = bad_ids[torch.randint(0, len(bad_ids), (n, 3), generator=generator)]
        goods = good_ids[torch.randint(0, len(good_ids), (n, 3), generator=generator)]
        seq = torch.where(torch.arange(3) < count.unsqueeze(-1), goods, seq)
        return seq[:, torch.randperm(3, generator=generator)]

    mask = torch.ones(n, 3, dtype=torch.bool)
    return PairwiseDataset(
        chosen_data=RewardData(input_ids=replies(k + 1), attention_mask=mask, batch_size=[n]),
        rejected_data=RewardData(input_ids=replies(k), attention_mask=mask, batch_size=[n]),
        batch_size=[n],
    )


@pytest.mark.learning
def test_dapo_raises_the_reward_of_a_trained_reward_model(tiny_model, tiny_tokenizer, one_thread):
    vocab = len(tiny_tokenizer)
    g = torch.Generator().manual_seed(0)
    good = torch.zeros(vocab, dtype=torch.bool)
    good[torch.randperm(vocab, generator=g)[: vocab // 2]] = True
    good_ids, bad_ids = good.nonzero().squeeze(-1), (~good).nonzero().squeeze(-1)

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=1,
        n_embd=32,
        n_head=2,
        vocab_size=vocab,
        n_positions=16,
        bos_token_id=0,
        eos_token_id=0,
    )
    reward_model = GPT2RewardModel(config=config)
    scorer = TensorDictModule(
        reward_model, in_keys=["input_ids", "attention_mask"], out_keys=["rewards", "score"]
    )
    rm_loss = RewardModelLoss(scorer).set_keys(chosen="chosen_data", rejected="rejected_data")
    optim = torch.optim.Adam(reward_model.parameters(), lr=3e-3)
    for _ in range(60):
        loss = rm_loss(_pairs(good_ids, bad_ids, 32, g).to_tensordict()).loss_reward_model
        optim.zero_grad()
        loss.backward()
        optim.step()
    with torch.no_grad():
        held_out = _pairs(good_ids, bad_ids, 256, torch.Generator().manual_seed(99))
        held_out = rm_loss(held_out.to_tensordict())
    assert held_out.accuracy.item() > 0.75  # chance is 0.5

    reward_model.eval()
    policy = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 3, "do_sample": True}
    )
    prompts, group = ["hi", "what is 2+2?", "tell me", "ok"], 8
    queries = [p for p in prompts for _ in range(group)]
    history = History.from_chats([[{"role": "user", "content": q}] for q in queries])

    def rollout():
        batch = policy(TensorDict(history={"prompt": history}, batch_size=[len(queries)]))
        response = batch["tokens"].response
        mask = batch["masks"].all_assistant_mask[:, -response.shape[1] :]
        with torch.no_grad():
            _, score = reward_model(response, mask)
        batch["query"] = queries
        batch["next", "reward"] = score.unsqueeze(-1)
        return batch

    loss_fn, advantage = DAPO(policy), MCAdvantage(grpo_size=group)
    optim = torch.optim.Adam(tiny_model.parameters(), lr=1e-2)
    rewards = []
    for _ in range(10):
        batch = rollout()
        rewards.append(batch["next", "reward"].mean().item())
        out = loss_fn(advantage(batch))
        optim.zero_grad()
        out.loss_objective.backward()
        optim.step()
    final = rollout()["next", "reward"].mean().item()
    assert final > rewards[0] + 1.0, [*rewards, final]
