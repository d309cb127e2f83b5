import functools
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _reference import apply_per_sequence, seq_gae, seq_td_lambda, seq_vtrace

from rl_objectives.value import functional as F


def make(shape, time_dim, seed=0, p_done=0.15, p_trunc=0.5):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(shape, generator=g)
    nv = torch.randn(shape, generator=g)
    r = torch.randn(shape, generator=g)
    done = torch.rand(shape, generator=g) < p_done
    # part of the ends are truncations (done without terminated)
    trunc = done & (torch.rand(shape, generator=g) < p_trunc)
    term = done & ~trunc
    return v, nv, r, done, term


SHAPES = [((7, 1), 0), ((3, 11, 1), 1), ((11, 3, 2), 0), ((2, 3, 9, 1), 2), ((2, 9, 3, 1), -3)]


@pytest.mark.parametrize(("shape", "time_dim"), SHAPES)
@pytest.mark.parametrize("vectorized", [False, True])
def test_gae_matches_reference_loop(shape, time_dim, vectorized):
    v, nv, r, done, term = make(shape, time_dim)
    fn = F.vec_generalized_advantage_estimate if vectorized else F.generalized_advantage_estimate
    adv, target = fn(0.9, 0.8, v, nv, r, done, term, time_dim=time_dim)
    (ref,) = apply_per_sequence(
        functools.partial(seq_gae, 0.9, 0.8), time_dim, v, nv, r, done, term
    )
    torch.testing.assert_close(adv.double(), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(target.double(), ref + v.double(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("shape", "time_dim"), SHAPES)
@pytest.mark.parametrize("lmbda", [0.0, 0.7, 1.0])
@pytest.mark.parametrize("vectorized", [False, True])
def test_td_lambda_matches_reference_loop(shape, time_dim, lmbda, vectorized):
    _, nv, r, done, term = make(shape, time_dim, seed=1)
    fn = F.vec_td_lambda_return_estimate if vectorized else F.td_lambda_return_estimate
    out = fn(0.95, lmbda, nv, r, done, term, time_dim=time_dim)
    (ref,) = apply_per_sequence(
        functools.partial(seq_td_lambda, 0.95, lmbda), time_dim, nv, r, done, term
    )
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("shape", "time_dim"), SHAPES)
@pytest.mark.parametrize("vectorized", [False, True])
def test_td1_matches_reference_loop(shape, time_dim, vectorized):
    v, nv, r, done, term = make(shape, time_dim, seed=2)
    fn = F.vec_td1_return_estimate if vectorized else F.td1_return_estimate
    out = fn(0.9, nv, r, done, term, time_dim=time_dim)
    (ref,) = apply_per_sequence(
        functools.partial(seq_td_lambda, 0.9, 1.0), time_dim, nv, r, done, term
    )
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)
    adv = F.td1_advantage_estimate(0.9, v, nv, r, done, term, time_dim=time_dim)
    torch.testing.assert_close(adv.double(), ref - v.double(), atol=1e-5, rtol=1e-5)


def test_td0_bootstraps_on_truncation_not_termination():
    nv = torch.full((3, 1), 10.0)
    r = torch.ones(3, 1)
    term = torch.tensor([[False], [True], [False]])
    out = F.td0_return_estimate(0.5, nv, r, term)
    assert out.flatten().tolist() == [6.0, 1.0, 6.0]
    adv = F.td0_advantage_estimate(0.5, torch.ones(3, 1), nv, r, term)
    assert adv.flatten().tolist() == [5.0, 0.0, 5.0]


