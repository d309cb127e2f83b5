"""DreamerV3's model, actor and value losses against float64 references written from the paper's
definitions (Hafner et al. 2023): balanced and separate categorical KLs with free bits, symlog
reconstruction, two-hot cross-entropy over symexp bins, percentile-normalised returns with an
entropy bonus (dynamics backpropagation and REINFORCE), symlog/two-hot value regression."""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch.distributions import Categorical, Normal, kl_divergence

from rl_core.envs import EnvBase
from rl_core.modules import ProbabilisticActor
from rl_core.specs import Bounded, Composite, Unbounded
from rl_objectives import (
    DreamerV3ActorLoss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
    ValueEstimators,
    categorical_kl_balanced,
    categorical_kl_terms,
)

D64 = torch.float64
C, K = 3, 4  # categoricals, classes


def ref_symlog(x):
    return torch.sign(x) * torch.log(x.abs() + 1)


def ref_bins(n):
    """symexp of n evenly spaced points in [-20, 20], stored (as the losses store their
    support) in the default dtype, float32."""
    grid = (-20 + 40 * i / (n - 1) for i in range(n))
    exact = [math.copysign(math.expm1(abs(v)), v) for v in grid]
    return torch.tensor(exact, dtype=torch.float32).double().tolist()


def ref_two_hot_ce(logits, target, bins):
    """-sum_k w_k log softmax_k with w the two-hot weights of each target (a Python loop)."""
    flat_logits, flat_target = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
    out = []
    for row, x in zip(flat_logits, flat_target.tolist()):
        log_p = row - torch.logsumexp(row, 0)
        if x <= bins[0]:
            out.append(-log_p[0])
            continue
        if x >= bins[-1]:
            out.append(-log_p[-1])
            continue
        k = max(i for i in range(len(bins)) if bins[i] <= x)
        gap = bins[k + 1] - bins[k]
        w_low, w_high = (bins[k + 1] - x) / gap, (x - bins[k]) / gap
        out.append(-(w_low * log_p[k] + w_high * log_p[k + 1]))
    return torch.stack(out).reshape(target.shape)


def ref_kl(q_probs, p_probs):
    """KL(q || p) of each categorical, ``[*B, C]``."""
    return kl_divergence(Categorical(probs=q_probs), Categorical(probs=p_probs))


def ref_kl_sum(q, p):
    """sum_k q_k (log q_k - log p_k) of each categorical, without renormalising."""
    return (q * (q.log() - p.log())).sum(-1)


# --------------------------------------------------------------------------- KL functions


@pytest.mark.parametrize(
    ("alpha", "free_bits", "spread"),
    [(0.8, 0.0, 2.0), (0.8, 0.4, 2.0), (0.5, 1.0, 2.0), (0.8, 0.0, 30.0)],
)
def test_categorical_kl_balanced_matches_definition(alpha, free_bits, spread):
    g = torch.Generator().manual_seed(0)
    q_logits = (spread * torch.randn(5, C, K, generator=g, dtype=D64)).requires_grad_()
    p_logits = (spread * torch.randn(5, C, K, generator=g, dtype=D64)).requires_grad_()
    got = categorical_kl_balanced(q_logits, p_logits, alpha=alpha, free_bits=free_bits)
    # probabilities clamped below at 1e-8 (TorchRL's guard against log(0)): with spread 30
    # some are far below it
    q, p = q_logits.softmax(-1).clamp_min(1e-8), p_logits.softmax(-1).clamp_min(1e-8)
    dyn = ref_kl_sum(q.detach(), p).clamp_min(free_bits).mean()
    rep = ref_kl_sum(q, p.detach()).clamp_min(free_bits).mean()
    want = alpha * dyn + (1 - alpha) * rep
    torch.testing.assert_close(got, want)
    # the prior's gradient comes from the first term only, the posterior's from the second
    gq, gp = torch.autograd.grad(got, [q_logits, p_logits])
    torch.testing.assert_close(gp, torch.autograd.grad(alpha * dyn, p_logits)[0])
    torch.testing.assert_close(gq, torch.autograd.grad((1 - alpha) * rep, q_logits)[0])


