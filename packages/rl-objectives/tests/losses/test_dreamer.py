"""Dreamer's model, actor and value losses against float64 references written from the
definitions (Hafner et al. 2019): Gaussian KL with free nats, summed reconstruction and reward
errors, lambda-returns of imagined trajectories, discounted value regression."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch.distributions import Normal, kl_divergence
from torch.nn import functional as F

from rl_core.envs import EnvBase
from rl_core.specs import Bounded, Composite, Unbounded
from rl_objectives import DreamerActorLoss, DreamerModelLoss, DreamerValueLoss, ValueEstimators

D64 = torch.float64


class ToyWorldModel(torch.nn.Module):
    """Every output a function of the (flattened) next observation, with its own parameters."""

    def __init__(self, obs_shape, state_dim=3):
        super().__init__()
        n = 1
        for s in obs_shape:
            n *= s
        self.obs_shape = obs_shape
        self.heads = torch.nn.ModuleList(
            [torch.nn.Linear(n, state_dim) for _ in range(4)]
            + [torch.nn.Linear(n, n), torch.nn.Linear(n, 1)]
        )

    def forward(self, obs):
        x = obs.flatten(-len(self.obs_shape))
        pm, ps, qm, qs, reco, reward = (h(x) for h in self.heads)
        reco = reco.reshape(*x.shape[:-1], *self.obs_shape)
        return pm, F.softplus(ps) + 0.1, qm, F.softplus(qs) + 0.1, reco, reward


def _world_model(obs_shape):
    torch.manual_seed(0)
    out = [("next", k) for k in ("prior_mean", "prior_std", "posterior_mean", "posterior_std")]
    return TensorDictModule(
        ToyWorldModel(obs_shape).to(D64),
        [("next", "pixels")],
        [*out, ("next", "reco_pixels"), ("next", "reward")],
    )


def _model_batch(obs_shape, B=4, T=5):
    g = torch.Generator().manual_seed(1)
    return TensorDict(
        next=TensorDict(
            pixels=torch.randn(B, T, *obs_shape, generator=g, dtype=D64),
            reward=torch.randn(B, T, 1, generator=g, dtype=D64),
            batch_size=[B, T],
        ),
        batch_size=[B, T],
    )


def _model_reference(model, td, *, free_nats, delayed_clamp, global_average, reco_loss):
    obs, true_reward = td["next", "pixels"], td["next", "reward"]
    pm, ps, qm, qs, reco, reward = model.module(obs)
    kl = kl_divergence(Normal(qm, qs), Normal(pm, ps))  # KL(posterior || prior)
    diff = reco - obs
    reco_err = diff.pow(2) if reco_loss == "l2" else diff.abs()
    reward_err = (reward - true_reward).pow(2)
    if global_average:
        kl = kl.clamp_min(free_nats).mean() if not delayed_clamp else kl.mean().clamp_min(free_nats)
        return kl, reco_err.mean(), reward_err.mean()
    kl = kl.sum(-1)
    kl = kl.mean().clamp_min(free_nats) if delayed_clamp else kl.clamp_min(free_nats).mean()
    reco_err = reco_err.reshape(*reco_err.shape[:2], -1).sum(-1).mean()
    return kl, reco_err, reward_err.squeeze(-1).mean()


@pytest.mark.parametrize(
    ("obs_shape", "free_nats", "delayed_clamp", "global_average", "reco_loss"),
    [
        ((4,), 3.0, False, False, "l2"),
        ((2, 3, 3), 1.5, False, False, "l2"),  # pixels: summed over [C, H, W]
        ((4,), 1.5, True, False, "l1"),
        ((4,), 0.3, False, True, "l2"),
    ],
)
def test_model_loss_matches_reference(obs_shape, free_nats, delayed_clamp, global_average,
                                      reco_loss):  # fmt: skip
    model = _world_model(obs_shape)
    td = _model_batch(obs_shape)
    loss = DreamerModelLoss(model, lambda_kl=0.7, lambda_reco=1.3, lambda_reward=2.0,
                            reco_loss=reco_loss, free_nats=free_nats,
                            delayed_clamp=delayed_clamp, global_average=global_average)  # fmt: skip
    losses, out = loss(td)
    kl, reco, reward = _model_reference(model, td, free_nats=free_nats,
                                        delayed_clamp=delayed_clamp,
                                        global_average=global_average, reco_loss=reco_loss)  # fmt: skip
    want = {"loss_model_kl": 0.7 * kl, "loss_model_reco": 1.3 * reco,
            "loss_model_reward": 2.0 * reward}  # fmt: skip
    for key, value in want.items():
        assert losses[key].shape == ()
        torch.testing.assert_close(losses[key], value)
    params = list(model.parameters())
    got = torch.autograd.grad(sum(losses.values()), params, allow_unused=True)
    ref = torch.autograd.grad(sum(want.values()), params, allow_unused=True)
    for g, r in zip(got, ref, strict=True):
        if r is None:
            assert g is None or not g.any()
        else:
            torch.testing.assert_close(g, r)
    # the input is untouched; the output holds the renamed true reward and the prediction
    assert "true_reward" not in td["next"].keys()
    torch.testing.assert_close(out["next", "true_reward"], td["next", "reward"])
    assert not out["next", "reward"].requires_grad


def test_model_loss_free_nats_clamp_stops_the_kl_gradient():
    model = _world_model((4,))
    losses, _ = DreamerModelLoss(model, free_nats=1e6)(_model_batch((4,)))
    assert losses["loss_model_kl"].item() == pytest.approx(1e6)
    grads = torch.autograd.grad(losses["loss_model_kl"], list(model.parameters())[:4],
                                allow_unused=True)  # fmt: skip
    assert all(g is None or not g.any() for g in grads)


def test_model_loss_keys_and_errors():
    model = TensorDictModule(
        ToyWorldModel((4,)).to(D64),
        [("next", "observation")],
        [
            ("next", k)
            for k in (
                "prior_mean",
                "prior_std",
                "posterior_mean",
                "posterior_std",
                "reco_observation",
                "reward",
            )
        ],
    )
    loss = DreamerModelLoss(model).set_keys(pixels="observation", reco_pixels="reco_observation")
    td = _model_batch((4,))
    td["next"].rename_key_("pixels", "observation")
    assert loss(td)[0]["loss_model_reco"].shape == ()
    with pytest.raises(
        KeyError, match=r"DreamerModelLoss: the batch has no entry \('next', 'observation'\)"
    ):
        loss(_model_batch((4,)))
    with pytest.raises(ValueError, match=r"DreamerModelLoss"):
        DreamerModelLoss(model, reco_loss="huber")


class Imagination(EnvBase):
    """A latent env as DreamerEnv's: ``state' = state + action``, ``reward = -state'^2``;
    ``reset`` starts from the given latents, any batch."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(state=Unbounded(shape=(1,), dtype=D64),
                                          belief=Unbounded(shape=(1,), dtype=D64))  # fmt: skip
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,), dtype=D64)
        self.reward_spec = Unbounded(shape=(1,), dtype=D64)
        self.scale = torch.nn.Parameter(torch.ones((), dtype=D64))  # a "world model" weight

    def reset(self, tensordict=None, **kwargs):
        return tensordict

    def _reset(self, tensordict, **kwargs):
        return tensordict

    def _step(self, td):
        state = self.scale * td["state"] + td["action"]
        return TensorDict(state=state, belief=td["belief"], reward=-state.pow(2),
                          terminated=torch.zeros_like(state, dtype=torch.bool),
                          batch_size=td.batch_size)  # fmt: skip

    def _set_seed(self, seed):
        pass