@pytest.mark.parametrize(("shape", "time_dim"), SHAPES)
def test_vtrace_matches_reference_loop(shape, time_dim):
    v, nv, r, done, term = make(shape, time_dim, seed=3)
    g = torch.Generator().manual_seed(4)
    lp = torch.randn(shape, generator=g) * 0.5
    lm = torch.randn(shape, generator=g) * 0.5
    adv, vs = F.vtrace_advantage_estimate(
        0.9, lp, lm, v, nv, r, done, term, rho_thresh=1.2, c_thresh=0.9, time_dim=time_dim
    )
    ref_adv, ref_vs = apply_per_sequence(
        functools.partial(seq_vtrace, 0.9, 1.2, 0.9), time_dim, lp, lm, v, nv, r, done, term
    )
    torch.testing.assert_close(vs.double(), ref_vs, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(adv.double(), ref_adv, atol=1e-5, rtol=1e-5)


def test_truncation_bootstraps_and_cuts_the_trace():
    # step 1 truncated: bootstraps from next value 10, trace from step 2 does not reach 1
    v = torch.zeros(3, 1)
    nv = torch.tensor([[0.0], [10.0], [0.0]])
    r = torch.ones(3, 1)
    done = torch.tensor([[False], [True], [False]])
    adv, _ = F.generalized_advantage_estimate(1.0, 1.0, v, nv, r, done, torch.zeros_like(done))
    assert adv.flatten().tolist() == [12.0, 11.0, 1.0]
    adv_term, _ = F.generalized_advantage_estimate(1.0, 1.0, v, nv, r, done, done)
    assert adv_term.flatten().tolist() == [2.0, 1.0, 1.0]


def test_vectorized_gradients_match_looped():
    v, nv, r, done, term = make((4, 13, 1), 1, seed=5)
    grads = []
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        vv = v.clone().requires_grad_()
        rr = r.clone().requires_grad_()
        adv, _ = fn(0.9, 0.9, vv, nv, rr, done, term, time_dim=1)
        (adv * torch.arange(13.0).view(1, 13, 1)).sum().backward()
        grads.append((vv.grad, rr.grad))
    torch.testing.assert_close(grads[0][0], grads[1][0])
    torch.testing.assert_close(grads[0][1], grads[1][1])


def test_vectorized_rejects_bad_input():
    # The vec_* names run their looped twins: the errors name the function that checks.
    v, nv, r, done, term = make((5, 1), 0)
    with pytest.raises(
        ValueError, match=r"^generalized_advantage_estimate: expected lmbda in \[0, 1\]"
    ):
        F.vec_generalized_advantage_estimate(0.9, 1.5, v, nv, r, done, term, time_dim=0)
    with pytest.raises(ValueError, match="expected reward of shape"):
        F.vec_generalized_advantage_estimate(0.9, 0.5, v, nv, r[:3], done, term, time_dim=0)
    with pytest.raises(TypeError, match=r"expected done to be a torch\.bool tensor"):
        F.vec_td_lambda_return_estimate(0.9, 0.5, nv, r, done.float(), None, time_dim=0)
    with pytest.raises(ValueError, match="time_dim=3 is out of range"):
        F.vec_td1_return_estimate(0.9, nv, r, done, time_dim=3)


def test_looped_rejects_bad_input():
    v, nv, r, done, term = make((5, 1), 0)
    with pytest.raises(ValueError, match="gamma"):
        F.generalized_advantage_estimate(1.5, 0.5, v, nv, r, done, term, time_dim=0)


# --- issue 43: the vec_* functions are TorchRL's fast path: same op, any T -----------------


@pytest.mark.parametrize(("shape", "time_dim"), SHAPES)
def test_vec_gae_runs_the_looped_op_bit_for_bit(shape, time_dim):
    # Same op as generalized_advantage_estimate: identical bits (the former O(T^2) matrix
    # product rounded differently and was 22x slower than a plain loop on [64, 1000]).
    v, nv, r, done, term = make(shape, time_dim, seed=6)
    vec = F.vec_generalized_advantage_estimate(0.97, 0.9, v, nv, r, done, term, time_dim=time_dim)
    looped = F.generalized_advantage_estimate(0.97, 0.9, v, nv, r, done, term, time_dim=time_dim)
    for a, b in zip(vec, looped):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    "fn",
    [
        lambda v, nv, r, d: F.vec_generalized_advantage_estimate(0.9, 0.8, v, nv, r, d)[0],
        lambda v, nv, r, d: F.vec_td_lambda_return_estimate(0.9, 0.8, nv, r, d),
        lambda v, nv, r, d: F.vec_td_lambda_advantage_estimate(0.9, 0.8, v, nv, r, d),
        lambda v, nv, r, d: F.vec_td1_return_estimate(0.9, nv, r, d),
        lambda v, nv, r, d: F.vec_td1_advantage_estimate(0.9, v, nv, r, d),
    ],
    ids=["gae", "td_lambda_return", "td_lambda_advantage", "td1_return", "td1_advantage"],
)
@pytest.mark.parametrize("shape", [(4, 0, 1), (0, 5, 1), (0, 1)])
def test_vec_functions_accept_no_steps(fn, shape):
    v = torch.zeros(shape)
    out = fn(v, v, v, torch.zeros(shape, dtype=torch.bool))
    assert out.shape == shape