@pytest.mark.parametrize(("free_nats", "unimix"), [(0.0, 0.0), (1.0, 0.01), (3.0, 0.3)])
def test_categorical_kl_terms_match_definition(free_nats, unimix):
    g = torch.Generator().manual_seed(1)
    q_logits = (3 * torch.randn(2, 5, C, K, generator=g, dtype=D64)).requires_grad_()
    p_logits = (3 * torch.randn(2, 5, C, K, generator=g, dtype=D64)).requires_grad_()
    dyn, rep = categorical_kl_terms(q_logits, p_logits, free_nats=free_nats, unimix=unimix)
    q = (1 - unimix) * q_logits.softmax(-1) + unimix / K
    p = (1 - unimix) * p_logits.softmax(-1) + unimix / K
    want_dyn = ref_kl(q.detach(), p).sum(-1).clamp_min(free_nats).mean()
    want_rep = ref_kl(q, p.detach()).sum(-1).clamp_min(free_nats).mean()
    torch.testing.assert_close(dyn, want_dyn)
    torch.testing.assert_close(rep, want_rep)
    for got, want in ((dyn, want_dyn), (rep, want_rep)):
        for a, b in zip(torch.autograd.grad(got, [q_logits, p_logits], allow_unused=True),
                        torch.autograd.grad(want, [q_logits, p_logits], allow_unused=True)):  # fmt: skip
            if b is None:
                assert a is None or torch.count_nonzero(a) == 0
            else:
                torch.testing.assert_close(a, b)


def test_kl_functions_refuse_mismatched_logits():
    with pytest.raises(ValueError, match=r"one shape .* got \(2, 3, 4\) and \(2, 3, 5\)"):
        categorical_kl_balanced(torch.zeros(2, 3, 4), torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match=r"expected unimix in \[0, 1\)"):
        categorical_kl_terms(torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), unimix=1.5)


# --------------------------------------------------------------------------- model loss


class ToyWorldModelV3(torch.nn.Module):
    """Every output a function of the next observation, each with its own parameters."""

    def __init__(self, n_obs, num_bins=255):
        super().__init__()
        self.heads = torch.nn.ModuleList(
            [torch.nn.Linear(n_obs, C * K), torch.nn.Linear(n_obs, C * K),
             torch.nn.Linear(n_obs, n_obs), torch.nn.Linear(n_obs, num_bins),
             torch.nn.Linear(n_obs, 1), torch.nn.Linear(n_obs, 1)]
        )  # fmt: skip

    def forward(self, obs):
        prior, post, reco, reward_logits, reward, cont = (h(obs) for h in self.heads)
        shape = (*obs.shape[:-1], C, K)
        return prior.reshape(shape), post.reshape(shape), 5 * reco, reward_logits, reward, cont


OUT_KEYS = [("next", k) for k in ("prior_logits", "posterior_logits", "reco_pixels",
                                   "reward_logits", "reward", "continue_pred")]  # fmt: skip


def _world_model(num_bins=255):
    torch.manual_seed(0)
    return TensorDictModule(ToyWorldModelV3(4, num_bins).to(D64), [("next", "pixels")], OUT_KEYS)


def _model_batch(B=4, T=5):
    g = torch.Generator().manual_seed(1)
    return TensorDict(
        next=TensorDict(
            pixels=10 * torch.randn(B, T, 4, generator=g, dtype=D64),
            reward=torch.tensor([-30.0, -0.5, 0.0, 0.3, 2.0])
            .to(D64)
            .expand(B, T)
            .unsqueeze(-1)
            .clone(),
            terminated=torch.rand(B, T, 1, generator=g) < 0.3,
            batch_size=[B, T],
        ),
        batch_size=[B, T],
    )


