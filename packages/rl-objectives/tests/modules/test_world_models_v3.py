"""DreamerV3's discrete-latent RSSM against references written from the paper's definitions:
unimix probabilities, inverse-CDF one-hot samples and straight-through gradients."""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.specs import Bounded
from rl_objectives.modules import RSSMPosteriorV3, RSSMPriorV3, RSSMRollout


def ref_probs(row: list[float], unimix: float) -> list[float]:
    z = sum(math.exp(v) for v in row)
    return [(1 - unimix) * math.exp(v) / z + unimix / len(row) for v in row]


def ref_sample(probs: list[float], u: float) -> int:
    """Inverse CDF: the first class whose cumulative probability reaches u."""
    total = 0.0
    for k, p in enumerate(probs):
        total += p
        if u <= total:
            return k
    return len(probs) - 1


@pytest.mark.parametrize("unimix", [0.0, 0.01, 0.3])
def test_posterior_sample_and_straight_through_gradient_match_definition(unimix):
    torch.manual_seed(0)
    post = RSSMPosteriorV3(hidden_dim=8, num_categoricals=3, num_classes=4, rnn_hidden_dim=5,
                           obs_embed_dim=2, unimix=unimix).double()  # fmt: skip
    belief, embed = torch.randn(6, 5, dtype=torch.float64), torch.randn(6, 2, dtype=torch.float64)
    uniform = torch.rand(6, 3, dtype=torch.float64)
    logits, state = post(belief, embed, uniform=uniform)
    assert logits.shape == (6, 3, 4)
    assert state.shape == (6, 12)
    weights = torch.randn(6, 12, dtype=torch.float64)
    logits.retain_grad()
    (state * weights).sum().backward()
    for b in range(6):
        for c in range(3):
            row = logits[b, c].tolist()
            probs = ref_probs(row, unimix)
            k = ref_sample(probs, uniform[b, c].item())
            one_hot = [1.0 if j == k else 0.0 for j in range(4)]
            assert state[b, 4 * c : 4 * c + 4].tolist() == one_hot
            # straight-through: d state / d logits = d probs / d logits
            # = (1 - unimix) * softmax_j (delta_jk - softmax_k)
            w = weights[b, 4 * c : 4 * c + 4].tolist()
            soft = ref_probs(row, 0.0)
            dot = sum(wj * sj for wj, sj in zip(w, soft))
            grad = [(1 - unimix) * soft[k] * (w[k] - dot) for k in range(4)]
            assert logits.grad[b, c].tolist() == pytest.approx(grad, abs=1e-12)


def test_samples_follow_the_unimixed_probabilities():
    torch.manual_seed(1)
    post = RSSMPosteriorV3(hidden_dim=4, num_categoricals=1, num_classes=3, rnn_hidden_dim=1,
                           obs_embed_dim=1, unimix=0.5)  # fmt: skip
    with torch.no_grad():
        post.obs_rnn_to_post_projector[-1].weight.zero_()
        post.obs_rnn_to_post_projector[-1].bias.copy_(torch.tensor([5.0, 0.0, -5.0]))
    _, state = post(torch.zeros(40000, 1), torch.zeros(40000, 1))
    freq = state.mean(0)
    expected = torch.tensor(ref_probs([5.0, 0.0, -5.0], 0.5))
    assert torch.allclose(freq, expected, atol=0.01), (freq, expected)


def test_prior_matches_its_layers_and_batches():
    torch.manual_seed(0)
    prior = RSSMPriorV3(Bounded(-1.0, 1.0, shape=(2,)), hidden_dim=8, rnn_hidden_dim=6,
                        num_categoricals=2, num_classes=3).double()  # fmt: skip
    state = torch.randn(4, 5, 6, dtype=torch.float64)
    belief = torch.randn(4, 5, 6, dtype=torch.float64)
    action = torch.randn(4, 5, 2, dtype=torch.float64)
    uniform = torch.rand(4, 5, 2, dtype=torch.float64)
    logits, next_state, next_belief = prior(state, belief, action, uniform=uniform)
    x = torch.nn.functional.silu(prior.action_state_projector[0](torch.cat([state, action], -1)))
    h = prior.rnn(x.reshape(20, 8), belief.reshape(20, 6)).reshape(4, 5, 6)
    assert torch.allclose(next_belief, h)
    assert torch.allclose(logits, prior.rnn_to_prior_projector(h).reshape(4, 5, 2, 3))
    _, state_again = RSSMPosteriorV3(hidden_dim=2, num_categoricals=2, num_classes=3,
                                     rnn_hidden_dim=1, obs_embed_dim=1).double()(
        torch.zeros(4, 5, 1, dtype=torch.float64), torch.zeros(4, 5, 1, dtype=torch.float64),
        uniform=uniform)  # fmt: skip
    assert next_state.view(4, 5, 2, 3).sum(-1).eq(1).all()
    assert state_again.shape == next_state.shape
    # integer actions are cast to the belief's dtype
    prior(state, belief, action.round().long())


def test_rollout_filters_discrete_latents():
    prior = TensorDictModule(
        RSSMPriorV3(action_dim=1, hidden_dim=8, rnn_hidden_dim=6, num_categoricals=2,
                    num_classes=3),
        in_keys=["state", "belief", "action"],
        out_keys=[("next", "prior_logits"), "_", ("next", "belief")],
    )  # fmt: skip
    post = TensorDictModule(
        RSSMPosteriorV3(hidden_dim=8, num_categoricals=2, num_classes=3, rnn_hidden_dim=6,
                        obs_embed_dim=3),
        in_keys=[("next", "belief"), ("next", "encoded_latents")],
        out_keys=[("next", "posterior_logits"), ("next", "state")],
    )  # fmt: skip
    td = TensorDict(state=torch.zeros(2, 5, 6), belief=torch.zeros(2, 5, 6),
                    action=torch.randn(2, 5, 1), batch_size=[2, 5])  # fmt: skip
    td["next", "encoded_latents"] = torch.randn(2, 5, 3)
    out = RSSMRollout(prior, post)(td)
    assert out["next", "prior_logits"].shape == (2, 5, 2, 3)
    assert torch.equal(out["state"][:, 1:], out["next", "state"][:, :-1])


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match=r"expected unimix in \[0, 1\), got 1.0"):
        RSSMPriorV3(action_dim=1, unimix=1.0)
    with pytest.raises(ValueError, match="action_spec or action_shape, not both"):
        RSSMPriorV3(Bounded(-1.0, 1.0, shape=(1,)), action_shape=(1,))
    with pytest.raises(ValueError, match="num_classes as a positive int, got 0"):
        RSSMPosteriorV3(num_classes=0)
    post = RSSMPosteriorV3(hidden_dim=4, num_categoricals=2, num_classes=3, rnn_hidden_dim=1,
                           obs_embed_dim=1)  # fmt: skip
    with pytest.raises(ValueError, match=r"expected uniform of shape \(5, 2\)"):
        post(torch.zeros(5, 1), torch.zeros(5, 1), uniform=torch.rand(5, 3))