def _actor_value():
    torch.manual_seed(0)
    actor = TensorDictModule(
        torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Tanh()).to(D64),
        ["state", "belief"],
        ["action"],
    )
    actor.module = _CatFirst(actor.module)
    value = TensorDictModule(_CatFirst(torch.nn.Linear(2, 1).to(D64)), ["state", "belief"],
                             ["state_value"])  # fmt: skip
    return actor, value


class _CatFirst(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, state, belief):
        return self.net(torch.cat([state, belief], -1))


def _actor_reference(actor, value, env, start, horizon, gamma, lmbda, discount, estimator):
    state, belief = start["state"].reshape(-1, 1), start["belief"].reshape(-1, 1)
    rewards, next_values = [], []
    for _ in range(horizon):
        action = actor.module(state, belief)
        state = env.scale * state + action
        rewards.append(-state.pow(2))
        next_values.append(value.module(state, belief))
    targets = [None] * horizon
    for t in reversed(range(horizon)):
        if estimator == "td0" or t == horizon - 1:
            targets[t] = rewards[t] + gamma * next_values[t]
        else:
            targets[t] = rewards[t] + gamma * (
                (1 - lmbda) * next_values[t] + lmbda * targets[t + 1]
            )
    target = torch.stack(targets, 1)  # [N, T, 1]
    weights = torch.tensor([gamma**t if discount else 1.0 for t in range(horizon)], dtype=D64)
    return -(target * weights[:, None]).sum((1, 2)).mean(), target