def _model_reference(model, td, *, kl_mode, free_bits, unimix, reco_symlog, reco_loss,
                     reward_two_hot, lambda_continue):  # fmt: skip
    obs, true_reward = td["next", "pixels"], td["next", "reward"]
    prior, post, reco, reward_logits, reward, cont = model.module(obs)
    out = {}
    if kl_mode == "balanced":
        # probabilities clamped below at 1e-8 (TorchRL's guard against log(0))
        q, p = post.softmax(-1).clamp_min(1e-8), prior.softmax(-1).clamp_min(1e-8)
        dyn = ref_kl_sum(q.detach(), p).clamp_min(free_bits).mean()
        rep = ref_kl_sum(q, p.detach()).clamp_min(free_bits).mean()
        out["loss_model_kl"] = 0.8 * dyn + 0.2 * rep
    else:
        q = (1 - unimix) * post.softmax(-1) + unimix / K
        p = (1 - unimix) * prior.softmax(-1) + unimix / K
        out["loss_model_dynamic"] = 1.0 * ref_kl(q.detach(), p).sum(-1).clamp_min(free_bits).mean()
        out["loss_model_representation"] = (
            0.1 * ref_kl(q, p.detach()).sum(-1).clamp_min(free_bits).mean()
        )
    f = ref_symlog if reco_symlog else (lambda x: x)
    err = f(obs) - f(reco)
    err = err.pow(2) if reco_loss == "l2" else err.abs()
    out["loss_model_reco"] = err.sum(-1).mean()
    if reward_two_hot:
        out["loss_model_reward"] = ref_two_hot_ce(reward_logits, true_reward.squeeze(-1),
                                                  ref_bins(255)).mean()  # fmt: skip
    else:
        out["loss_model_reward"] = (ref_symlog(true_reward) - ref_symlog(reward)).pow(2).mean()
    if lambda_continue:
        target = 1.0 - td["next", "terminated"].to(D64)
        prob = torch.sigmoid(cont)
        bce = -(target * prob.log() + (1 - target) * (1 - prob).log()).mean()
        out["loss_model_continue"] = lambda_continue * bce
    return out


@pytest.mark.parametrize(
    (
        "kl_mode",
        "free_bits",
        "unimix",
        "reco_symlog",
        "reco_loss",
        "reward_two_hot",
        "lambda_continue",
    ),
    [
        ("balanced", 1.0, 0.0, True, "l2", True, 0.0),
        ("balanced", 0.0, 0.0, False, "l1", False, 0.0),
        ("separate", 1.0, 0.01, True, "l2", True, 0.5),
        ("separate", 0.0, 0.2, True, "l1", False, 1.0),
    ],
)
def test_model_loss_matches_reference(kl_mode, free_bits, unimix, reco_symlog, reco_loss,
                                      reward_two_hot, lambda_continue):  # fmt: skip
    model = _world_model()
    loss = DreamerV3ModelLoss(
        model, kl_mode=kl_mode, free_bits=free_bits, unimix=unimix, reco_symlog=reco_symlog,
        reco_loss=reco_loss, reward_two_hot=reward_two_hot, lambda_continue=lambda_continue,
    )  # fmt: skip
    td = _model_batch()
    losses, out = loss(td)
    want = _model_reference(model, td, kl_mode=kl_mode, free_bits=free_bits, unimix=unimix,
                            reco_symlog=reco_symlog, reco_loss=reco_loss,
                            reward_two_hot=reward_two_hot, lambda_continue=lambda_continue)  # fmt: skip
    assert set(losses.keys()) == set(want)
    params = list(model.parameters())
    for key, value in want.items():
        assert losses[key].shape == ()
        torch.testing.assert_close(losses[key], value)
        got_grad = torch.autograd.grad(losses[key], params, allow_unused=True)
        want_grad = torch.autograd.grad(value, params, allow_unused=True)
        for a, b in zip(got_grad, want_grad, strict=True):
            if b is None:
                assert a is None or torch.count_nonzero(a) == 0
            else:
                torch.testing.assert_close(a, b)
    assert ("next", "true_reward") in out.keys(True)
    assert not out["next", "reco_pixels"].requires_grad
    assert ("next", "true_reward") not in td.keys(True)  # the input is left alone


