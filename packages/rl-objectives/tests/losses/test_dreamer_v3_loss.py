"""DreamerV3Loss, every term against a float64 reference written from Hafner et al. 2023
(DreamerV3) on a hand-made batch: the world model's separate KL terms with 1 free nat and the
paper's 0.5/0.1 weights, symlog reconstruction and two-hot reward; the actor's lambda-returns
divided by their 5-95 percentile range; the critic's two-hot loss on the imagined trajectory;
and the replay-value term (lambda-returns of the real rewards, discount 1 - 1/333)."""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.envs import EnvBase
from rl_core.specs import Bounded, Composite, Unbounded
from rl_objectives import (
    DreamerV3ActorLoss,
    DreamerV3Loss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
    ValueEstimators,
)

D64 = torch.float64
B, T, C, K, N_OBS, BINS = 2, 4, 3, 4, 4, 255
HORIZON, GAMMA, LMBDA = 3, 0.9, 0.8


def ref_symlog(x):
    return torch.sign(x) * torch.log(x.abs() + 1)


def ref_bins(n):
    """symexp of n evenly spaced points in [-20, 20], rounded to float32 (as the losses store
    their support)."""
    grid = (-20 + 40 * i / (n - 1) for i in range(n))
    exact = [math.copysign(math.expm1(abs(v)), v) for v in grid]
    return torch.tensor(exact, dtype=torch.float32).double().tolist()


def ref_two_hot_ce(logits, target, bins):
    """-(w_low log p_k + w_high log p_k+1) of each target, a Python loop over the rows."""
    rows, targets = logits.reshape(-1, logits.shape[-1]), target.reshape(-1).tolist()
    out = []
    for row, x in zip(rows, targets):
        log_p = row - torch.logsumexp(row, 0)
        if x <= bins[0] or x >= bins[-1]:
            out.append(-log_p[0] if x <= bins[0] else -log_p[-1])
            continue
        k = max(i for i in range(len(bins)) if bins[i] <= x)
        gap = bins[k + 1] - bins[k]
        out.append(-((bins[k + 1] - x) / gap * log_p[k] + (x - bins[k]) / gap * log_p[k + 1]))
    return torch.stack(out).reshape(target.shape)


def ref_quantile(values, q):
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (pos - lo) * (s[hi] - s[lo])


class ToyWorldModel(torch.nn.Module):
    """Every output a linear function of the next observation; the latents are 1-dim."""

    def __init__(self):
        super().__init__()
        sizes = [C * K, C * K, N_OBS, BINS, 1, 1]
        self.heads = torch.nn.ModuleList(torch.nn.Linear(N_OBS, n) for n in sizes)

    def forward(self, obs):
        prior, post, reco, reward_logits, state, belief = (h(obs) for h in self.heads)
        shape = (*obs.shape[:-1], C, K)
        return prior.reshape(shape), post.reshape(shape), 5 * reco, reward_logits, state, belief


class Imagination(EnvBase):
    """``state' = scale * state + action``, ``reward = -state'^2``, the belief carried."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(state=Unbounded(shape=(1,), dtype=D64),
                                          belief=Unbounded(shape=(1,), dtype=D64))  # fmt: skip
        self.action_spec = Bounded(-10.0, 10.0, shape=(1,), dtype=D64)
        self.reward_spec = Unbounded(shape=(1,), dtype=D64)
        self.scale = torch.nn.Parameter(torch.tensor(0.7, dtype=D64))

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


class Actor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(2, 1)

    def forward(self, state, belief):
        return torch.tanh(self.net(torch.cat([state, belief], -1)))


class TwoHotValue(torch.nn.Module):
    """Logits over the symexp bins and their expectation; small weights keep the decoded
    values near 0 (the bins reach +-4.9e8)."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(2, BINS)
        with torch.no_grad():
            self.net.weight.mul_(0.05)
            self.net.bias.mul_(0.05)
        self.register_buffer("bins", torch.tensor(ref_bins(BINS)))

    def forward(self, state, belief):
        logits = self.net(torch.cat([state, belief], -1))
        return logits, (logits.softmax(-1) * self.bins).sum(-1, keepdim=True)


def _batch():
    g = torch.Generator().manual_seed(1)
    reward = torch.tensor([[0.5, -1.0, 2.0, 0.25], [-0.3, 1.5, 0.0, -2.0]], dtype=D64)
    # sequence 0 terminates at step 1; sequence 1 is cut (done, not terminated) at step 2
    terminated = torch.tensor([[False, True, False, False], [False, False, False, False]])
    done = torch.tensor([[False, True, False, False], [False, False, True, False]])
    return TensorDict(
        next=TensorDict(
            pixels=3 * torch.randn(B, T, N_OBS, generator=g, dtype=D64),
            reward=reward.unsqueeze(-1),
            terminated=terminated.unsqueeze(-1),
            done=done.unsqueeze(-1),
            batch_size=[B, T],
        ),
        batch_size=[B, T],
    )


