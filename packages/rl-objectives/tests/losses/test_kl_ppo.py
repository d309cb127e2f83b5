import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import assert_same_grads, categorical_actor, grads, onpolicy_batch

from rl_objectives import KLPENPPOLoss


def test_kl_ppo_matches_reference_and_adapts_beta():
    actor, actor_net = categorical_actor()
    loss = KLPENPPOLoss(actor, beta=0.5, dtarg=0.01, entropy_bonus=False)
    td = onpolicy_batch()
    td["advantage"] = torch.randn(2, 6, 1)
    out = loss(td)
    logp = (torch.log_softmax(actor_net(td["observation"]), -1) * td["action"].float()).sum(-1)
    lw = logp - td["action_log_prob"]
    ref = -(lw.exp() * td["advantage"].squeeze(-1) - 0.5 * (-lw)).mean()
    torch.testing.assert_close(out["loss_objective"], ref)
    torch.testing.assert_close(out["kl"], (-lw).mean().detach())
    kl = out["kl"].item()
    expected_beta = 0.5 * (2.0 if kl > 0.015 else 0.5 if kl < 0.01 / 1.5 else 1.0)
    assert loss.beta.item() == pytest.approx(expected_beta)
    assert_same_grads(
        grads(out["loss_objective"], actor_net.parameters()), grads(ref, actor_net.parameters())
    )
    loss.eval()
    before = loss.beta.item()
    loss(td)
    assert loss.beta.item() == before


def test_kl_ppo_rejects_factors():
    actor, _ = categorical_actor()
    with pytest.raises(ValueError, match="expected increment >= 1 and decrement in"):
        KLPENPPOLoss(actor, increment=0.5)