def test_model_loss_pixels_in_bytes_are_scaled_and_heads_are_listed():
    class Two(torch.nn.Module):
        def forward(self, pixels, vec):
            logits = torch.zeros(*vec.shape[:-1], C, K, dtype=D64)
            return (
                logits,
                logits,
                torch.full(pixels.shape, 0.5, dtype=D64),
                2 * vec,
                torch.zeros(*vec.shape[:-1], 255, dtype=D64),
            )

    model = TensorDictModule(
        Two(), [("next", "pixels"), ("next", "vec")],
        [("next", k) for k in ("prior_logits", "posterior_logits", "reco_pixels", "reco_vec",
                               "reward_logits")],
    )  # fmt: skip
    loss = DreamerV3ModelLoss(model, reco_symlog=[False, True]).set_keys(
        pixels=["pixels", "vec"], reco_pixels=["reco_pixels", "reco_vec"]
    )
    pixels = torch.randint(0, 256, (2, 3, 1, 2, 2), dtype=torch.uint8)
    vec = torch.randn(2, 3, 2, dtype=D64)
    td = TensorDict(next=TensorDict(pixels=pixels, vec=vec, reward=torch.zeros(2, 3, 1, dtype=D64),
                                    batch_size=[2, 3]), batch_size=[2, 3])  # fmt: skip
    want = (pixels.to(D64) / 255 - 0.5).pow(2).flatten(2).sum(-1).mean() + (
        ref_symlog(vec) - ref_symlog(2 * vec)
    ).pow(2).sum(-1).mean()
    torch.testing.assert_close(loss(td)[0]["loss_model_reco"], want)


def test_model_loss_errors():
    with pytest.raises(ValueError, match="kl_mode must be 'balanced' or 'separate', got 'x'"):
        DreamerV3ModelLoss(_world_model(), kl_mode="x")
    with pytest.raises(ValueError, match="reco_loss must be 'l2' or 'l1'"):
        DreamerV3ModelLoss(_world_model(), reco_loss="smooth_l1")
    with pytest.raises(ValueError, match=r"continue_target_scale in \(0, 1\]"):
        DreamerV3ModelLoss(_world_model(), continue_target_scale=0.0)
    with pytest.raises(ValueError, match=r"reward logits over 255 bins .* got shape \(4, 5, 11\)"):
        DreamerV3ModelLoss(_world_model(num_bins=11))(_model_batch())
    no_logits = TensorDictModule(_world_model().module, [("next", "pixels")],
                                 [*OUT_KEYS[:3], ("next", "other"), *OUT_KEYS[4:]])  # fmt: skip
    with pytest.raises(KeyError, match=r"reward_two_hot=True reads .*'reward_logits'"):
        DreamerV3ModelLoss(no_logits)(_model_batch())
    with pytest.raises(TypeError, match="reco_pixels must be a key or a non-empty list"):
        DreamerV3ModelLoss(_world_model()).set_keys(pixels=["pixels"], reco_pixels=[])
    loss = DreamerV3ModelLoss(_world_model()).set_keys(
        pixels=["pixels"], reco_pixels=["reco_pixels"]
    )
    loss.reco_symlog = [True, False]
    with pytest.raises(ValueError, match="as many pixels keys, reco_pixels keys"):
        loss(_model_batch())


# --------------------------------------------------------------------------- actor loss


class Imagination(EnvBase):
    """A latent env as DreamerEnv's: ``state' = scale * state + action``, ``reward = -state'^2``."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(state=Unbounded(shape=(1,), dtype=D64),
                                          belief=Unbounded(shape=(1,), dtype=D64))  # fmt: skip
        self.action_spec = Bounded(-10.0, 10.0, shape=(1,), dtype=D64)
        self.reward_spec = Unbounded(shape=(1,), dtype=D64)
        self.scale = torch.nn.Parameter(torch.ones((), dtype=D64))

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


class _CatFirst(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, state, belief):
        return self.net(torch.cat([state, belief], -1))


class _LocScale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(2, 2).to(D64)

    def forward(self, state, belief):
        loc, raw = self.net(torch.cat([state, belief], -1)).chunk(2, -1)
        return loc, torch.nn.functional.softplus(raw) + 0.1


def _value():
    return TensorDictModule(_CatFirst(torch.nn.Linear(2, 1).to(D64)), ["state", "belief"],
                            ["state_value"])  # fmt: skip


def _deterministic_actor():
    torch.manual_seed(0)
    net = _CatFirst(torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Tanh()).to(D64))
    return TensorDictModule(net, ["state", "belief"], ["action"]), _value()


def _stochastic_actor():
    torch.manual_seed(0)
    actor = ProbabilisticActor(
        TensorDictModule(_LocScale(), ["state", "belief"], ["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=Normal,
    )
    return actor, _value()


def _start():
    g = torch.Generator().manual_seed(2)
    return TensorDict(state=torch.randn(5, 2, 1, generator=g, dtype=D64),
                      belief=torch.randn(5, 2, 1, generator=g, dtype=D64),
                      batch_size=[5, 2])  # fmt: skip


def ref_quantile(values, q):
    """Linear interpolation between the order statistics at position q * (n - 1)."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (pos - lo) * (s[hi] - s[lo])