def _parts(replay_weight=0.3, value_loss="two_hot"):
    torch.manual_seed(0)
    keys = ["prior_logits", "posterior_logits", "reco_pixels", "reward_logits", "state", "belief"]
    world = TensorDictModule(ToyWorldModel().to(D64), [("next", "pixels")],
                             [("next", k) for k in keys])  # fmt: skip
    actor = TensorDictModule(Actor().to(D64), ["state", "belief"], ["action"])
    value = TensorDictModule(TwoHotValue().to(D64), ["state", "belief"],
                             ["state_value_logits", "state_value"])  # fmt: skip
    env = Imagination()
    model_loss = DreamerV3ModelLoss(
        world, kl_mode="separate", lambda_dynamic=0.5, lambda_representation=0.1, free_bits=1.0,
        unimix=0.01, detach_output=False,
    )  # fmt: skip
    actor_loss = DreamerV3ActorLoss(actor, value, env, imagination_horizon=HORIZON,
                                    entropy_bonus=0.0, return_normalization_rate=1.0)  # fmt: skip
    actor_loss.make_value_estimator(ValueEstimators.TDLambda, gamma=GAMMA, lmbda=LMBDA)
    critic_loss = DreamerV3ValueLoss(value, value_loss=value_loss, actor_loss=actor_loss)
    loss = DreamerV3Loss(model_loss, actor_loss, critic_loss,
                         replay_value_loss_weight=replay_weight)  # fmt: skip
    return loss, world.module, actor.module, value.module, env


def _reference(world, actor, value, env, td, mode="two_hot"):
    """Every term of DreamerV3Loss, written from the paper's definitions."""
    obs, reward = td["next", "pixels"], td["next", "reward"]
    prior, post, reco, reward_logits, state, belief = world(obs)
    out = {}
    # world model: KL of each categorical (1% unimix), summed, clamped at 1 nat, weights 0.5/0.1
    q = 0.99 * post.softmax(-1) + 0.01 / K
    p = 0.99 * prior.softmax(-1) + 0.01 / K
    kl_dyn = (q.detach() * (q.detach().log() - p.log())).sum((-2, -1))
    kl_rep = (q * (q.log() - p.detach().log())).sum((-2, -1))
    out["loss_model_dynamic"] = 0.5 * kl_dyn.clamp_min(1.0).mean()
    out["loss_model_representation"] = 0.1 * kl_rep.clamp_min(1.0).mean()
    out["loss_model_reco"] = (ref_symlog(obs) - ref_symlog(reco)).pow(2).sum(-1).mean()
    bins = ref_bins(BINS)
    out["loss_model_reward"] = ref_two_hot_ce(reward_logits, reward.squeeze(-1), bins).mean()
    # imagination from every posterior latent, detached; TD(lambda) returns of the rewards
    s, b = state.detach().reshape(-1, 1), belief.detach().reshape(-1, 1)
    # the critic held out: its parameters constant, its gradient reaching the states
    frozen = {k: v.detach() for k, v in value.state_dict().items()}
    states, rewards, next_values = [], [], []
    for _ in range(HORIZON):
        states.append(s)
        s = env.scale.detach() * s + actor(s, b)
        rewards.append(-s.pow(2))
        next_values.append(torch.func.functional_call(value, frozen, (s, b))[1])
    targets = [None] * HORIZON
    for t in reversed(range(HORIZON)):
        follow = next_values[t] if t == HORIZON - 1 else (
            (1 - LMBDA) * next_values[t] + LMBDA * targets[t + 1]
        )  # fmt: skip
        targets[t] = rewards[t] + GAMMA * follow
    target = torch.stack(targets, 1)  # [N, H, 1]
    flat = target.detach().reshape(-1).tolist()
    # rate 1: the moving percentiles are this batch's; the scale is at least 1
    scale = max(1.0, ref_quantile(flat, 0.95) - ref_quantile(flat, 0.05))
    weights = torch.tensor([GAMMA**t for t in range(HORIZON)], dtype=D64)[:, None]
    out["loss_actor"] = -(weights * target / scale).mean()
    logits, v = value(torch.stack(states, 1).detach(), b.unsqueeze(1).expand(-1, HORIZON, -1))
    if mode == "two_hot":
        per_step = ref_two_hot_ce(logits, target.detach().squeeze(-1), bins)
    else:
        per_step = (ref_symlog(v) - ref_symlog(target.detach())).pow(2).squeeze(-1)
    out["loss_value"] = (weights.squeeze(-1) * per_step).mean()
    # replay: the critic on the posterior latents (not detached), lambda-returns of the real
    # rewards with gamma = 1 - 1/333, the steps before an episode's end only
    logits, v = value(state, belief)
    gamma = 1 - 1 / 333
    term = td["next", "terminated"].squeeze(-1).tolist()
    done = td["next", "done"].squeeze(-1).tolist()
    total, count = 0.0, 0
    for i in range(B):
        vals = v[i].detach().squeeze(-1).tolist()
        ret = [0.0] * T
        ret[T - 1] = vals[T - 1]
        for t in range(T - 2, -1, -1):
            if done[i][t]:
                ret[t] = vals[t]
                continue
            cont = 0.0 if term[i][t + 1] else 1.0
            ret[t] = reward[i, t + 1, 0].item() + gamma * cont * (
                (1 - 0.95) * vals[t + 1] + 0.95 * ret[t + 1]
            )
        for t in range(T - 1):
            if done[i][t]:
                continue
            if mode == "two_hot":
                total = total + ref_two_hot_ce(logits[i, t], torch.tensor(ret[t], dtype=D64), bins)
            else:
                total = (
                    total
                    + (ref_symlog(v[i, t, 0]) - math.copysign(math.log1p(abs(ret[t])), ret[t])) ** 2
                )
            count += 1
    out["loss_value_replay"] = 0.3 * total / count
    return out, state, belief