@pytest.mark.parametrize("discount", [True, False])
@pytest.mark.parametrize("estimator", ["td_lambda", "td0"])
def test_actor_loss_matches_reference(discount, estimator):
    actor, value = _actor_value()
    env = Imagination()
    loss = DreamerActorLoss(actor, value, env, imagination_horizon=4, discount_loss=discount)
    if estimator == "td0":
        loss.make_value_estimator(ValueEstimators.TD0, gamma=0.9)
    else:
        loss.make_value_estimator(ValueEstimators.TDLambda, gamma=0.9, lmbda=0.8)
    g = torch.Generator().manual_seed(2)
    td = TensorDict(state=torch.randn(3, 2, 1, generator=g, dtype=D64),
                    belief=torch.randn(3, 2, 1, generator=g, dtype=D64),
                    batch_size=[3, 2])  # fmt: skip
    losses, fake = loss(td)
    want, target = _actor_reference(actor, value, env, td, 4, 0.9, 0.8, discount, estimator)
    torch.testing.assert_close(losses["loss_actor"], want)
    torch.testing.assert_close(fake["lambda_target"], target.detach())
    assert fake.batch_size == (6, 4)
    assert not fake["lambda_target"].requires_grad
    actor_params = list(actor.parameters())
    got = torch.autograd.grad(losses["loss_actor"], actor_params)
    ref = torch.autograd.grad(want, actor_params)
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b)


def test_actor_loss_holds_out_the_world_model_and_the_value():
    actor, value = _actor_value()
    env = Imagination()
    loss = DreamerActorLoss(actor, value, env, imagination_horizon=3)
    assert {id(p) for p in loss.parameters()} == {id(p) for p in actor.parameters()}
    td = TensorDict(state=torch.randn(5, 1, dtype=D64), belief=torch.randn(5, 1, dtype=D64),
                    batch_size=[5])  # fmt: skip
    losses, _ = loss(td)
    losses["loss_actor"].backward()
    assert env.scale.grad is None
    assert all(p.grad is None for p in value.parameters())
    assert all(p.grad is not None for p in actor.parameters())
    assert env.scale.requires_grad
    assert all(p.requires_grad for p in value.parameters())
    # defaults (TorchRL's code): TD(lambda), gamma 0.99, lmbda 0.95, discounted, horizon 15
    default = DreamerActorLoss(actor, value, env)
    assert default.imagination_horizon == 15
    assert default.discount_loss
    assert (default.value_estimator.gamma, default.value_estimator.lmbda) == (0.99, 0.95)


def test_actor_loss_errors():
    actor, value = _actor_value()
    with pytest.raises(TypeError, match=r"DreamerActorLoss: gamma is not a constructor argument"):
        DreamerActorLoss(actor, value, Imagination(), gamma=0.9)
    with pytest.raises(ValueError, match=r"expected imagination_horizon as a positive int, got 0"):
        DreamerActorLoss(actor, value, Imagination(), imagination_horizon=0)
    with pytest.raises(TypeError, match=r"expected model_based_env as an env \(a DreamerEnv\)"):
        DreamerActorLoss(actor, value, object())


