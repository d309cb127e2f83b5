import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

pytest.importorskip("transformers", reason='pip install "rl-objectives[transformers]"')

from rl_objectives.modules import (
    DecisionTransformer,
    DecisionTransformerInferenceWrapper,
    DTActor,
    OnlineDTActor,
)

TINY = {"n_embd": 16, "n_layer": 2, "n_head": 2, "n_inner": 32, "n_positions": 64}


def _inputs(*batch, steps=5, obs=3, act=2, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*batch, steps, obs, generator=g, dtype=dtype),
        torch.randn(*batch, steps, act, generator=g, dtype=dtype),
        torch.randn(*batch, steps, 1, generator=g, dtype=dtype),
    )


def test_tokens_interleave_return_state_action_and_output_reads_state_tokens():
    torch.manual_seed(0)
    model = DecisionTransformer(3, 2, TINY).double().eval()
    obs, act, rtg = _inputs(4)
    # the definition: tokens (R_1, s_1, a_1, R_2, s_2, a_2, ...), causal GPT-2, s-token outputs
    tokens = []
    for t in range(5):
        tokens += [
            model.embed_return(rtg[:, t]),
            model.embed_state(obs[:, t]),
            model.embed_action(act[:, t]),
        ]
    seq = model.embed_ln(torch.stack(tokens, dim=1))
    hidden = model.transformer(inputs_embeds=seq).last_hidden_state
    ref = hidden[:, 1::3]
    torch.testing.assert_close(model(obs, act, rtg), ref)


def test_prediction_at_t_ignores_current_and_future_actions():
    torch.manual_seed(0)
    actor = DTActor(3, 2, transformer_config=TINY).double().eval()
    obs, act, rtg = _inputs(2, steps=6)
    base = actor(obs, act, rtg)
    act2 = act.clone()
    act2[:, 3] += 1.0
    moved = actor(obs, act2, rtg)
    torch.testing.assert_close(moved[:, :4], base[:, :4])
    assert not torch.allclose(moved[:, 4:], base[:, 4:])
    rtg2 = rtg.clone()
    rtg2[:, 2] += 1.0
    assert not torch.allclose(actor(obs, act, rtg2)[:, 2], base[:, 2])


def test_actor_heads_match_their_definitions_in_float64():
    torch.manual_seed(0)
    actor = DTActor(3, 2, transformer_config=TINY).double().eval()
    obs, act, rtg = _inputs(2, 3)
    h = actor.transformer(obs, act, rtg)
    # the raw linear output, as TorchRL's DTActor (squashing is left to a TanhDelta head)
    torch.testing.assert_close(
        actor(obs, act, rtg), h @ actor.action_layer.weight.T + actor.action_layer.bias
    )
    online = OnlineDTActor(3, 2, transformer_config=TINY).double().eval()
    h = online.transformer(obs, act, rtg)
    mu, std = online(obs, act, rtg)
    lin = online.action_layer_logstd
    log_std = -5.0 + 3.5 * (torch.tanh(h @ lin.weight.T + lin.bias) + 1)
    torch.testing.assert_close(std, log_std.exp())
    torch.testing.assert_close(
        mu, h @ online.action_layer_mean.weight.T + online.action_layer_mean.bias
    )
    assert mu.shape == (2, 3, 5, 2)
    assert float(std.detach().min()) >= torch.exp(torch.tensor(-5.0)).item()


def test_default_configs_follow_torchrl():
    config = DecisionTransformer.default_config()
    assert (config.n_embd, config.n_layer, config.n_head, config.n_inner) == (256, 4, 4, 1024)
    assert (config.activation, config.n_positions) == ("relu", 1024)
    assert (config.resid_pdrop, config.attn_pdrop) == (0.1, 0.1)
    for actor in (DTActor, OnlineDTActor):
        config = actor.default_config()
        assert (config.n_embd, config.n_layer, config.n_head, config.n_inner) == (512, 4, 4, 2048)
        assert (config.activation, config.n_positions) == ("relu", 1024)
        assert (config.resid_pdrop, config.attn_pdrop) == (0.1, 0.1)


def test_action_heads_start_orthogonal_with_zero_bias():
    # TorchRL initialises the actors' heads so: W W^T = I (action_dim <= n_embd), b = 0
    torch.manual_seed(0)
    actor = DTActor(3, 2, transformer_config=TINY)
    online = OnlineDTActor(3, 2, transformer_config=TINY)
    for layer in (actor.action_layer, online.action_layer_mean, online.action_layer_logstd):
        w = layer.weight.detach()
        torch.testing.assert_close(w @ w.T, torch.eye(2), atol=1e-5, rtol=0)
        assert torch.equal(layer.bias.detach(), torch.zeros(2))