def _imagined_reference(value, env, start, horizon, policy, gamma, lmbda):
    """States, rewards, next values and TD(lambda) returns of the imagined steps from the
    start latents under the given actions ``[N, T, 1]`` (or the actor's, when a callable)."""
    state, belief = start["state"].reshape(-1, 1), start["belief"].reshape(-1, 1)
    states, rewards, next_values, acts = [], [], [], []
    for t in range(horizon):
        states.append(state)
        action = policy(state, belief, t)
        acts.append(action)
        state = env.scale * state + action
        rewards.append(-state.pow(2))
        next_values.append(value.module(state, belief))
    horizon = len(rewards)
    targets = [None] * horizon
    for t in reversed(range(horizon)):
        if t == horizon - 1:
            targets[t] = rewards[t] + gamma * next_values[t]
        else:
            targets[t] = rewards[t] + gamma * (
                (1 - lmbda) * next_values[t] + lmbda * targets[t + 1]
            )
    return torch.stack(states, 1), torch.stack(targets, 1), belief


@pytest.mark.parametrize(("normalize", "discount"), [(True, True), (False, True), (True, False)])
def test_actor_loss_backprop_matches_reference(normalize, discount):
    actor, value = _deterministic_actor()
    env = Imagination()
    loss = DreamerV3ActorLoss(
        actor, value, env, imagination_horizon=4, discount_loss=discount, entropy_bonus=0.0,
        return_normalization=normalize, return_normalization_rate=0.5,
        return_normalization_min_scale=0.01,
    )  # fmt: skip
    loss.make_value_estimator(ValueEstimators.TDLambda, gamma=0.9, lmbda=0.8)
    losses, fake = loss(_start())

    def policy(state, belief, t):
        return actor.module(state, belief)

    _, target, _ = _imagined_reference(value, env, _start(), 4, policy, 0.9, 0.8)
    flat = target.detach().reshape(-1).tolist()
    low, high = 0.5 * ref_quantile(flat, 0.05), 0.5 * ref_quantile(flat, 0.95)
    scale = max(0.01, high - low) if normalize else 1.0
    weights = torch.tensor([0.9**t if discount else 1.0 for t in range(4)], dtype=D64)[:, None]
    want = -(weights * target / scale).mean()
    torch.testing.assert_close(losses["loss_actor"], want)
    torch.testing.assert_close(fake["lambda_target"], target.detach())
    torch.testing.assert_close(fake["discount_weight"], weights.expand(10, 4, 1))
    if normalize:
        torch.testing.assert_close(losses["return_low"].item(), low)
        torch.testing.assert_close(losses["return_high"].item(), high)
        torch.testing.assert_close(losses["return_scale"].item(), scale)
    params = list(actor.parameters())
    for a, b in zip(torch.autograd.grad(losses["loss_actor"], params),
                    torch.autograd.grad(want, params), strict=True):  # fmt: skip
        torch.testing.assert_close(a, b)
    # in eval mode the percentiles stay where they are
    loss.eval()
    before = loss.return_high.clone()
    loss(_start())
    assert torch.equal(loss.return_high, before)


