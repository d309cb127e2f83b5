"""DistillationLoss and k3_kl_token_estimate against float64 references."""

import copy
import math

import pytest
import torch
from tensordict import TensorDict

from rl_llm.data import History
from rl_llm.envs import RetrieveLogProb
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import DistillationLoss, DistillationLossOutput, k3_kl_token_estimate


def test_k3_estimate_by_hand():
    cur = torch.tensor([0.0, -1.0, 0.0, -2.5], dtype=torch.float64)
    other = torch.tensor([0.0, 0.0, -1.0, -0.5], dtype=torch.float64)
    # d = other - cur: 0, 1, -1, 2 -> e^d - 1 - d.
    expected = [0.0, math.e - 2, math.exp(-1), math.exp(2) - 3]
    got = k3_kl_token_estimate(cur, other).tolist()
    assert got == pytest.approx(expected, rel=1e-15)
    with pytest.raises(ValueError, match=r"one shape, got \(4,\) and \(2,\)"):
        k3_kl_token_estimate(cur, other[:2])


def test_k3_is_an_unbiased_estimate_of_the_kl():
    # Two categorical distributions; tokens drawn from p: mean k3 -> KL(p || q).
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64)
    exact = float((p * (p / q).log()).sum())
    k3 = k3_kl_token_estimate(p.log(), q.log())
    assert float((p * k3).sum()) == pytest.approx(exact, rel=1e-12)


@pytest.fixture
def distill_batch(tiny_model, tiny_tokenizer):
    torch.manual_seed(0)
    student = TransformersWrapper(
        tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    teacher_model = copy.deepcopy(tiny_model)
    with torch.no_grad():
        for p in teacher_model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    teacher = TransformersWrapper(teacher_model, tiny_tokenizer, generate=False)
    prompts = History.from_chats(
        [[{"role": "user", "content": q}] for q in ["What is 1+2?", "hi", "hello world ok"]]
    )
    batch = student(TensorDict(history={"prompt": prompts}, batch_size=[3]))
    batch = RetrieveLogProb(teacher, log_probs_full_key=("teacher_log_probs", "full"))(batch)
    return student, batch


def _reference(model, batch, normalize):
    """Per sequence, unpadded: sum over assistant tokens of k3(student, teacher)."""
    tokens, masks = batch["tokens"], batch["masks"]
    per_seq = []
    for i in range(tokens.full.shape[0]):
        real = masks.all_attention_mask[i]
        ids = tokens.full[i][real].unsqueeze(0)
        logits = model(input_ids=ids).logits[0, :-1].double()
        lp = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None]).squeeze(-1)
        keep = masks.all_assistant_mask[i][real][1:]
        teacher = batch["teacher_log_probs", "full"][i][real][1:].double()
        d = teacher[keep] - lp[keep]
        total = (d.exp() - 1 - d).sum()
        per_seq.append(total / max(int(keep.sum()), 1) if normalize else total)
    return torch.stack(per_seq)


@pytest.mark.parametrize("normalize", [True, False])
def test_distillation_matches_the_reference(distill_batch, tiny_model, normalize):
    student, batch = distill_batch
    expected = _reference(tiny_model, batch, normalize)
    out = DistillationLoss(student, distill_coeff=0.5, normalize_by_seq_length=normalize)(batch)
    assert isinstance(out, DistillationLossOutput)
    torch.testing.assert_close(
        out.loss_distill.double(), 0.5 * expected.mean(), rtol=1e-4, atol=1e-6
    )
    none = DistillationLoss(student, reduction="none", normalize_by_seq_length=normalize)(batch)
    torch.testing.assert_close(none["loss_distill"].double(), expected, rtol=1e-4, atol=1e-6)
    total = DistillationLoss(student, reduction="sum", normalize_by_seq_length=normalize)(batch)
    torch.testing.assert_close(total.loss_distill.double(), expected.sum(), rtol=1e-4, atol=1e-6)
    assert out.kl_to_teacher > 0
    assert not out.kl_to_teacher.requires_grad
    grads = torch.autograd.grad(out.loss_distill, list(tiny_model.parameters()), allow_unused=True)
    assert all(torch.isfinite(g).all() for g in grads if g is not None)


def test_an_empty_response_contributes_zero_and_the_teacher_itself_gives_zero(distill_batch):
    student, batch = distill_batch
    width = batch["tokens"].response.shape[1]
    mask = batch["masks"].all_assistant_mask.clone()
    mask[1, -width:] = False  # the second reply has no assistant token
    batch["masks"].all_assistant_mask = mask
    per_seq = DistillationLoss(student, reduction="none")(batch).loss_distill
    assert per_seq[1].item() == 0.0
    assert per_seq[0].item() > 0
    # A teacher equal to the student: zero loss (and a huge value at padding changes nothing).
    with torch.no_grad():
        own = RetrieveLogProb(TransformersWrapper(student.model, student.tokenizer, generate=False))
        lp = own.log_probs(batch)
    batch["teacher_log_probs", "full"] = torch.where(
        batch["masks"].all_attention_mask, lp, torch.full_like(lp, 1e4)
    )
    out = DistillationLoss(student)(batch)
    assert out.loss_distill.abs().item() < 1e-5
    out.loss_distill.backward()
    assert all(
        torch.isfinite(p.grad).all() for p in student.model.parameters() if p.grad is not None
    )


def test_bad_input_is_reported(distill_batch):
    student, batch = distill_batch
    with pytest.raises(
        ValueError, match=r"expected reduction in \('mean', 'sum', 'none'\), got 'avg'"
    ):
        DistillationLoss(student, reduction="avg")
    with pytest.raises(KeyError, match=r"expected the entry \('teacher_log_probs', 'full'\)"):
        DistillationLoss(student)(batch.exclude("teacher_log_probs"))
    batch["teacher_log_probs", "full"] = batch["teacher_log_probs", "full"][:, 1:]
    with pytest.raises(ValueError, match="expected teacher log-probs of the full sequence's shape"):
        DistillationLoss(student)(batch)
