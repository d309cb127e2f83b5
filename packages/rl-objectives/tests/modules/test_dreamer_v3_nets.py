"""DreamerV3MLP, DreamerV3BlockGRUCell/DreamerV3BlockGRU and RSSMRolloutV3 against float64
references written from Hafner et al. 2023 (DreamerV3) with plain Python arithmetic."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core import ExplorationType, set_exploration_type
from rl_objectives.modules import (
    DreamerV3BlockGRU,
    DreamerV3BlockGRUCell,
    DreamerV3DiscreteActor,
    DreamerV3MLP,
    DreamerV3SeededPolicy,
    RSSMPosteriorV3,
    RSSMPriorV3,
    RSSMRollout,
    RSSMRolloutV3,
    RSSMStateEstimatorV3,
)


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def silu(x: float) -> float:
    return x * sigmoid(x)


def rms_norm(x: list[float], weight: list[float], bias: list[float], eps: float) -> list[float]:
    scale = 1 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * scale * w + b for v, w, b in zip(x, weight, bias)]


def block_linear(x: list[float], weight: list, bias: list[float]) -> list[float]:
    """weight[g][i][o]: block g maps its slice of x to its slice of the output."""
    blocks, block_in, block_out = len(weight), len(weight[0]), len(weight[0][0])
    out = []
    for g in range(blocks):
        part = x[g * block_in : (g + 1) * block_in]
        for o in range(block_out):
            out.append(sum(part[i] * weight[g][i][o] for i in range(block_in)))
    return [v + b for v, b in zip(out, bias)]


def ref_layer(layer, x: list[float]) -> list[float]:
    """SiLU(RMSNorm(W x)) of a bias-free linear."""
    linear, norm = layer[0], layer[1]
    h = [sum(w * v for w, v in zip(row, x)) for row in linear.weight.tolist()]
    return [silu(v) for v in rms_norm(h, norm.weight.tolist(), norm.bias.tolist(), norm.eps)]


def ref_block_gru(cell: DreamerV3BlockGRUCell, x: list[float], h: list[float]) -> list[float]:
    """Hafner et al.'s block GRU step: each block g sees [h_g, p(h), p(x)]; block-diagonal
    layers with RMS norm and SiLU; gates (r, c, z) per block; h' = z c + (1 - z) h with
    r = sig(r), c = tanh(r c), z = sig(z + update_bias)."""
    groups, hs = cell.num_blocks, cell.hidden_size
    size = hs // groups
    shared = ref_layer(cell.hidden_projection, h) + ref_layer(cell.input_projection, x)
    features = []
    for g in range(groups):
        features += h[g * size : (g + 1) * size] + shared
    layers = list(cell.hidden_layers)
    for i in range(0, len(layers), 3):
        linear, norm = layers[i], layers[i + 1]
        features = block_linear(features, linear.weight.tolist(), linear.bias.tolist())
        features = rms_norm(features, norm.weight.tolist(), norm.bias.tolist(), norm.eps)
        features = [silu(v) for v in features]
    gates = block_linear(features, cell.gates.weight.tolist(), cell.gates.bias.tolist())
    out = []
    for g in range(groups):
        block = gates[g * 3 * size : (g + 1) * 3 * size]
        for j in range(size):
            r = sigmoid(block[j])
            c = math.tanh(r * block[size + j])
            z = sigmoid(block[2 * size + j] + cell.update_bias)
            out.append(z * c + (1 - z) * h[g * size + j])
    return out


@pytest.mark.parametrize(("num_layers", "update_bias"), [(1, -1.0), (2, 0.5)])
def test_block_gru_cell_matches_the_paper_in_float64(num_layers, update_bias):
    torch.manual_seed(0)
    cell = DreamerV3BlockGRUCell(
        3, 6, projection_size=4, num_blocks=3, num_layers=num_layers, update_bias=update_bias
    ).double()
    with torch.no_grad():  # non-trivial norms and biases
        for p in cell.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(4, 3, dtype=torch.float64)
    h = torch.randn(4, 6, dtype=torch.float64)
    expected = torch.tensor(
        [ref_block_gru(cell, xi.tolist(), hi.tolist()) for xi, hi in zip(x, h)], dtype=torch.float64
    )
    torch.testing.assert_close(cell(x, h), expected, rtol=1e-12, atol=1e-12)


def test_blocks_only_see_their_own_part_of_the_belief():
    torch.manual_seed(1)
    cell = DreamerV3BlockGRUCell(2, 8, projection_size=3, num_blocks=4).double()
    x = torch.randn(2, dtype=torch.float64)
    features = torch.randn(8 + 4 * 6, dtype=torch.float64)
    # the first block-diagonal layer: output block g depends on input block g only
    linear = cell.hidden_layers[0]
    jac = torch.autograd.functional.jacobian(linear, features)
    block_in = (8 + 4 * 6) // 4
    assert jac[:2, block_in:].abs().max() == 0
    assert jac[:2, :block_in].abs().max() > 0
    assert cell(x, torch.zeros(8, dtype=torch.float64)).shape == (8,)


def test_block_gru_runs_the_cell_along_time():
    torch.manual_seed(2)
    gru = DreamerV3BlockGRU(3, 4, projection_size=5, num_blocks=2).double()
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    h0 = torch.randn(2, 4, dtype=torch.float64)
    out, last = gru(x, h0)
    h = h0
    for t in range(5):
        h = gru.cell(x[:, t], h)
        torch.testing.assert_close(out[:, t], h)
    torch.testing.assert_close(last, h)
    # is_init zeroes the belief before the marked step
    is_init = torch.zeros(2, 5, dtype=torch.bool)
    is_init[1, 3] = True
    out2, _ = gru(x, h0, is_init=is_init.unsqueeze(-1))
    torch.testing.assert_close(out2[0], out[0])
    torch.testing.assert_close(out2[1, :3], out[1, :3])
    torch.testing.assert_close(out2[1, 3], gru.cell(x[1, 3], torch.zeros(4, dtype=torch.float64)))


def test_mlp_matches_rms_norm_silu_layers_in_float64():
    torch.manual_seed(3)
    mlp = DreamerV3MLP(3, 2, depth=2, num_cells=4, outscale=0.5).double()
    with torch.no_grad():
        for p in mlp.parameters():
            p.add_(0.1 * torch.randn_like(p))
    a, b = torch.randn(1, dtype=torch.float64), torch.randn(2, dtype=torch.float64)
    h = a.tolist() + b.tolist()
    layers = list(mlp.hidden)
    for i in range(0, len(layers), 3):
        w, norm = layers[i].weight.tolist(), layers[i + 1]
        h = [sum(wr[k] * h[k] for k in range(len(h))) for wr in w]
        h = [silu(v) for v in rms_norm(h, norm.weight.tolist(), norm.bias.tolist(), norm.eps)]
    w, bias = mlp.out.weight.tolist(), mlp.out.bias.tolist()
    expected = [sum(wr[k] * h[k] for k in range(len(h))) + bo for wr, bo in zip(w, bias)]
    torch.testing.assert_close(mlp(a, b), torch.tensor(expected, dtype=torch.float64))


def test_mlp_outscale_scales_the_output_layer():
    torch.manual_seed(4)
    one = DreamerV3MLP(4, 3, depth=1, num_cells=8)
    torch.manual_seed(4)
    half = DreamerV3MLP(4, 3, depth=1, num_cells=8, outscale=0.5)
    torch.testing.assert_close(half.out.weight, 0.5 * one.out.weight)
    zero = DreamerV3MLP(4, 255, depth=1, num_cells=8, outscale=0.0)
    assert zero(torch.randn(5, 4)).abs().max() == 0  # uniform logits: DreamerV3's heads


def _rssm(reset_key="is_init"):
    torch.manual_seed(5)
    prior = TensorDictModule(
        RSSMPriorV3(
            action_dim=2, hidden_dim=8, rnn_hidden_dim=6, num_categoricals=2, num_classes=3
        ),
        in_keys=["state", "belief", "action"],
        out_keys=[("next", "prior_logits"), "_", ("next", "belief")],
    )
    post = TensorDictModule(
        RSSMPosteriorV3(
            hidden_dim=8, num_categoricals=2, num_classes=3, rnn_hidden_dim=6, obs_embed_dim=4
        ),
        in_keys=[("next", "belief"), ("next", "encoded_latents")],
        out_keys=[("next", "posterior_logits"), ("next", "state")],
    )
    return prior, post


def _sequence(is_init: torch.Tensor) -> TensorDict:
    torch.manual_seed(6)
    td = TensorDict(
        state=torch.randn(2, 4, 6),
        belief=torch.randn(2, 4, 6),
        action=torch.randn(2, 4, 2),
        is_init=is_init,
        batch_size=[2, 4],
    )
    td["next", "encoded_latents"] = torch.randn(2, 4, 4)
    return td


def test_rollout_v3_zeroes_the_latents_at_episode_starts():
    is_init = torch.zeros(2, 4, 1, dtype=torch.bool)
    is_init[0, 0] = is_init[1, 2] = True
    prior, post = _rssm()
    out = RSSMRolloutV3(prior, post)(_sequence(is_init))
    for b, t in ((0, 0), (1, 2)):
        assert out["state"][b, t].abs().sum() == 0
        assert out["belief"][b, t].abs().sum() == 0
        assert out["action"][b, t].abs().sum() == 0
    assert out["belief"][1, 1].abs().sum() > 0  # carried from the posterior, not reset
    # the second episode of row 1 restarts: filtering it alone from zeros gives the same
    rest = _sequence(torch.zeros(2, 4, 1, dtype=torch.bool))[1:, 2:]
    rest["state"].zero_()
    rest["belief"].zero_()
    rest["action"][:, 0] = 0
    torch.manual_seed(7)
    alone = RSSMRollout(prior, post)(rest)
    torch.manual_seed(7)
    # the sampled states use the RNG; compare the deterministic beliefs of the first step
    torch.testing.assert_close(alone["next", "belief"][0, 0], out["next", "belief"][1, 2])


def test_rollout_v3_without_flags_is_the_v1_rollout():
    prior, post = _rssm()
    td = _sequence(torch.zeros(2, 4, 1, dtype=torch.bool)).exclude("is_init")
    torch.manual_seed(8)
    v3 = RSSMRolloutV3(prior, post)(td.clone())
    torch.manual_seed(8)
    v1 = RSSMRollout(prior, post)(td.clone())
    torch.testing.assert_close(v3["next", "belief"], v1["next", "belief"])
    assert RSSMRolloutV3(prior, post, reset_key=None).reset_key is None


def test_bad_sizes_are_refused_naming_the_argument():
    with pytest.raises(
        ValueError, match="hidden_size a multiple of num_blocks, got hidden_size=10"
    ):
        DreamerV3BlockGRUCell(3, 10, num_blocks=4)
    with pytest.raises(ValueError, match="expected num_layers as a positive int, got 0"):
        DreamerV3BlockGRUCell(3, 8, num_blocks=4, num_layers=0)
    cell = DreamerV3BlockGRUCell(3, 8, projection_size=4, num_blocks=4)
    with pytest.raises(
        ValueError, match=r"expected an input \[\.\.\., 3\] and a belief \[\.\.\., 8\]"
    ):
        cell(torch.randn(2, 4), torch.randn(2, 8))
    with pytest.raises(ValueError, match="with a time dim"):
        DreamerV3BlockGRU(3, 8, num_blocks=4)(torch.randn(3))
    with pytest.raises(ValueError, match=r"expected is_init of shape \(2, 5\)"):
        DreamerV3BlockGRU(3, 8, num_blocks=4)(torch.randn(2, 5, 3), is_init=torch.zeros(5, 2))
    with pytest.raises(ValueError, match="expected outscale >= 0"):
        DreamerV3MLP(3, 2, outscale=-1.0)
    with pytest.raises(ValueError, match="expected depth as an int >= 0"):
        DreamerV3MLP(3, 2, depth=-1)


def test_block_gru_prior_projects_belief_state_and_scaled_action_into_the_cell():
    torch.manual_seed(9)
    prior = RSSMPriorV3(
        action_dim=2, hidden_dim=4, rnn_hidden_dim=6, num_categoricals=2, num_classes=3,
        recurrent_model="block_gru", num_blocks=3, prior_num_layers=1,
    ).double()  # fmt: skip
    state = torch.randn(5, 6, dtype=torch.float64)
    belief = torch.randn(5, 6, dtype=torch.float64)
    action = torch.tensor([[3.0, -0.5]] * 5, dtype=torch.float64)
    logits, next_state, next_belief = prior(state, belief, action)
    # actions are divided by max(1, |a|) element-wise: [1, -0.5]
    inputs = torch.cat([state, torch.tensor([[1.0, -0.5]] * 5, dtype=torch.float64)], -1)
    torch.testing.assert_close(next_belief, prior.rnn(inputs, belief))
    torch.testing.assert_close(logits.flatten(-2), prior.rnn_to_prior_projector(next_belief))
    assert next_state.shape == (5, 6)
    assert isinstance(prior.rnn, DreamerV3BlockGRUCell)
    with pytest.raises(ValueError, match="recurrent_model='block_gru' needs the action size"):
        RSSMPriorV3(recurrent_model="block_gru")
    with pytest.raises(ValueError, match="expected recurrent_model 'gru' or 'block_gru'"):
        RSSMPriorV3(action_dim=2, recurrent_model="lstm")


def test_state_estimator_advances_the_belief_and_samples_the_posterior():
    prior, post = _rssm()
    estimator = RSSMStateEstimatorV3(prior.module, post.module)
    torch.manual_seed(10)
    td = TensorDict(
        state=torch.randn(3, 6),
        belief=torch.randn(3, 6),
        previous_action=torch.randn(3, 2),
        encoded_latents=torch.randn(3, 4),
        is_init=torch.tensor([[False], [True], [False]]),
        batch_size=[3],
    )
    inputs = td.clone()
    out = estimator(td)
    keep = torch.tensor([[1.0], [0.0], [1.0]])
    belief = prior.module.next_belief(
        inputs["state"] * keep, inputs["belief"] * keep, inputs["previous_action"] * keep
    )
    torch.testing.assert_close(out["belief"], belief)
    # the belief of a reset row is that of zero latents and action
    zero = prior.module.next_belief(torch.zeros(1, 6), torch.zeros(1, 6), torch.zeros(1, 2))
    torch.testing.assert_close(out["belief"][1:2], zero)
    # the posterior's one-hot sample from that belief (one class per categorical)
    assert out["state"].view(3, 2, 3).sum(-1).eq(1).all()
    # next_belief is the belief forward() returns
    _, _, forward_belief = prior.module(
        inputs["state"], inputs["belief"], inputs["previous_action"]
    )
    torch.testing.assert_close(
        forward_belief,
        prior.module.next_belief(inputs["state"], inputs["belief"], inputs["previous_action"]),
    )
    with pytest.raises(TypeError, match="expected prior as a RSSMPriorV3"):
        RSSMStateEstimatorV3(post.module, post.module)
    with pytest.raises(ValueError, match="expected 5 in_keys"):
        RSSMStateEstimatorV3(prior.module, post.module, in_keys=["state"])


def test_discrete_actor_mixes_the_uniform_and_samples_one_hot_actions():
    torch.manual_seed(11)
    actor = DreamerV3DiscreteActor(5, 4, depth=1, num_cells=8, unimix=0.2).double()
    with torch.no_grad():
        actor.net.out.weight.normal_()
    td = TensorDict(
        state=torch.randn(64, 3, dtype=torch.float64),
        belief=torch.randn(64, 2, dtype=torch.float64),
        batch_size=[64],
    )
    out = actor(td.clone())
    # p = 0.8 softmax(net([belief, state])) + 0.2 / 4, and the written logits are log p
    raw = actor.net(td["belief"], td["state"])
    probs = 0.8 * torch.softmax(raw, -1) + 0.05
    torch.testing.assert_close(out["logits"].exp(), probs.float(), rtol=1e-5, atol=1e-6)
    assert bool((probs >= 0.05).all())
    assert out["action"].sum(-1).eq(1).all()
    chosen = out["action"].argmax(-1)
    torch.testing.assert_close(
        out["action_log_prob"], probs.float().gather(-1, chosen[:, None]).squeeze(-1).log()
    )
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        greedy = actor(td.clone())["action"].argmax(-1)
    assert greedy.tolist() == probs.argmax(-1).tolist()
    dist = actor.get_dist(td)
    sample = dist.rsample()
    sample.sum().backward()  # straight-through: the gradient reaches the network
    assert actor.net.out.weight.grad is not None
    # the output layer starts at 0.01 of DreamerV3's initialisation: near-uniform logits
    fresh = DreamerV3DiscreteActor(5, 4, depth=1, num_cells=8, unimix=0.0)
    start = fresh(td.float().clone())["logits"].exp()
    assert (start - 0.25).abs().max() < 0.05
    with pytest.raises(ValueError, match=r"expected unimix in \[0, 1\)"):
        DreamerV3DiscreteActor(5, 4, unimix=1.0)
    with pytest.raises(ValueError, match="expected two in_keys"):
        DreamerV3DiscreteActor(5, 4, in_keys=["state"])


def test_seeded_policy_draws_from_its_own_checkpointed_stream():
    actor = DreamerV3DiscreteActor(6, 5, depth=1, num_cells=8)
    data = TensorDict(state=torch.zeros(64, 4), belief=torch.zeros(64, 2), batch_size=[64])
    policy = DreamerV3SeededPolicy(actor, seed=3)
    torch.manual_seed(0)
    first = policy(data.clone())["action"]
    after = torch.rand(1)  # the caller's stream is untouched by the policy's draws
    torch.manual_seed(0)
    assert torch.equal(torch.rand(1), after)
    saved = policy.state_dict()
    assert saved["_extra_state"] == {"seed": 3, "counter": 1}
    second = policy(data.clone())["action"]
    assert not torch.equal(first, second)  # a new seed per call
    torch.manual_seed(123)  # whatever the global state, a restored policy repeats itself
    policy.load_state_dict(saved)
    assert torch.equal(policy(data.clone())["action"], second)
    other = DreamerV3SeededPolicy(actor, seed=3)
    assert torch.equal(other(data.clone())["action"], first)
    with pytest.raises(ValueError, match="expected seed as an int >= 0, got -1"):
        DreamerV3SeededPolicy(actor, seed=-1)
    with pytest.raises(TypeError, match="expected module as a TensorDict module"):
        DreamerV3SeededPolicy(torch.nn.Linear(2, 2), seed=0)