@pytest.mark.parametrize("use_reinforce", [False, True])
def test_actor_loss_entropy_bonus_and_reinforce_match_reference(use_reinforce):
    actor, value = _stochastic_actor()
    env = Imagination()
    loss = DreamerV3ActorLoss(actor, value, env, imagination_horizon=3, entropy_bonus=0.05,
                              use_reinforce=use_reinforce, return_normalization_rate=1.0)  # fmt: skip
    loss.make_value_estimator(ValueEstimators.TDLambda, gamma=0.9, lmbda=0.8)
    torch.manual_seed(3)
    losses, fake = loss(_start())
    actions = fake["action"]  # the sampled actions, replayed by the reference
    net = actor.module[0].module

    def policy(state, belief, t):
        """The sampled action as loc + std * noise (reparameterised), the noise read back
        from the loss's action; REINFORCE replays the actions with no gradient."""
        if use_reinforce:
            return actions[:, t]
        loc, std = net(state, belief)
        noise = ((actions[:, t] - loc) / std).detach()
        return loc + std * noise

    states, target, belief = _imagined_reference(value, env, _start(), 3, policy, 0.9, 0.8)
    flat = target.detach().reshape(-1).tolist()
    scale = max(1.0, ref_quantile(flat, 0.95) - ref_quantile(flat, 0.05))
    weights = torch.tensor([0.9**t for t in range(3)], dtype=D64)[:, None]
    loc, std = net(states.detach(), belief.unsqueeze(1).expand(-1, 3, -1))
    dist = Normal(loc, std)
    if use_reinforce:
        baseline = value.module(states, belief.unsqueeze(1).expand(-1, 3, -1))
        advantage = (target - baseline).detach() / scale
        want = -(weights * dist.log_prob(actions) * advantage).mean()
    else:
        want = -(weights * target / scale).mean()
    entropy = (weights * dist.entropy()).mean()
    want = want - 0.05 * entropy
    torch.testing.assert_close(losses["loss_actor"], want)
    torch.testing.assert_close(losses["actor_entropy"], entropy.detach())
    params = list(actor.parameters())
    for a, b in zip(torch.autograd.grad(losses["loss_actor"], params),
                    torch.autograd.grad(want, params), strict=True):  # fmt: skip
        torch.testing.assert_close(a, b)


def test_actor_loss_holds_out_the_world_model_and_the_value_and_refuses_bad_input():
    actor, value = _deterministic_actor()
    env = Imagination()
    loss = DreamerV3ActorLoss(actor, value, env, imagination_horizon=3, entropy_bonus=0.0)
    assert {id(p) for p in loss.parameters()} == {id(p) for p in actor.parameters()}
    losses, _ = loss(_start())
    losses["loss_actor"].backward()
    assert env.scale.grad is None
    assert all(p.grad is None for p in value.parameters())
    assert env.scale.requires_grad  # restored after the loss
    with pytest.raises(TypeError, match=r"set it with loss\.make_value_estimator"):
        DreamerV3ActorLoss(actor, value, env, gamma=0.9)
    with pytest.raises(ValueError, match="imagination_horizon as a positive int, got 0"):
        DreamerV3ActorLoss(actor, value, env, imagination_horizon=0)
    with pytest.raises(TypeError, match="expected model_based_env as an env"):
        DreamerV3ActorLoss(actor, value, object())


# --------------------------------------------------------------------------- value loss


class _TwoHotValue(torch.nn.Module):
    def __init__(self, num_bins):
        super().__init__()
        self.net = torch.nn.Linear(4, num_bins).to(D64)
        self.register_buffer("bins", torch.tensor(ref_bins(num_bins), dtype=D64))

    def forward(self, state):
        logits = self.net(state)
        return logits, (logits.softmax(-1) * self.bins).sum(-1, keepdim=True)