@pytest.mark.parametrize(("discount", "dist"), [(True, "l2"), (False, "l2"), (True, "l1")])
def test_value_loss_matches_reference(discount, dist):
    _, value = _actor_value()
    g = torch.Generator().manual_seed(3)
    fake = TensorDict(state=torch.randn(6, 4, 1, generator=g, dtype=D64),
                      belief=torch.randn(6, 4, 1, generator=g, dtype=D64),
                      lambda_target=torch.randn(6, 4, 1, generator=g, dtype=D64),
                      batch_size=[6, 4])  # fmt: skip
    loss = DreamerValueLoss(value, value_loss=dist, discount_loss=discount, gamma=0.8)
    losses, out = loss(fake)
    pred = value.module(fake["state"], fake["belief"])
    err = pred - fake["lambda_target"]
    err = err.pow(2) if dist == "l2" else err.abs()
    weights = torch.tensor([0.8**t if discount else 1.0 for t in range(4)], dtype=D64)
    want = (err * weights[:, None]).sum((1, 2)).mean()
    torch.testing.assert_close(losses["loss_value"], want)
    params = list(value.parameters())
    for a, b in zip(torch.autograd.grad(losses["loss_value"], params),
                    torch.autograd.grad(want, params), strict=True):  # fmt: skip
        torch.testing.assert_close(a, b)
    assert out is fake
    assert DreamerValueLoss(value).discount_loss
    assert DreamerValueLoss(value).gamma == 0.99


@pytest.mark.slow
@pytest.mark.compile
def test_value_and_model_losses_compile_without_graph_breaks():
    _, value = _actor_value()
    fake = TensorDict(state=torch.randn(6, 4, 1, dtype=D64), belief=torch.randn(6, 4, 1, dtype=D64),
                      lambda_target=torch.randn(6, 4, 1, dtype=D64), batch_size=[6, 4])  # fmt: skip
    value_loss = DreamerValueLoss(value)
    compiled = torch.compile(value_loss, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(fake)[0]["loss_value"], value_loss(fake)[0]["loss_value"])
    model_loss = DreamerModelLoss(_world_model((4,)))
    td = _model_batch((4,))
    compiled = torch.compile(model_loss, fullgraph=True, backend="aot_eager")
    got, want = compiled(td)[0], model_loss(td)[0]
    for key in want.keys():
        torch.testing.assert_close(got[key], want[key])


# ------------------------------------------------------------------ issue 49: bad input, named
# Before: NaN inputs gave NaN losses silently, bad weights were accepted, shape mismatches
# failed with errors that named no key ("The size of tensor a (2) must match ...").


@pytest.mark.parametrize("name", ["lambda_kl", "lambda_reco", "lambda_reward", "free_nats"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, "1"])
def test_model_loss_refuses_a_weight_that_is_not_a_finite_non_negative_number(name, value):
    with pytest.raises(ValueError, match=rf"DreamerModelLoss: expected {name} as a finite number"):
        DreamerModelLoss(_world_model((4,)), **{name: value})


@pytest.mark.parametrize(
    ("entry", "named"), [("pixels", r"\('next', 'pixels'\)"), ("reward", r"\('next', 'reward'\)")]
)
def test_model_loss_names_the_input_that_holds_nan(entry, named):
    td = _model_batch((4,))
    td["next", entry][1, 2] = float("nan")
    count = td["next", entry][1, 2].numel()
    with pytest.raises(
        ValueError, match=rf"not finite: the batch's {named} holds {count} NaN or infinite value"
    ):
        DreamerModelLoss(_world_model((4,)))(td)


def test_model_loss_names_the_world_model_output_that_went_nan():
    model = _world_model((4,))
    with torch.no_grad():
        model.module.heads[4].weight[0, 0] = float("inf")  # the reconstruction head diverged
    with pytest.raises(
        ValueError,
        match=r"\['loss_model_reco'\] not finite: the world model's \('next', 'reco_pixels'\)",
    ):
        DreamerModelLoss(model)(_model_batch((4,)))


