import pytest
import torch
from torch.nn import functional as F

from rl_objectives.mixers import QMixer


def test_qmixer_matches_hand_written_mixing_and_is_monotonic():
    torch.manual_seed(0)
    mixer = QMixer((2, 3), 5, 4)
    q = torch.randn(7, 4, 1, requires_grad=True)
    state = torch.randn(7, 2, 3)
    out = mixer(q, state)
    s = state.reshape(7, 6)
    w1 = mixer.hyper_w_1(s).abs().reshape(7, 4, 5)
    b1 = mixer.hyper_b_1(s)
    w2 = mixer.hyper_w_final(s).abs()
    v = mixer.V(s)
    hidden = F.elu(torch.einsum("ba,bae->be", q.squeeze(-1), w1) + b1)
    ref = (hidden * w2).sum(-1, keepdim=True) + v
    torch.testing.assert_close(out, ref)
    (grad,) = torch.autograd.grad(out.sum(), q)
    assert (grad >= 0).all()


def test_qmixer_rejects_agent_count():
    with pytest.raises(ValueError, match=r"QMixer: expected agent values of shape \[\*B, 4, 1\]"):
        QMixer((3,), 5, 4)(torch.zeros(2, 3, 1), torch.zeros(2, 3))


def test_qmixer_keeps_extra_batch_dims_apart_in_float64():
    # [T, B, n_agents, 1] with a [T, B, *state_shape] state: each (t, b) is mixed with its own
    # state, by the definition Q_tot = elu(q |W1(s)| + b1(s)) |W2(s)| + V(s), row by row.
    torch.manual_seed(0)
    mixer = QMixer((3, 2), 4, 3).double()
    q = torch.randn(2, 5, 3, 1, dtype=torch.float64)
    state = torch.randn(2, 5, 3, 2, dtype=torch.float64)
    out = mixer(q, state)
    assert out.shape == (2, 5, 1)
    for t in range(2):
        for b in range(5):
            s = state[t, b].reshape(6)
            w1 = mixer.hyper_w_1(s).abs().reshape(3, 4)
            hidden = F.elu(q[t, b, :, 0] @ w1 + mixer.hyper_b_1(s))
            ref = hidden @ mixer.hyper_w_final(s).abs() + mixer.V(s)
            torch.testing.assert_close(out[t, b], ref, rtol=1e-12, atol=1e-12)