@pytest.mark.parametrize("value_loss", ["symlog_mse", "two_hot"])
@pytest.mark.parametrize("weights", ["given", "gamma", "none"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_value_loss_matches_reference(value_loss, weights, reduction):
    torch.manual_seed(0)
    if value_loss == "two_hot":
        value = TensorDictModule(
            _TwoHotValue(255), ["state"], ["state_value_logits", "state_value"]
        )
    else:
        value = TensorDictModule(torch.nn.Linear(4, 1).to(D64), ["state"], ["state_value"])
    g = torch.Generator().manual_seed(1)
    fake = TensorDict(state=torch.randn(6, 3, 4, generator=g, dtype=D64),
                      lambda_target=10 * torch.randn(6, 3, 1, generator=g, dtype=D64),
                      batch_size=[6, 3])  # fmt: skip
    if weights == "given":
        fake["discount_weight"] = torch.rand(6, 3, 1, generator=g, dtype=D64)
    loss = DreamerV3ValueLoss(value, value_loss=value_loss, discount_loss=weights != "none",
                              gamma=0.7, reduction=reduction)  # fmt: skip
    losses, out = loss(fake)
    target = fake["lambda_target"].squeeze(-1)
    if value_loss == "two_hot":
        logits = value.module.net(fake["state"])
        per_step = ref_two_hot_ce(logits, target, ref_bins(255))
    else:
        per_step = (ref_symlog(value.module(fake["state"]).squeeze(-1)) - ref_symlog(target)).pow(2)
    if weights == "given":
        w = fake["discount_weight"].squeeze(-1)
    elif weights == "gamma":
        w = torch.tensor([0.7**t for t in range(3)], dtype=D64).expand(6, 3)
    else:
        w = torch.ones(6, 3, dtype=D64)
    want = w * per_step
    want = {"mean": want.mean(), "sum": want.sum(), "none": want}[reduction]
    torch.testing.assert_close(losses["loss_value"], want)
    params = list(value.parameters())
    for a, b in zip(torch.autograd.grad(losses["loss_value"].sum(), params),
                    torch.autograd.grad(want.sum(), params), strict=True):  # fmt: skip
        torch.testing.assert_close(a, b)
    assert out is fake


def test_value_loss_takes_gamma_from_the_actor_loss_and_refuses_bad_input():
    actor, value = _deterministic_actor()
    actor_loss = DreamerV3ActorLoss(actor, value, Imagination())
    actor_loss.make_value_estimator(ValueEstimators.TDLambda, gamma=0.5, lmbda=0.9)
    loss = DreamerV3ValueLoss(value, actor_loss=actor_loss)
    fake = TensorDict(state=torch.zeros(2, 3, 1, dtype=D64), belief=torch.zeros(2, 3, 1, dtype=D64),
                      lambda_target=torch.ones(2, 3, 1, dtype=D64), batch_size=[2, 3])  # fmt: skip
    pred = value.module(fake["state"], fake["belief"]).squeeze(-1)
    per_step = (ref_symlog(pred) - math.log(2)).pow(2)
    want = (torch.tensor([1.0, 0.5, 0.25], dtype=D64) * per_step).mean()
    torch.testing.assert_close(loss(fake)[0]["loss_value"], want)
    with pytest.raises(ValueError, match="value_loss must be 'symlog_mse' or 'two_hot', got 'l2'"):
        DreamerV3ValueLoss(value, value_loss="l2")
    with pytest.raises(ValueError, match="reduction must be"):
        DreamerV3ValueLoss(value, reduction="max")
    small = TensorDictModule(_TwoHotValue(7), ["state"], ["state_value_logits", "state_value"])
    with pytest.raises(ValueError, match=r"value logits over 255 bins .* got shape \(2, 3, 7\)"):
        DreamerV3ValueLoss(small, value_loss="two_hot")(
            TensorDict(state=torch.zeros(2, 3, 4, dtype=D64),
                       lambda_target=torch.zeros(2, 3, 1, dtype=D64), batch_size=[2, 3])
        )  # fmt: skip


# --------------------------------------------------------------------------- compile


@pytest.mark.slow
@pytest.mark.compile
def test_model_and_value_losses_and_kl_compile_without_graph_breaks():
    model_loss = DreamerV3ModelLoss(_world_model(), kl_mode="separate", unimix=0.01,
                                    lambda_continue=1.0)  # fmt: skip
    td = _model_batch()
    compiled = torch.compile(model_loss, fullgraph=True, backend="aot_eager")
    got, want = compiled(td)[0], model_loss(td)[0]
    for key in want.keys():
        torch.testing.assert_close(got[key], want[key])
    balanced = DreamerV3ModelLoss(_world_model())
    compiled = torch.compile(balanced, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(td)[0]["loss_model_kl"], balanced(td)[0]["loss_model_kl"])
    torch.manual_seed(0)
    value = TensorDictModule(_TwoHotValue(255), ["state"], ["state_value_logits", "state_value"])
    fake = TensorDict(state=torch.randn(6, 3, 4, dtype=D64),
                      lambda_target=torch.randn(6, 3, 1, dtype=D64), batch_size=[6, 3])  # fmt: skip
    value_loss = DreamerV3ValueLoss(value, value_loss="two_hot")
    compiled = torch.compile(value_loss, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(fake)[0]["loss_value"], value_loss(fake)[0]["loss_value"])


# ------------------------------------------------------------------ issue 49: bad input, named
# Before: NaN inputs gave NaN losses silently, bad weights and a bool horizon were accepted, and
# a missing value head or misshapen target failed with errors that named no key.


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("free_bits", float("nan")),
        ("free_bits", -1.0),
        ("lambda_kl", float("inf")),
        ("lambda_continue", -0.5),
        ("lambda_representation", float("nan")),
        ("kl_alpha", 1.5),
        ("kl_alpha", float("nan")),
    ],
)
def test_model_loss_refuses_bad_weights_at_construction(name, value):
    with pytest.raises(ValueError, match=rf"DreamerV3ModelLoss: expected {name} as a finite"):
        DreamerV3ModelLoss(_world_model(), **{name: value})