@pytest.mark.parametrize("mode", ["two_hot", "symlog_mse"])
def test_every_term_matches_the_reference(mode):
    loss, world, actor, value, env = _parts(value_loss=mode)
    td = _batch()
    losses = loss(td)
    want, state, _belief = _reference(world, actor, value, env, td, mode)
    got = {k: v for k, v in losses.items() if k.startswith("loss_")}
    assert set(got) == set(want)
    for key, value_ in want.items():
        assert losses[key].shape == ()
        torch.testing.assert_close(losses[key], value_, msg=key)
    # steps trained by the replay term: 0 of sequence 0 (its step 1 ends the episode),
    # 0 and 1 of sequence 1 (2 is cut): 3 of the 6 non-final steps
    assert losses["replay_context"].batch_size == (B, T)
    torch.testing.assert_close(losses["replay_context", "state"], state.detach())
    assert not losses["replay_context", "belief"].requires_grad
    # gradients: each term's, through the summed objective, equal the reference's
    params = [*world.parameters(), *actor.parameters(), *value.parameters()]
    got_total = sum(got.values())
    want_total = sum(want.values())
    for a, b in zip(torch.autograd.grad(got_total, params, allow_unused=True),
                    torch.autograd.grad(want_total, params, allow_unused=True), strict=True):  # fmt: skip
        if b is None:
            assert a is None or torch.count_nonzero(a) == 0
        else:
            torch.testing.assert_close(a, b)


def test_which_terms_reach_which_networks():
    loss, world, _actor, value, env = _parts()
    losses = loss(_batch())
    latent_heads = [*world.heads[4].parameters(), *world.heads[5].parameters()]
    # the replay term trains the world model's latents and the critic
    grads = torch.autograd.grad(losses["loss_value_replay"], [*latent_heads, *value.parameters()])
    assert all(torch.count_nonzero(g) > 0 for g in grads)
    # the actor's loss reaches neither the world model, nor the imagination's dynamics, nor
    # the critic; the imagined critic loss does not reach the world model
    wm = [*world.parameters(), env.scale]
    for key, reached in (("loss_actor", [*wm, *value.parameters()]), ("loss_value", wm)):
        grads = torch.autograd.grad(losses[key], reached, allow_unused=True)
        assert all(g is None or torch.count_nonzero(g) == 0 for g in grads), key
    # off: no replay term, and the model loss may detach its output
    loss_off, *_ = _parts(replay_weight=0.0)
    assert "loss_value_replay" not in loss_off(_batch()).keys()


def test_imagination_starts_draws_that_many_latents():
    loss, *_ = _parts()
    every = loss(_batch())["loss_actor"]
    # all 8 latents drawn (in a random order): the same mean over the imagined steps
    loss.imagination_starts = B * T
    torch.testing.assert_close(loss(_batch())["loss_actor"], every)
    loss.imagination_starts = 3
    assert not torch.isclose(loss(_batch())["loss_actor"], every)


def test_refuses_bad_components_and_settings():
    loss, *_ = _parts()
    model_loss, actor_loss, value_loss = loss.model_loss, loss.actor_loss, loss.value_loss
    with pytest.raises(TypeError, match="expected actor_loss as a DreamerV3ActorLoss, got"):
        DreamerV3Loss(model_loss, value_loss, value_loss)
    with pytest.raises(ValueError, match="replay_value_loss_weight as a finite number >= 0"):
        DreamerV3Loss(model_loss, actor_loss, value_loss, replay_value_loss_weight=-0.1)
    with pytest.raises(ValueError, match=r"continuation_horizon as a finite number >= 1 .*got 0.5"):
        DreamerV3Loss(model_loss, actor_loss, value_loss, continuation_horizon=0.5)
    with pytest.raises(ValueError, match="lmbda as a finite number >= 0, at most 1"):
        DreamerV3Loss(model_loss, actor_loss, value_loss, lmbda=1.5)
    with pytest.raises(ValueError, match="imagination_starts as a positive int or None, got 0"):
        DreamerV3Loss(model_loss, actor_loss, value_loss, imagination_starts=0)
    model_loss.detach_output = True
    with pytest.raises(ValueError, match="Build the model loss with detach_output=False"):
        DreamerV3Loss(model_loss, actor_loss, value_loss)
    model_loss.detach_output = False
    with pytest.raises(
        ValueError, match=r"sequences \[\.\.\., T\] with T >= 2, got a batch of size \(2, 1\)"
    ):
        loss(_batch()[:, :1])
