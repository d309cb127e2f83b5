"""WorldModel's composition and WorldModelLoss's terms against values computed by hand."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_objectives import WorldModelLoss
from rl_objectives.modules import WorldModel


def _model(with_heads: bool = True) -> WorldModel:
    # latent = 2 * obs; next latent = latent + action; reward = sum(next latent);
    # done = next latent[0] > 0; reconstruction = latent / 2 + 1
    encoder = TensorDictModule(lambda o: 2 * o, ["observation"], ["latent"])
    dynamics = TensorDictModule(lambda z, a: z + a, ["latent", "action"], [("next", "latent")])
    reward = TensorDictModule(
        lambda z: z.sum(-1, keepdim=True), [("next", "latent")], [("next", "reward")]
    )
    if not with_heads:
        return WorldModel(encoder, dynamics, reward)
    done = TensorDictModule(lambda z: z[..., :1] > 0, [("next", "latent")], [("next", "done")])
    decoder = TensorDictModule(lambda z: z / 2 + 1, ["latent"], ["reconstructed_observation"])
    return WorldModel(encoder, dynamics, reward, done_head=done, decoder=decoder)


def _batch() -> TensorDict:
    obs = torch.tensor([[1.0, -1.0], [0.5, 2.0]])
    action = torch.tensor([[0.0, 1.0], [-2.0, 0.0]])
    return TensorDict(
        observation=obs,
        action=action,
        next=TensorDict(
            reward=torch.tensor([[1.0], [4.0]]),
            done=torch.tensor([[True], [True]]),
            terminated=torch.tensor([[True], [False]]),
            batch_size=[2],
        ),
        batch_size=[2],
    )


def test_world_model_runs_its_parts_in_order_and_step_skips_the_encoder():
    model = _model()
    out = model(_batch())
    # latents [2, -2] and [1, 4]; next [2, -1] and [-1, 4]
    assert out["next", "latent"].tolist() == [[2.0, -1.0], [-1.0, 4.0]]
    assert out["next", "reward"].squeeze(-1).tolist() == [1.0, 3.0]
    assert out["next", "done"].squeeze(-1).tolist() == [True, False]
    start = TensorDict(latent=torch.zeros(1, 2), action=torch.ones(1, 2), batch_size=[1])
    stepped = model.step(start)
    assert stepped["next", "reward"].item() == 2.0
    assert model.decode(start)["reconstructed_observation"].tolist() == [[1.0, 1.0]]
    assert model.step_module is model._step_seq
    with pytest.raises(RuntimeError, match="has no decoder"):
        _model(with_heads=False).decode(start)
    with pytest.raises(TypeError, match="expected dynamics as a TensorDict module"):
        WorldModel(model.encoder, torch.nn.Linear(2, 2), model.reward_head)


def test_each_loss_term_is_its_weighted_distance():
    loss = WorldModelLoss(
        _model(),
        losses=["reward", "done", "reconstruction"],
        reward_weight=2.0,
        reconstruction_loss="l1",
    )
    out = loss(_batch())
    # reward: predictions [1, 3] against [1, 4]: mean squared error 0.5, weighted 1.0
    assert out["loss_reward"].item() == pytest.approx(1.0)
    # done: [1, 0] against [1, 1]: 0.5
    assert out["loss_done"].item() == pytest.approx(0.5)
    # reconstruction: latent / 2 + 1 = obs + 1, so |1| everywhere: 1.0
    assert out["loss_reconstruction"].item() == pytest.approx(1.0)
    batch = _batch()
    loss(batch)
    assert batch["next", "reward"].squeeze(-1).tolist() == [1.0, 4.0]  # the input is untouched


def test_latent_term_and_missing_keys():
    model = _model(with_heads=False)
    loss = WorldModelLoss(model, losses=["latent"]).set_keys(
        predicted_latent=("next", "latent"), target_latent="target"
    )
    batch = _batch()
    batch["target"] = torch.tensor([[2.0, 0.0], [0.0, 4.0]])
    # next latents [2, -1] and [-1, 4]: squared errors 0, 1, 1, 0
    assert loss(batch)["loss_latent"].item() == pytest.approx(0.5)
    with pytest.raises(KeyError, match="the latent target at 'target'"):
        loss(_batch())
    with pytest.raises(KeyError, match="the world model's done prediction"):
        WorldModelLoss(model, losses=["done"])(_batch())


def test_bad_arguments_are_refused_naming_them():
    model = _model()
    with pytest.raises(ValueError, match=r"expected losses as a non-empty subset .* got \['kl'\]"):
        WorldModelLoss(model, losses=["kl"])
    with pytest.raises(ValueError, match="expected done_weight as a finite number >= 0"):
        WorldModelLoss(model, done_weight=-1.0)
    with pytest.raises(ValueError, match="loss function must be"):
        WorldModelLoss(model, reward_loss="huber")
