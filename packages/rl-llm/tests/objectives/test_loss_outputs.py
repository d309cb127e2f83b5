import torch

from rl_llm.objectives import GRPOLossOutput, LLMLossOutput, SFTLossOutput


def test_fields_are_entries_and_attributes():
    loss = torch.tensor(0.5, requires_grad=True)
    out = GRPOLossOutput(loss_objective=loss, ESS=torch.tensor(1.0), loss_entropy=loss * 2)
    assert isinstance(out, LLMLossOutput)
    assert out.loss_objective is out["loss_objective"]
    assert out.entropy is None
    assert "entropy" not in out.keys()
    assert set(out.keys()) == {"loss_objective", "ESS", "loss_entropy"}
    # The losses sum like any TensorDict's.
    total = sum(v for k, v in out.items() if k.startswith("loss_"))
    assert total.item() == 1.5
    assert total.requires_grad
    assert type(out.clone()) is GRPOLossOutput
    sft = SFTLossOutput(loss_sft=torch.tensor(1.0), num_tokens=torch.tensor(3))
    assert sft.num_tokens.item() == 3
