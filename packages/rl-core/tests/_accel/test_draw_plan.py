"""The ProbabilisticActor node's draws (``rl_core._accel.draw_plan``) against the generic call.

The oracle is ``policy(td)`` under the same seed: every entry bitwise, dtype, the global RNG
state afterwards, and on bad input the same exception type and message. Each case also
checks that the draw really ran (returned a sample) or really stepped aside (returned
``None``), so a test cannot pass by the fast path silently never running. The
log-probabilities are also checked against float64 formulas written from the definitions.
"""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

from rl_core import ExplorationType, set_exploration_type
from rl_core._accel.draw_plan import draw_for as _draw_for
from rl_core._accel.policy_classes import REGISTERED
from rl_core._accel.seam import PolicyCallPlan
from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor, TanhNormal


def draw_for(head):
    """The draw of ``head`` with the classes ``rl_core.modules`` registered."""
    return _draw_for(head, REGISTERED.classes)


@pytest.fixture(autouse=True)
def _validation_default():
    # Argument validation is process-wide (torch.compile tests turn it off): each test here
    # sets what it needs and gets the previous setting back.
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


def _obs(batch=6, features=3, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return TensorDict(observation=torch.randn(batch, features, generator=gen), batch_size=[batch])


def _head(actor):
    return actor.module[-1]


def _categorical(net=None, n=4, **kwargs):
    torch.manual_seed(0)
    net = net if net is not None else MLP(3, n, num_cells=[8])
    return ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["logits"]), ["logits"],
        distribution_class=OneHotCategorical, **kwargs,
    )  # fmt: skip


def _tanh_normal(net=None, out=4, **kwargs):
    torch.manual_seed(0)
    net = (
        net
        if net is not None
        else nn.Sequential(MLP(3, out, num_cells=[8]), NormalParamExtractor())
    )
    return ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]), ["loc", "scale"],
        distribution_class=TanhNormal, **kwargs,
    )  # fmt: skip


def _draw_runs(actor, td, *, grad=False):
    """Whether the node's draw returns a sample for ``td`` (the draw itself, RNG restored),
    under ``no_grad`` (the collectors) unless ``grad``."""
    draw = draw_for(_head(actor))
    if draw is None:
        return False
    state = torch.get_rng_state()
    with torch.enable_grad() if grad else torch.no_grad():
        params = actor.module[0](td.clone())
        try:
            return draw(params, _head(actor).return_log_prob) is not None
        finally:
            torch.set_rng_state(state)


def _outcome(call, td, seed):
    torch.manual_seed(seed)
    try:
        out = call(td.clone())
    except Exception as err:  # the error is the outcome compared
        return ("raised", type(err), str(err), torch.rand(2))
    return ("returned", out, torch.rand(2))


def _same(actor, td, *, seed=0, grad=False):
    """``PolicyCallPlan(actor)(td)`` gives what ``actor(td)`` gives (or raises what it
    raises), with the same RNG state after it; returns the plan's result."""
    plan = PolicyCallPlan(actor)
    context = torch.enable_grad() if grad else torch.no_grad()
    with set_exploration_type(ExplorationType.RANDOM), context:
        expected = _outcome(actor, td, seed)
        got = _outcome(plan, td, seed)
    assert got[0] == expected[0], (got, expected)
    if expected[0] == "raised":
        assert got[1:3] == expected[1:3]
        torch.testing.assert_close(got[3], expected[3], rtol=0, atol=0)
        return None
    out, ref = got[1], expected[1]
    assert sorted(map(str, out.keys(True, True))) == sorted(map(str, ref.keys(True, True)))
    for key in ref.keys(True, True):
        a, b = out.get(key), ref.get(key)
        assert a.dtype == b.dtype, key
        assert a.shape == b.shape, key
        assert a.requires_grad == b.requires_grad, key
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=str(key))
    torch.testing.assert_close(got[2], expected[2], rtol=0, atol=0)
    return out


CATEGORICAL = {
    "default": {},
    "log_prob": {"return_log_prob": True},
    "no rsample": {"distribution_kwargs": {"grad_method": None}, "return_log_prob": True},
    "validate_args=False": {"distribution_kwargs": {"validate_args": False}},
    "validate_args=True": {"distribution_kwargs": {"validate_args": True, "temperature": 2.0}},
}


@pytest.mark.parametrize("case", list(CATEGORICAL))
@pytest.mark.parametrize("validation", [True, False])
def test_one_hot_categorical_draw_equals_the_generic_call(case, validation):
    torch.distributions.Distribution.set_default_validate_args(validation)
    actor = _categorical(**CATEGORICAL[case])
    td = _obs(batch=64)
    assert _draw_runs(actor, td)
    out = _same(actor, td, seed=3)
    assert (out["action"].sum(-1) == 1).all()


