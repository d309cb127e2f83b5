"""Value transforms against float64 references written from Pohlen et al. 2018 (h, h^-1) and
DreamerV3 (symlog/symexp)."""

import math

import pytest
import torch

from rl_objectives.modules import (
    ComposeValueTransform,
    IdentityValueTransform,
    SignedHyperbolicValueTransform,
    SymLogValueTransform,
    ValueTransform,
    signed_hyperbolic,
    signed_parabolic,
    symexp,
    symlog,
)

VALUES = [-1e6, -250.0, -3.0, -1e-4, 0.0, 1e-7, 0.5, 8.0, 99.0, 1e8]


def ref_h(x: float, eps: float) -> float:
    sign = (x > 0) - (x < 0)
    return sign * (math.sqrt(abs(x) + 1) - 1) + eps * x


def ref_h_inv(y: float, eps: float) -> float:
    sign = (y > 0) - (y < 0)
    root = (math.sqrt(1 + 4 * eps * (abs(y) + 1 + eps)) - 1) / (2 * eps)
    return sign * (root**2 - 1)


@pytest.mark.parametrize("eps", [1e-3, 1e-2, 0.5])
def test_signed_hyperbolic_matches_pohlen_h_in_float64(eps):
    x = torch.tensor(VALUES, dtype=torch.float64)
    expected = torch.tensor([ref_h(v, eps) for v in VALUES], dtype=torch.float64)
    torch.testing.assert_close(signed_hyperbolic(x, eps), expected, rtol=1e-12, atol=1e-15)
    # hand values: h(8) = 3 - 1 + 8 eps, h(-3) = -(2 - 1) - 3 eps
    assert signed_hyperbolic(torch.tensor(8.0, dtype=torch.float64), eps).item() == pytest.approx(
        2 + 8 * eps, rel=1e-15
    )
    assert signed_hyperbolic(torch.tensor(-3.0, dtype=torch.float64), eps).item() == pytest.approx(
        -1 - 3 * eps, rel=1e-15
    )


@pytest.mark.parametrize("eps", [1e-3, 1e-2, 0.5])
def test_signed_parabolic_matches_pohlen_inverse_and_inverts_h(eps):
    y = torch.tensor([ref_h(v, eps) for v in VALUES], dtype=torch.float64)
    expected = torch.tensor([ref_h_inv(v, eps) for v in y.tolist()], dtype=torch.float64)
    torch.testing.assert_close(signed_parabolic(y, eps), expected, rtol=1e-9, atol=1e-12)
    x = torch.tensor(VALUES, dtype=torch.float64)
    torch.testing.assert_close(
        signed_parabolic(signed_hyperbolic(x, eps), eps), x, rtol=1e-10, atol=1e-12
    )
    torch.testing.assert_close(
        signed_hyperbolic(signed_parabolic(x, eps), eps), x, rtol=1e-10, atol=1e-12
    )


def test_small_epsilon_inverse_has_no_cancellation():
    # (sqrt(1 + 4 eps (|y|+1+eps)) - 1) / (2 eps) loses digits in float32 at eps = 1e-6
    x = torch.tensor([-5.0, 1.0, 30.0])
    back = signed_parabolic(signed_hyperbolic(x, 1e-6), 1e-6)
    torch.testing.assert_close(back, x, rtol=1e-5, atol=1e-5)


def test_slopes_at_zero_are_the_true_derivatives():
    for eps in (1e-3, 0.25):
        x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        signed_hyperbolic(x, eps).sum().backward()
        assert x.grad.item() == pytest.approx(0.5 + eps)
        y = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        signed_parabolic(y, eps).sum().backward()
        assert y.grad.item() == pytest.approx(1 / (0.5 + eps))
    z = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    (symlog(z) + symexp(z)).sum().backward()
    assert z.grad.item() == pytest.approx(2.0)  # slope 1 each; sign() gave 0


def test_transform_modules_agree_with_functions_and_invert():
    x = torch.tensor(VALUES, dtype=torch.float64)
    hyper = SignedHyperbolicValueTransform(epsilon=0.01)
    torch.testing.assert_close(hyper(x), signed_hyperbolic(x, 0.01))
    torch.testing.assert_close(hyper.inverse(hyper(x)), x, rtol=1e-10, atol=1e-12)
    sym = SymLogValueTransform()
    torch.testing.assert_close(sym(x), symlog(x))
    torch.testing.assert_close(sym.inverse(sym(x)), x, rtol=1e-10, atol=1e-12)
    assert IdentityValueTransform()(x) is x
    assert IdentityValueTransform().inverse(x) is x
    both = ComposeValueTransform(hyper, sym)
    torch.testing.assert_close(both(x), symlog(signed_hyperbolic(x, 0.01)))
    torch.testing.assert_close(both.inverse(both(x)), x, rtol=1e-9, atol=1e-12)
    assert isinstance(both, ValueTransform)


def test_value_transform_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        ValueTransform()


@pytest.mark.parametrize("eps", [0.0, -1e-3, float("nan"), "0.1", True])
def test_bad_epsilon_is_refused_naming_it(eps):
    with pytest.raises(ValueError, match="signed_hyperbolic: expected epsilon"):
        signed_hyperbolic(torch.ones(2), eps)
    with pytest.raises(ValueError, match="signed_parabolic: expected epsilon"):
        signed_parabolic(torch.ones(2), eps)
    with pytest.raises(ValueError, match="SignedHyperbolicValueTransform: expected epsilon"):
        SignedHyperbolicValueTransform(epsilon=eps)


def test_compose_refuses_a_non_transform_naming_its_position():
    with pytest.raises(TypeError, match="got function at position 1"):
        ComposeValueTransform(SymLogValueTransform(), symlog)
