import torch
from tensordict import TensorDict

from rl_llm.data import LogProbs, Masks, Text, Tokens


def test_outputs_live_in_a_tensordict_and_index_together():
    td = TensorDict(
        text=Text(prompt=["a", "b"], response=["x", "y"], full=["ax", "by"], batch_size=[2]),
        tokens=Tokens(
            prompt=torch.zeros(2, 3, dtype=torch.long),
            response=torch.ones(2, 2, dtype=torch.long),
            batch_size=[2],
        ),
        masks=Masks(all_attention_mask=torch.ones(2, 5, dtype=torch.bool), batch_size=[2]),
        log_probs=LogProbs(response=-torch.ones(2, 2), batch_size=[2]),
        batch_size=[2],
    )
    row = td[1]
    assert row["text"].full == "by"
    assert row["tokens"].response.shape == torch.Size([2])
    assert td["masks"].all_assistant_mask is None
    cat = torch.cat([td, td])
    assert cat["log_probs"].response.shape == torch.Size([4, 2])
    assert list(cat["text"].prompt) == ["a", "b", "a", "b"]