@pytest.mark.parametrize(("shape", "time_dim"), SHAPES)
@pytest.mark.parametrize("lmbda", [0.0, 0.6, 1.0])
def test_vec_td_lambda_advantage_matches_reference_loop(shape, time_dim, lmbda):
    v, nv, r, done, term = make(shape, time_dim, seed=7)
    adv = F.vec_td_lambda_advantage_estimate(0.95, lmbda, v, nv, r, done, term, time_dim=time_dim)
    (ref,) = apply_per_sequence(
        functools.partial(seq_td_lambda, 0.95, lmbda), time_dim, nv, r, done, term
    )
    torch.testing.assert_close(adv.double(), ref - v.double(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("shape", "time_dim"), SHAPES)
def test_vec_td1_advantage_matches_reference_loop(shape, time_dim):
    v, nv, r, done, term = make(shape, time_dim, seed=8)
    adv = F.vec_td1_advantage_estimate(0.9, v, nv, r, done, term, time_dim=time_dim)
    (ref,) = apply_per_sequence(
        functools.partial(seq_td_lambda, 0.9, 1.0), time_dim, nv, r, done, term
    )
    torch.testing.assert_close(adv.double(), ref - v.double(), atol=1e-5, rtol=1e-5)


def test_vec_advantages_reject_mismatched_state_value():
    v, nv, r, done, term = make((6, 1), 0)
    match = r"td_lambda_advantage_estimate: expected state_value of shape \(6, 1\) like reward"
    for fn in (F.td_lambda_advantage_estimate, F.vec_td_lambda_advantage_estimate):
        with pytest.raises(ValueError, match=rf"^{match}, got \(4, 1\)"):
            fn(0.9, 0.5, v[:4], nv, r, done, term, time_dim=0)
    for fn in (F.td1_advantage_estimate, F.vec_td1_advantage_estimate):
        with pytest.raises(TypeError, match=r"^td1_advantage_estimate: expected state_value to"):
            fn(0.9, v.long(), nv, r, done, term, time_dim=0)
    with pytest.raises(ValueError, match=r"^td0_advantage_estimate: expected state_value of"):
        F.td0_advantage_estimate(0.9, v[:4], nv, r, term)
    with pytest.raises(TypeError, match=r"td_lambda_return_estimate: expected gamma to be a float"):
        F.vec_td1_return_estimate(torch.full((6, 1), 0.9), nv, r, done, time_dim=0)


def test_vec_names_share_their_twins_signature_and_docstring():
    import inspect

    assert F.vec_generalized_advantage_estimate is F.generalized_advantage_estimate
    for name in (
        "td_lambda_return_estimate",
        "td_lambda_advantage_estimate",
        "td1_return_estimate",
        "td1_advantage_estimate",
    ):
        looped, vec = getattr(F, name), getattr(F, f"vec_{name}")
        assert vec.__name__ == f"vec_{name}"
        assert inspect.signature(vec) == inspect.signature(looped)
        assert vec.__doc__ == looped.__doc__


def test_one_definition_per_estimator():
    # The functional layer is rl_core.ops' wrappers, not a copy of them.
    import rl_core.ops

    for name in (
        "generalized_advantage_estimate",
        "vtrace_advantage_estimate",
        "td0_return_estimate",
    ):
        assert getattr(F, name) is getattr(rl_core.ops, name)


@pytest.mark.parametrize("rolling_gamma", [None, True])
def test_rolling_gamma_none_or_true_leaves_the_returns_unchanged(rolling_gamma):
    v, nv, r, done, term = make((3, 10, 1), 1, seed=9)
    (ref,) = apply_per_sequence(functools.partial(seq_td_lambda, 0.9, 0.7), 1, nv, r, done, term)
    (ref1,) = apply_per_sequence(functools.partial(seq_td_lambda, 0.9, 1.0), 1, nv, r, done, term)
    outs = {
        "td_lambda": F.td_lambda_return_estimate(0.9, 0.7, nv, r, done, term, rolling_gamma),
        "vec_td_lambda": F.vec_td_lambda_return_estimate(
            0.9, 0.7, nv, r, done, term, rolling_gamma
        ),
        "td_lambda_adv": F.td_lambda_advantage_estimate(
            0.9, 0.7, v, nv, r, done, term, rolling_gamma
        )
        + v,
        "vec_td_lambda_adv": F.vec_td_lambda_advantage_estimate(
            0.9, 0.7, v, nv, r, done, term, rolling_gamma
        )
        + v,
    }
    outs1 = {
        "td1": F.td1_return_estimate(0.9, nv, r, done, term, rolling_gamma),
        "vec_td1": F.vec_td1_return_estimate(0.9, nv, r, done, term, rolling_gamma),
        "td1_adv": F.td1_advantage_estimate(0.9, v, nv, r, done, term, rolling_gamma) + v,
        "vec_td1_adv": F.vec_td1_advantage_estimate(0.9, v, nv, r, done, term, rolling_gamma) + v,
    }
    for out in outs.values():
        torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)
    for out in outs1.values():
        torch.testing.assert_close(out.double(), ref1, atol=1e-5, rtol=1e-5)