def test_one_hot_categorical_draw_of_one_unbatched_row_and_of_a_2d_batch():
    for td in (TensorDict(observation=torch.randn(3)), _obs().reshape(2, 3)):
        actor = _categorical(return_log_prob=True)
        assert _draw_runs(actor, td)
        _same(actor, td, seed=5)


def test_one_hot_categorical_log_prob_is_the_log_softmax_of_the_drawn_action():
    actor = _categorical(return_log_prob=True)
    td = _obs(batch=32)
    out = _same(actor, td, seed=8)
    with torch.no_grad():
        logits = actor.module[0](td.clone())["logits"].double()
    # log p(a) = logit_a - log(sum_j exp(logit_j)), written out in float64.
    index = out["action"].argmax(-1)
    expected = [
        row[i].item() - math.log(sum(math.exp(v) for v in row.tolist()))
        for row, i in zip(logits, index, strict=True)
    ]
    torch.testing.assert_close(
        out["action_log_prob"].double(), torch.tensor(expected, dtype=torch.float64)
    )


def _fixed_logits(values):
    """A parameter module writing ``values`` as the logits of a batch of its rows."""
    return lambda obs: values.expand(obs.shape[0], -1).clone()


BAD_LOGITS = {
    "nan": [float("nan"), 0.0],
    "+inf": [float("inf"), 0.0],
    "all -inf": [float("-inf"), float("-inf")],
    "one -inf": [float("-inf"), 0.0],
}


@pytest.mark.parametrize("bad", list(BAD_LOGITS.values()), ids=list(BAD_LOGITS))
@pytest.mark.parametrize("validation", [True, False])
def test_one_hot_categorical_bad_logits_raise_or_pass_as_the_generic_call(bad, validation):
    torch.distributions.Distribution.set_default_validate_args(validation)
    logits = torch.tensor(bad)
    actor = _categorical(net=_fixed_logits(logits), return_log_prob=True)
    td = _obs()
    # Finite rows draw; rows the generic checks reject (or multinomial refuses) step aside
    # (with validation on) or reach the same torch error (validation off).
    _same(actor, td, seed=1)


def test_one_hot_categorical_steps_aside_where_it_could_differ():
    td = _obs()
    if True:
        # float16 logits: the simplex check's rounding is not the one proven here.
        half = _categorical(net=lambda obs: torch.zeros(obs.shape[0], 3, dtype=torch.float16))
        assert not _draw_runs(half, td)
        _same(half, td)
        # A relaxed (Gumbel-softmax) sample: another distribution's draw.
        relaxed = _categorical(distribution_kwargs={"grad_method": "relaxed_one_hot"})
        assert draw_for(_head(relaxed)) is None
        _same(relaxed, td)
        # Probabilities instead of logits.
        probs = ProbabilisticActor(
            TensorDictModule(lambda obs: obs[..., :3].softmax(-1), ["observation"], ["probs"]),
            ["probs"], distribution_class=OneHotCategorical,
        )  # fmt: skip
        assert draw_for(_head(probs)) is None
        _same(probs, td)
    # With gradients on, the straight-through sample carries a gradient: the generic draw.
    actor = _categorical()
    assert not _draw_runs(actor, td, grad=True)
    out = _same(actor, td, grad=True)
    assert out["action"].requires_grad


TANH = {
    "default": {"distribution_kwargs": {"low": -2.0, "high": 2.0}},
    "log_prob": {"distribution_kwargs": {"low": -2.0, "high": 3}, "return_log_prob": True},
    "unit bounds": {"return_log_prob": True},
    "tanh_loc, unsafe": {
        "distribution_kwargs": {"tanh_loc": True, "upscale": 2.0, "safe_tanh": False},
        "return_log_prob": True,
    },
    "event_dims=0": {"distribution_kwargs": {"event_dims": 0}, "return_log_prob": True},
    "validate_args=False": {
        "distribution_kwargs": {"validate_args": False},
        "return_log_prob": True,
    },
}


@pytest.mark.parametrize("case", list(TANH))
@pytest.mark.parametrize("validation", [True, False])
def test_tanh_normal_draw_equals_the_generic_call(case, validation):
    torch.distributions.Distribution.set_default_validate_args(validation)
    actor = _tanh_normal(**TANH[case])
    td = _obs(batch=64)
    assert _draw_runs(actor, td)
    _same(actor, td, seed=4)


