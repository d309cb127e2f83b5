"""BatchRenorm1d against Ioffe (2017)'s r/d corrections, computed by hand in float64."""

import pytest
import torch

from rl_objectives.modules import BatchRenorm1d

F64 = torch.float64


def _norm(**kwargs):
    return BatchRenorm1d(2, **kwargs).double()


def test_after_warmup_r_and_d_correct_towards_the_running_statistics_and_are_clipped():
    norm = _norm(warmup_steps=0, max_r=1.5, max_d=0.5, momentum=0.1, eps=0.0 + 1e-5)
    norm.running_mean.copy_(torch.tensor([0.0, 1.0]))
    norm.running_var.copy_(torch.tensor([1.0, 4.0]))
    x = torch.tensor([[0.0, 10.0], [4.0, 10.5], [8.0, 11.0]], dtype=F64)
    y = norm(x)
    eps = 1e-5
    for f in range(2):
        col = x[:, f]
        mean, var = col.mean().item(), col.var(unbiased=False).item()
        std = (var + eps) ** 0.5
        run_std = ([1.0, 4.0][f] + eps) ** 0.5
        r = min(max(std / run_std, 1 / 1.5), 1.5)
        d = min(max((mean - [0.0, 1.0][f]) / run_std, -0.5), 0.5)
        expected = [((v - mean) / std) * r + d for v in col.tolist()]
        assert y[:, f].tolist() == pytest.approx(expected, rel=1e-12)
    # feature 0: std 3.27 / 1 clipped to r = 1.5, mean 4 clipped to d = 0.5
    # running statistics: a momentum step towards the batch's (unbiased variance)
    assert norm.running_mean.tolist() == pytest.approx([0.1 * 4.0, 1.0 + 0.1 * (10.5 - 1.0)])
    assert norm.running_var[0].item() == pytest.approx(1.0 + 0.1 * (16.0 - 1.0))
    assert int(norm.num_batches_tracked) == 1


def test_warmup_is_batch_norm_and_smooth_warmup_ramps_in():
    x = torch.tensor([[0.0, 1.0], [2.0, 5.0], [7.0, 3.0]], dtype=F64)
    plain = _norm(warmup_steps=10)
    plain.running_mean.fill_(100.0)
    expected = (x - x.mean(0)) / (x.var(0, unbiased=False) + 1e-5).sqrt()
    torch.testing.assert_close(plain(x), expected)
    smooth = _norm(warmup_steps=4, smooth=True, max_d=100.0, max_r=100.0)
    smooth.num_batches_tracked.fill_(1)  # a quarter of the way: r = 1 + (r - 1) / 4, d = d / 4
    smooth.running_var.fill_(4.0)
    run_std = (4.0 + 1e-5) ** 0.5
    std = (x.var(0, unbiased=False) + 1e-5).sqrt()
    r = 1 + (std / run_std - 1) / 4
    d = (x.mean(0) / run_std) / 4
    torch.testing.assert_close(smooth(x), (x - x.mean(0)) / std * r + d)


def test_eval_uses_the_running_statistics_and_weights():
    norm = _norm()
    norm.running_mean.copy_(torch.tensor([1.0, -1.0]))
    norm.running_var.copy_(torch.tensor([4.0, 9.0]))
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([2.0, 1.0]))
        norm.bias.copy_(torch.tensor([0.5, 0.0]))
    norm.eval()
    x = torch.tensor([[3.0, 2.0]], dtype=F64)
    expected = [2.0 * (2.0 / (4 + 1e-5) ** 0.5) + 0.5, 3.0 / (9 + 1e-5) ** 0.5]
    assert norm(x)[0].tolist() == pytest.approx(expected)
    assert norm(torch.zeros(4, 2, 5, dtype=F64)).shape == (4, 2, 5)  # (N, C, L)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"max_r to be a number >= 1, got 0.5"):
        BatchRenorm1d(3, max_r=0.5)
    with pytest.raises(ValueError, match="momentum to be a number in"):
        BatchRenorm1d(3, momentum=0.0)
    with pytest.raises(ValueError, match=r"input of shape \(N, 3, ...\), got \(4, 2\)"):
        BatchRenorm1d(3)(torch.zeros(4, 2))
    with pytest.raises(ValueError, match="more than one value per feature"):
        BatchRenorm1d(3)(torch.zeros(1, 3))
