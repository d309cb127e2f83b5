import pytest
import torch
from tensordict import TensorDict

from rl_llm.modules import HFRewardModelWrapper

transformers = pytest.importorskip(
    "transformers", reason='HFRewardModelWrapper tests need pip install "rl-llm[transformers]"'
)


def _reward_model(num_labels=1):
    config = transformers.Qwen2Config(
        vocab_size=40,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        num_labels=num_labels,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    return transformers.Qwen2ForSequenceClassification(config).eval()


def _batch():
    full = torch.tensor([[0, 0, 5, 6], [7, 8, 9, 10], [0, 11, 12, 13]])
    return TensorDict(
        tokens={"full": full}, masks={"all_attention_mask": full != 0}, batch_size=[3]
    )


def test_writes_the_models_score_of_each_sequence():
    model = _reward_model()
    td = _batch()
    out = HFRewardModelWrapper(model)(td)
    assert out is td
    # The score of a sequence is the model's logit at its last real token: computed here by
    # scoring each sequence alone, without padding.
    for i, row in enumerate(td["tokens", "full"]):
        alone = row[row != 0].unsqueeze(0)
        expected = model(input_ids=alone).logits.squeeze()
        torch.testing.assert_close(out["reward"][i], expected, atol=1e-5, rtol=1e-5)
    assert out["reward"].shape == (3,)
    assert out["reward"].dtype == torch.float32
    assert out["reward"].requires_grad  # gradients kept by default


def test_inference_mode_custom_keys_and_a_bare_tensor_model():
    class Length(torch.nn.Module):  # a reward model returning a bare [B] tensor
        def forward(self, input_ids, attention_mask=None):
            return attention_mask.sum(-1).float() if attention_mask is not None else input_ids[:, 0]

    td = TensorDict(
        ids=torch.tensor([[1, 2, 3], [4, 5, 6]]),
        m=torch.tensor([[0, 1, 1], [1, 1, 1]]),
        batch_size=[2],
    )
    wrapper = HFRewardModelWrapper(
        Length(), token_key="ids", attention_mask_key="m", reward_key=("next", "score")
    )
    assert wrapper(td)["next", "score"].tolist() == [2.0, 3.0]
    assert wrapper.in_keys == ["ids", "m"]
    assert wrapper.out_keys == [("next", "score")]
    no_mask = HFRewardModelWrapper(Length(), token_key="ids", attention_mask_key=None)
    assert no_mask(td)["reward"].tolist() == [1.0, 4.0]
    scored = HFRewardModelWrapper(_reward_model(), inference_mode=True)(_batch())
    assert not scored["reward"].requires_grad


def test_bad_models_and_inputs_are_named():
    with pytest.raises(TypeError, match=r"expected model to be a torch\.nn\.Module"):
        HFRewardModelWrapper(lambda input_ids: input_ids)
    with pytest.raises(KeyError, match=r"expected the token ids at \('tokens', 'full'\)"):
        HFRewardModelWrapper(_reward_model())(TensorDict(batch_size=[1]))
    td = TensorDict(tokens={"full": torch.ones(1, 3, dtype=torch.long)}, batch_size=[1])
    with pytest.raises(KeyError, match=r"attention_mask at \('masks', 'all_attention_mask'\)"):
        HFRewardModelWrapper(_reward_model())(td)
    with pytest.raises(ValueError, match=r"one score per sequence, shape \(3,\).*got \(3, 2\)"):
        HFRewardModelWrapper(_reward_model(num_labels=2))(_batch())

    class Words(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None):
            return {"text": "good"}

    with pytest.raises(TypeError, match="'logits' or 'rewards' tensor, got dict"):
        HFRewardModelWrapper(Words())(_batch())
