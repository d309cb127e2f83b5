"""symlog/symexp and two-hot encoding against float64 references written from the DreamerV3
paper's definitions (Hafner et al. 2023, "Robust predictions")."""

import math

import pytest
import torch

from rl_objectives.modules import symexp, symlog, two_hot_decode, two_hot_encode

VALUES = [-1234.5, -20.0, -1.0, -0.3, 0.0, 1e-4, 0.7, 3.0, 88.0, 5000.0]


def ref_symlog(x: float) -> float:
    return math.copysign(math.log(abs(x) + 1.0), x) if x != 0 else 0.0


def ref_symexp(x: float) -> float:
    return math.copysign(math.exp(abs(x)) - 1.0, x) if x != 0 else 0.0


def ref_two_hot(x: float, bins: list[float]) -> list[float]:
    """All zeros but the two neighbours b_k <= x < b_{k+1}: |b_{k+1} - x| / |b_{k+1} - b_k| on
    k and |b_k - x| / |b_{k+1} - b_k| on k + 1; outside the support, one-hot on the end."""
    out = [0.0] * len(bins)
    if x <= bins[0]:
        out[0] = 1.0
        return out
    if x >= bins[-1]:
        out[-1] = 1.0
        return out
    k = max(i for i in range(len(bins)) if bins[i] <= x)
    gap = bins[k + 1] - bins[k]
    out[k] = abs(bins[k + 1] - x) / gap
    out[k + 1] = abs(bins[k] - x) / gap
    return out


def test_symlog_matches_definition_in_float64():
    x = torch.tensor(VALUES, dtype=torch.float64)
    expected = torch.tensor([ref_symlog(v) for v in VALUES], dtype=torch.float64)
    torch.testing.assert_close(symlog(x), expected, rtol=1e-14, atol=1e-15)
    assert symlog(x.float()).dtype == torch.float32


def test_symexp_matches_definition_and_inverts_symlog():
    y = torch.tensor([ref_symlog(v) for v in VALUES], dtype=torch.float64)
    expected = torch.tensor([ref_symexp(v) for v in y.tolist()], dtype=torch.float64)
    torch.testing.assert_close(symexp(y), expected, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(symexp(y), torch.tensor(VALUES, dtype=torch.float64), rtol=1e-12,
                               atol=1e-15)  # fmt: skip


def test_symlog_gradient_is_one_over_one_plus_abs_x():
    x = torch.tensor([-3.0, -0.5, 0.25, 9.0], dtype=torch.float64, requires_grad=True)
    symlog(x).sum().backward()
    expected = torch.tensor([1.0 / (1.0 + abs(v)) for v in [-3.0, -0.5, 0.25, 9.0]],
                            dtype=torch.float64)  # fmt: skip
    torch.testing.assert_close(x.grad, expected)


def test_two_hot_encode_matches_definition_on_symexp_bins():
    bins = [ref_symexp(-5.0 + 10.0 * i / 14) for i in range(15)]  # uneven spacing
    xs = [-500.0, -148.41, -3.3, -0.01, 0.0, 0.5, 1.7, 12.0, 148.41, 700.0]
    xs += [bins[3], bins[14]]  # on a support point, on the last one
    out = two_hot_encode(
        torch.tensor(xs, dtype=torch.float64), torch.tensor(bins, dtype=torch.float64)
    )
    expected = torch.tensor([ref_two_hot(x, bins) for x in xs], dtype=torch.float64)
    assert out.shape == (len(xs), 15)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out.sum(-1), torch.ones(len(xs), dtype=torch.float64))


def test_two_hot_encode_keeps_leading_shape_and_dtype():
    bins = torch.linspace(-2.0, 2.0, 9)
    x = torch.tensor([[0.1, -0.3, 5.0], [1.99, -2.0, 0.0]])
    out = two_hot_encode(x, bins)
    assert out.shape == (2, 3, 9)
    assert out.dtype == torch.float32
    expected = [
        [ref_two_hot(v, bins.double().tolist()) for v in row] for row in x.double().tolist()
    ]
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float32))