def test_model_loss_refuses_a_reco_symlog_that_is_not_bools():
    with pytest.raises(TypeError, match=r"expected reco_symlog as a bool or a non-empty list"):
        DreamerV3ModelLoss(_world_model(), reco_symlog="yes")


def test_model_loss_names_nan_pixels_and_a_diverged_world_model():
    td = _model_batch()
    td["next", "pixels"][0, 0, 0] = float("nan")
    with pytest.raises(
        ValueError, match=r"not finite: the batch's \('next', 'pixels'\) holds 1 NaN or infinite"
    ):
        DreamerV3ModelLoss(_world_model())(td)
    model = _world_model()
    with torch.no_grad():
        model.module.heads[1].bias[0] = float("nan")  # the posterior head diverged
    with pytest.raises(
        ValueError,
        match=r"\['loss_model_kl'\] not finite: the world model's \('next', 'posterior_logits'\)",
    ):
        DreamerV3ModelLoss(model)(_model_batch())


def test_model_loss_names_a_true_reward_not_shaped_like_the_reward_logits():
    td = _model_batch()
    td["next", "reward"] = torch.zeros(4, 5, 2, dtype=D64)
    with pytest.raises(
        ValueError,
        match=r"expected the batch's \('next', 'reward'\) of shape \(4, 5, 1\) .* got \(4, 5, 2\)",
    ):
        DreamerV3ModelLoss(_world_model())(td)


def test_actor_loss_refuses_a_bad_entropy_bonus_a_bool_horizon_and_nan_latents():
    actor, value = _deterministic_actor()
    with pytest.raises(ValueError, match=r"expected entropy_bonus as a finite number >= 0"):
        DreamerV3ActorLoss(actor, value, Imagination(), entropy_bonus=float("nan"))
    with pytest.raises(ValueError, match=r"imagination_horizon as a positive int, got True"):
        DreamerV3ActorLoss(actor, value, Imagination(), imagination_horizon=True)
    start = _start()
    start["belief"][4, 1] = float("inf")
    loss = DreamerV3ActorLoss(actor, value, Imagination(), imagination_horizon=2, entropy_bonus=0)
    with pytest.raises(
        ValueError, match=r"\['lambda_target'\] not finite: the batch's 'belief' holds 1"
    ):
        loss(start)
    assert loss.return_low.isfinite()  # the moving percentiles never saw the NaN
    assert loss.return_high.isfinite()


def test_value_loss_refuses_a_bad_gamma_names_missing_logits_and_nan_targets():
    _, value = _deterministic_actor()
    with pytest.raises(ValueError, match=r"expected gamma as a finite number >= 0, at most 1"):
        DreamerV3ValueLoss(value, gamma=1.01)
    fake = TensorDict(state=torch.zeros(2, 3, 1, dtype=D64), belief=torch.zeros(2, 3, 1, dtype=D64),
                      lambda_target=torch.ones(2, 3, 1, dtype=D64), batch_size=[2, 3])  # fmt: skip
    with pytest.raises(
        KeyError,
        match=r"value_loss='two_hot' reads the value head's logits at 'state_value_logits'",
    ):
        DreamerV3ValueLoss(value, value_loss="two_hot")(fake)
    fake["lambda_target"][1, 2] = float("nan")
    with pytest.raises(ValueError, match=r"not finite: the batch's 'lambda_target' holds 1 NaN"):
        DreamerV3ValueLoss(value)(fake)
    fake["lambda_target"] = torch.ones(2, 3, 2, dtype=D64)
    with pytest.raises(
        ValueError, match=r"value_model's 'state_value' \(2, 3, 1\), 'lambda_target' \(2, 3, 2\)"
    ):
        DreamerV3ValueLoss(value)(fake)