def test_rolling_gamma_false_with_a_scalar_gamma_follows_torchrl():
    # TorchRL 0.14: the looped TD(1)/TD(lambda) raise RuntimeError, the vec_* ones take the
    # scalar fast path and return the usual returns.
    v, nv, r, done, term = make((2, 8, 1), 1, seed=10)
    for call, name in [
        (lambda: F.td1_return_estimate(0.9, nv, r, done, term, False), "td1_return_estimate"),
        (
            lambda: F.td1_advantage_estimate(0.9, v, nv, r, done, term, False),
            "td1_advantage_estimate",
        ),
        (
            lambda: F.td_lambda_return_estimate(0.9, 0.5, nv, r, done, term, False),
            "td_lambda_return_estimate",
        ),
        (
            lambda: F.td_lambda_advantage_estimate(0.9, 0.5, v, nv, r, done, term, False),
            "td_lambda_advantage_estimate",
        ),
    ]:
        with pytest.raises(RuntimeError, match=rf"{name}: rolling_gamma=False is meant for"):
            call()
    (ref,) = apply_per_sequence(functools.partial(seq_td_lambda, 0.9, 0.5), 1, nv, r, done, term)
    out = F.vec_td_lambda_return_estimate(0.9, 0.5, nv, r, done, term, False)
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)
    (ref1,) = apply_per_sequence(functools.partial(seq_td_lambda, 0.9, 1.0), 1, nv, r, done, term)
    out = F.vec_td1_advantage_estimate(0.9, v, nv, r, done, term, rolling_gamma=False)
    torch.testing.assert_close(out.double(), ref1 - v.double(), atol=1e-5, rtol=1e-5)
    with pytest.raises(
        TypeError, match="expected rolling_gamma to be None, True or False, got str"
    ):
        F.vec_td1_return_estimate(0.9, nv, r, done, term, "yes")