def test_tanh_normal_draw_over_two_event_dims_and_in_float64():
    net = nn.Sequential(MLP(3, 12, num_cells=[8]), nn.Unflatten(-1, (2, 6)), NormalParamExtractor())
    actor = _tanh_normal(net=net, distribution_kwargs={"event_dims": 2}, return_log_prob=True)
    td = _obs()
    assert _draw_runs(actor, td)
    out = _same(actor, td, seed=2)
    assert out["action_log_prob"].shape == (6,)
    actor = _tanh_normal(return_log_prob=True).double()
    td = _obs().double()
    assert _draw_runs(actor, td)
    assert _same(actor, td, seed=2)["action"].dtype == torch.float64


def test_tanh_normal_log_prob_follows_the_change_of_variables():
    low, high = -2.0, 3.0
    actor = _tanh_normal(distribution_kwargs={"low": low, "high": high}, return_log_prob=True)
    actor = actor.double()
    td = _obs(batch=16).double()
    with torch.no_grad():
        params = actor.module[0](td.clone())
    out = _same(actor, td, seed=6)
    # a = c + h * tanh(x): log p(a) = sum_i [log N(x_i; loc_i, scale_i) - log(h * (1 -
    # tanh(x_i)^2))], with x recovered from the action by atanh (float64, far from the bounds).
    c, h = (high + low) / 2, (high - low) / 2
    expected = []
    for a_row, loc_row, scale_row in zip(
        out["action"].tolist(), params["loc"].tolist(), params["scale"].tolist(), strict=True
    ):
        total = 0.0
        for a, loc, scale in zip(a_row, loc_row, scale_row, strict=True):
            x = math.atanh((a - c) / h)
            gauss = (
                -((x - loc) ** 2) / (2 * scale**2) - math.log(scale) - 0.5 * math.log(2 * math.pi)
            )
            total += gauss - math.log(h * (1 - math.tanh(x) ** 2))
        expected.append(total)
    torch.testing.assert_close(out["action_log_prob"], torch.tensor(expected, dtype=torch.float64))


def _fixed_params(loc, scale):
    def net(obs):
        n = obs.shape[0]
        return torch.tensor(loc).expand(n, -1).clone(), torch.tensor(scale).expand(n, -1).clone()

    return net


BAD_PARAMS = {
    "scale 0": ([0.0, 0.0], [1.0, 0.0]),
    "negative scale": ([0.0, 0.0], [1.0, -1.0]),
    "nan loc": ([float("nan"), 0.0], [1.0, 1.0]),
    "inf loc and scale": ([float("inf"), float("-inf")], [float("inf"), 1.0]),
    "huge": ([3e38, 0.0], [3e38, 1.0]),
}


@pytest.mark.parametrize(("loc", "scale"), list(BAD_PARAMS.values()), ids=list(BAD_PARAMS))
@pytest.mark.parametrize("validation", [True, False])
def test_tanh_normal_bad_parameters_raise_or_pass_as_the_generic_call(loc, scale, validation):
    torch.distributions.Distribution.set_default_validate_args(validation)
    actor = _tanh_normal(net=_fixed_params(loc, scale), return_log_prob=True)
    _same(actor, _obs(), seed=3)


def test_tanh_normal_steps_aside_where_it_could_differ():
    td = _obs()
    tensor_bounds = _tanh_normal(
        distribution_kwargs={"low": torch.tensor(-1.0), "high": torch.tensor(1.0)}
    )
    assert draw_for(_head(tensor_bounds)) is None
    _same(tensor_bounds, td)
    broadcast = _tanh_normal(net=lambda obs: (obs[..., :2], torch.ones(obs.shape[0], 1)))
    assert not _draw_runs(broadcast, td)
    _same(broadcast, td)
    swapped = _tanh_normal(distribution_kwargs={"low": 1.0, "high": -1.0})
    assert draw_for(_head(swapped)) is None
    _same(swapped, td)
    too_many_event_dims = _tanh_normal(distribution_kwargs={"event_dims": 3})
    assert not _draw_runs(too_many_event_dims, td)
    _same(too_many_event_dims, td)
    actor = _tanh_normal(return_log_prob=True)
    assert not _draw_runs(actor, td, grad=True)
    assert _same(actor, td, grad=True)["action"].requires_grad


def test_one_plan_draws_batches_of_several_shapes_as_the_generic_call():
    # The draw keeps per-shape constants (the affine map's log-determinant): a plan called on
    # batches of different sizes must still match the generic call at every size.
    actor = _tanh_normal(distribution_kwargs={"low": -2.0, "high": 3.0}, return_log_prob=True)
    plan = PolicyCallPlan(actor)
    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        for batch in (6, 4, 6, 1):
            td = _obs(batch=batch, seed=batch)
            torch.manual_seed(batch)
            expected = actor(td.clone())
            torch.manual_seed(batch)
            got = plan(td.clone())
            for key in ("action", "action_log_prob"):
                torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0)