def test_two_hot_decode_is_the_softmax_expectation():
    bins = [ref_symexp(-4.0 + 8.0 * i / 10) for i in range(11)]
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 11, generator=gen, dtype=torch.float64) * 3
    expected = []
    for row in logits.tolist():
        z = [math.exp(v - max(row)) for v in row]
        expected.append(sum(zi * b for zi, b in zip(z, bins, strict=True)) / sum(z))
    out = two_hot_decode(logits, torch.tensor(bins, dtype=torch.float64))
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64), rtol=1e-12,
                               atol=1e-12)  # fmt: skip


def test_decode_of_encode_round_trips_inside_the_support():
    bins = symexp(torch.linspace(-20.0, 20.0, 255, dtype=torch.float64))  # DreamerV3's support
    x = torch.tensor([-12345.6, -3.0, 0.0, 0.42, 77.0, 1e6], dtype=torch.float64)
    torch.testing.assert_close(two_hot_decode(two_hot_encode(x, bins).log(), bins), x)


@pytest.mark.parametrize("bins", [torch.tensor([1.0]), torch.zeros(2, 3)])
def test_bad_bins_are_refused(bins):
    with pytest.raises(ValueError, match="expected bins as a 1-D tensor"):
        two_hot_encode(torch.zeros(3), bins)
    with pytest.raises(ValueError, match="expected bins as a 1-D tensor"):
        two_hot_decode(torch.zeros(3), bins)


def test_decode_refuses_logits_of_the_wrong_width():
    with pytest.raises(
        ValueError, match=r"last dim is the number of bins \(5\), got shape \(2, 4\)"
    ):
        two_hot_decode(torch.zeros(2, 4), torch.linspace(-1, 1, 5))


def test_two_hot_cross_entropy_matches_definition_with_gradient():
    from rl_objectives.modules import two_hot_cross_entropy

    bins = [ref_symexp(v) for v in (-3.0, -1.5, 0.0, 1.5, 3.0)]
    torch.manual_seed(0)
    logits = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    targets = [-30.0, -0.4, 2.0, 100.0]
    loss = two_hot_cross_entropy(
        logits, torch.tensor(targets, dtype=torch.float64).unsqueeze(-1),
        torch.tensor(bins, dtype=torch.float64),
    )  # fmt: skip
    loss.sum().backward()
    for i, x in enumerate(targets):
        row = logits[i].tolist()
        norm = math.log(sum(math.exp(v) for v in row))
        weights = ref_two_hot(x, bins)
        assert loss[i].item() == pytest.approx(-sum(w * (v - norm) for w, v in zip(weights, row)))
        softmax = [math.exp(v - norm) for v in row]
        # d/dl_k of -sum_j w_j log softmax_j = softmax_k - w_k (the weights sum to one)
        assert logits.grad[i].tolist() == pytest.approx([p - w for p, w in zip(softmax, weights)])


def test_two_hot_cross_entropy_refuses_mismatched_targets():
    from rl_objectives.modules import two_hot_cross_entropy

    with pytest.raises(ValueError, match=r"expected target of shape \(2,\) or \(2, 1\)"):
        two_hot_cross_entropy(torch.zeros(2, 3), torch.zeros(3), torch.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="number of bins"):
        two_hot_cross_entropy(torch.zeros(2, 4), torch.zeros(2), torch.tensor([0.0, 1.0, 2.0]))


@pytest.mark.parametrize("num_bins", [5, 6, 255])
def test_symexp_two_hot_bins_are_symexp_of_an_even_grid(num_bins):
    from rl_objectives.modules import SymExpTwoHot

    two_hot = SymExpTwoHot(num_bins)
    step = 40.0 / (num_bins - 1)
    expected = [ref_symexp(-20.0 + i * step) for i in range(num_bins)]
    assert two_hot.bins.dtype == torch.get_default_dtype()
    assert two_hot.bins.double().tolist() == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert torch.equal(two_hot.bins, -two_hot.bins.flip(0))  # exactly antisymmetric
    target = torch.tensor([-7.0, 0.0, 0.25, 42.0])
    assert torch.allclose(two_hot.decode(two_hot.encode(target).log()), target, rtol=1e-4)
    assert two_hot(torch.zeros(3, num_bins)).shape == (3, 1)
    with pytest.raises(ValueError, match="num_bins as an int >= 2"):
        SymExpTwoHot(1)