def test_bad_inputs_and_configs_raise():
    model = DecisionTransformer(3, 2, TINY)
    obs, act, rtg = _inputs(2, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"expected observation \[\*B, T, 3\]"):
        model(obs[..., :2], act, rtg)
    with pytest.raises(ValueError, match="more than n_positions=64"):
        model(*_inputs(1, steps=30, dtype=torch.float32))
    with pytest.raises(ValueError, match="unknown config keys"):
        DecisionTransformer(3, 2, {"n_embed": 8})


def test_inference_wrapper_masks_shifts_and_keeps_last_step():
    torch.manual_seed(0)
    actor = DTActor(3, 2, transformer_config=TINY).double().eval()
    policy = TensorDictModule(actor, ["observation", "action", "return_to_go"], ["action"])
    wrapper = DecisionTransformerInferenceWrapper(policy, inference_context=3)
    obs, act, rtg = _inputs(4, steps=7)
    td = TensorDict(observation=obs, action=act, return_to_go=rtg, batch_size=[4])
    out = wrapper(td)
    # reference: actions shifted one step back, the current slot and steps older than 3 zeroed
    shifted = torch.zeros_like(act)
    shifted[:, :-1] = act[:, 1:]
    mask = torch.zeros(7, 1, dtype=torch.float64)
    mask[-3:] = 1.0
    ref = actor(obs * mask, shifted * mask, rtg * mask)[:, -1]
    torch.testing.assert_close(out["action"], ref)
    torch.testing.assert_close(out["return_to_go"], rtg[:, -1])
    torch.testing.assert_close(td["action"], act)  # the input is untouched
    # steps outside the context do not matter
    obs2 = obs.clone()
    obs2[:, :4] = 100.0
    td2 = TensorDict(observation=obs2, action=act, return_to_go=rtg, batch_size=[4])
    torch.testing.assert_close(wrapper(td2)["action"], out["action"])


def test_inference_wrapper_rejects_unstacked_inputs():
    actor = DTActor(3, 2, transformer_config=TINY)
    policy = TensorDictModule(actor, ["observation", "action", "return_to_go"], ["action"])
    with pytest.raises(ValueError, match="expected inference_context >= 1"):
        DecisionTransformerInferenceWrapper(policy, inference_context=0)
    wrapper = DecisionTransformerInferenceWrapper(policy)
    td = TensorDict(
        observation=torch.randn(4, 3),
        action=torch.randn(4, 2),
        return_to_go=torch.randn(4, 1),
        batch_size=[4],
    )
    with pytest.raises(ValueError, match="Stack a context window first"):
        wrapper(td)


def test_inference_wrapper_reads_the_action_at_out_action():
    # TorchRL's test: a policy writing its action under another key is refused until the
    # wrapper is told where (set_tensor_keys(out_action=...))
    torch.manual_seed(0)
    key = ("nested", "action")
    actor = DTActor(3, 2, transformer_config=TINY).double().eval()
    policy = TensorDictModule(actor, ["observation", key, "return_to_go"], [key])
    wrapper = DecisionTransformerInferenceWrapper(policy, inference_context=3)
    obs, act, rtg = _inputs(4, steps=7)
    td = TensorDict({"observation": obs, key: act, "return_to_go": rtg}, batch_size=[4])
    with pytest.raises(ValueError, match=r"The value of out_action_key \('action'\) must be"):
        wrapper(td)
    with pytest.raises(ValueError, match=r"out_action_key \('nope'\)"):
        wrapper.set_tensor_keys(out_action="nope")
    assert wrapper.out_action_key == "action"  # unchanged by the refused call
    wrapper.set_tensor_keys(action=key, out_action=key)
    assert wrapper.out_keys == sorted([key, "observation", "return_to_go"], key=str)
    out = wrapper(td)
    shifted = torch.zeros_like(act)
    shifted[:, :-1] = act[:, 1:]
    mask = torch.zeros(7, 1, dtype=torch.float64)
    mask[-3:] = 1.0
    torch.testing.assert_close(out[key], actor(obs * mask, shifted * mask, rtg * mask)[:, -1])