def test_model_loss_names_entries_of_mismatched_shapes():
    td = _model_batch((4,))
    td["next", "reward"] = torch.zeros(4, 5, 2, dtype=D64)
    with pytest.raises(
        ValueError,
        match=r"the world model's \('next', 'reward'\) \(4, 5, 1\), "
        r"the batch's \('next', 'reward'\) \(4, 5, 2\)",
    ):
        DreamerModelLoss(_world_model((4,)))(td)

    class HalfPosterior(ToyWorldModel):  # a posterior of another latent size than the prior
        def forward(self, obs):
            pm, ps, qm, qs, reco, reward = super().forward(obs)
            return pm, ps, qm[..., :2], qs[..., :2], reco, reward

    keys = _world_model((4,))
    model = TensorDictModule(HalfPosterior((4,)).to(D64), keys.in_keys, keys.out_keys)
    with pytest.raises(
        ValueError, match=r"the world model's \('next', 'posterior_mean'\) \(4, 5, 2\)"
    ):
        DreamerModelLoss(model)(_model_batch((4,)))


class _NaNImagination(Imagination):
    """An imagination env whose world model diverged: every imagined reward is NaN."""

    def _step(self, td):
        out = super()._step(td)
        return out.set("reward", out["reward"] * float("nan"))


def _latents(state=None):
    g = torch.Generator().manual_seed(4)
    return TensorDict(
        state=torch.randn(3, 2, 1, generator=g, dtype=D64) if state is None else state,
        belief=torch.randn(3, 2, 1, generator=g, dtype=D64),
        batch_size=[3, 2],
    )


def test_actor_loss_refuses_a_bool_horizon_and_a_missing_value_model():
    actor, value = _actor_value()
    with pytest.raises(
        ValueError, match=r"expected imagination_horizon as a positive int, got True"
    ):
        DreamerActorLoss(actor, value, Imagination(), imagination_horizon=True)
    with pytest.raises(TypeError, match=r"expected value_model as a TensorDict module .* NoneType"):
        DreamerActorLoss(actor, None, Imagination())


def test_actor_loss_names_nan_latents_and_nan_imagined_rewards():
    actor, value = _actor_value()
    state = _latents()["state"].clone()
    state[0, 1] = float("nan")
    loss = DreamerActorLoss(actor, value, Imagination(), imagination_horizon=2)
    with pytest.raises(ValueError, match=r"not finite: the batch's 'state' holds 1 NaN"):
        loss(_latents(state))
    loss = DreamerActorLoss(actor, value, _NaNImagination(), imagination_horizon=2)
    with pytest.raises(
        ValueError,
        match=r"the imagined trajectory's \('next', 'reward'\) \(model_based_env\) holds 12 NaN",
    ):
        loss(_latents())


def test_actor_loss_names_a_latent_of_the_wrong_width():
    actor, value = _actor_value()
    loss = DreamerActorLoss(actor, value, Imagination(), imagination_horizon=2)
    with pytest.raises(
        ValueError,
        match=r"expected the batch's 'state' to end in the imagination env's latent shape "
        r"\(1,\) \(its observation spec\), got shape \(3, 2, 2\)",
    ):
        loss(_latents(torch.zeros(3, 2, 2, dtype=D64)))


@pytest.mark.parametrize("gamma", [float("nan"), 1.5, -0.1])
def test_value_loss_refuses_a_discount_outside_zero_one(gamma):
    _, value = _actor_value()
    with pytest.raises(ValueError, match=r"expected gamma as a finite number >= 0, at most 1"):
        DreamerValueLoss(value, gamma=gamma)


def test_value_loss_names_a_nan_or_misshapen_lambda_target():
    _, value = _actor_value()
    fake = _latents()
    fake["lambda_target"] = torch.zeros(3, 2, 1, dtype=D64)
    fake["lambda_target"][2, 0] = float("nan")
    with pytest.raises(ValueError, match=r"not finite: the batch's 'lambda_target' holds 1 NaN"):
        DreamerValueLoss(value)(fake)
    fake["lambda_target"] = torch.zeros(3, 2, dtype=D64)
    with pytest.raises(
        ValueError, match=r"value_model's 'state_value' \(3, 2, 1\), 'lambda_target' \(3, 2\)"
    ):
        DreamerValueLoss(value)(fake)
