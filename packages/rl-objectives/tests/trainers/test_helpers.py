import pytest
import torch

from rl_core.testing import CountingEnv
from rl_objectives.trainers.helpers import make_dqn_models, make_ppo_models, make_sac_models


def test_ppo_models_act_on_the_env():
    env = CountingEnv(batch_size=[3])
    models = make_ppo_models(env, num_cells=8, depth=1)
    td = models["policy"](env.reset())
    assert td["action"].shape == env.action_spec.shape
    assert models["critic_network"](td)["state_value"].shape == torch.Size([3, 1])
    assert models["policy"] is models["actor_network"]


def test_errors():
    with pytest.raises(TypeError, match="env must be an rl-core EnvBase, got str"):
        make_ppo_models("CartPole-v1")
    with pytest.raises(ValueError, match="activation must be one of"):
        make_ppo_models(CountingEnv(), activation="gelu")
    with pytest.raises(ValueError, match="SAC needs continuous actions"):
        make_sac_models(CountingEnv())


def test_dqn_models_explore_and_anneal():
    env = CountingEnv(batch_size=[4])
    models = make_dqn_models(env, num_cells=8, eps_init=1.0, eps_end=0.0, annealing_num_steps=10)
    td = models["policy"](env.reset())
    assert td["action"].shape == env.action_spec.shape
    assert "action_value" in td.keys()
    models["exploration"].step(5)
    assert models["exploration"].eps.item() == pytest.approx(0.5)  # 1 -> 0 over 10 frames
    with pytest.raises(ValueError, match="DQN needs discrete actions"):
        make_dqn_models(_ContinuousEnv())


class _ContinuousEnv(CountingEnv):
    """CountingEnv with a float action spec, to check the discrete-only builder refuses it."""

    def __init__(self):
        super().__init__()
        from rl_core.specs import Bounded

        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))


# TorchRL's config-driven builders, against hand-computed values.


def test_correct_for_frame_skip_divides_the_frame_counts_in_place():
    from types import SimpleNamespace

    from rl_objectives.trainers.helpers import correct_for_frame_skip

    cfg = SimpleNamespace(frame_skip=4, total_frames=1001, frames_per_batch=64,
                          init_random_frames=None, lr=3e-4)  # fmt: skip
    assert correct_for_frame_skip(cfg) is cfg
    assert (cfg.total_frames, cfg.frames_per_batch, cfg.init_random_frames) == (250, 16, None)
    assert cfg.lr == 3e-4  # not a frame count
    with pytest.raises(ValueError, match=r"cfg\.frame_skip must be a positive int, got 0"):
        correct_for_frame_skip({"frame_skip": 0, "total_frames": 8})
    with pytest.raises(KeyError, match=r"cfg has no 'frame_skip' setting"):
        correct_for_frame_skip({"total_frames": 8})


def _qvalue_actor():
    from rl_core import OneHot
    from rl_core.modules import MLP, QValueActor

    return QValueActor(MLP(3, 2, depth=1, num_cells=8), in_keys=["observation"], spec=OneHot(2))


def test_make_target_updater_follows_the_loss_and_hard_update_settings():
    from rl_objectives import DQNLoss, HardUpdate, SoftUpdate
    from rl_objectives.trainers.helpers import make_target_updater

    loss = DQNLoss(_qvalue_actor(), delay_value=True)
    soft = make_target_updater({"loss": "double", "value_network_update_interval": 200}, loss)
    assert isinstance(soft, SoftUpdate)
    # eps = 1 - 1/200: each update moves the target 1/200 of the way to the online weights.
    online = next(iter(loss.value_network_params.values(True, True)))
    target = next(iter(loss.target_value_network_params.values(True, True)))
    before = target.detach().clone()
    with torch.no_grad():
        online.add_(1.0)
    soft.step()
    assert torch.allclose(target.detach(), before + (online.detach() - before) / 200, atol=1e-6)
    hard = make_target_updater(
        {"loss": "double", "hard_update": True, "value_network_update_interval": 7}, loss
    )
    assert isinstance(hard, HardUpdate)
    assert hard.value_network_update_interval == 7
    assert make_target_updater({"loss": "single"}, loss) is None
    with pytest.raises(ValueError, match=r"cfg\.hard_update needs cfg\.loss='double'"):
        make_target_updater({"loss": "single", "hard_update": True}, loss)


def test_make_dqn_loss_builds_the_loss_its_estimator_and_its_updater():
    from rl_objectives import DQNLoss, SoftUpdate
    from rl_objectives.trainers.helpers import make_dqn_loss

    cfg = {"loss": "double", "loss_function": "smooth_l1", "gamma": 0.9,
           "value_network_update_interval": 10}  # fmt: skip
    loss, updater = make_dqn_loss(_qvalue_actor(), cfg)
    assert isinstance(loss, DQNLoss)
    assert isinstance(updater, SoftUpdate)
    assert loss.delay_value
    assert loss.loss_function == "smooth_l1"
    assert loss.value_estimator.gamma == pytest.approx(0.9)
    single, none = make_dqn_loss(_qvalue_actor(), {**cfg, "loss": "single"})
    assert none is None
    assert not single.delay_value
    with pytest.raises(ValueError, match=r"cfg\.loss must be 'single' or 'double', got 'triple'"):
        make_dqn_loss(_qvalue_actor(), {**cfg, "loss": "triple"})


def test_make_trainer_trains_as_a_trainer_built_by_hand(tiny):
    from rl_objectives.trainers import Trainer
    from rl_objectives.trainers.helpers import make_trainer

    def parts():
        torch.manual_seed(3)
        return tiny.Collector(tiny.env(), tiny.random_policy, 4), tiny.Loss(tiny.value_network(0))

    collector, loss = parts()
    cfg = {"optimizer": "sgd", "lr": 0.05, "total_frames": 16, "frames_per_batch": 8,
           "lr_scheduler": "cosine", "seed": 1}  # fmt: skip
    trainer = make_trainer(collector, loss, cfg=cfg)
    trainer.train()
    got = [p.detach().clone() for p in loss.parameters()]
    assert isinstance(trainer.optimizer, torch.optim.SGD)
    # Cosine over int(16 / 8 * 1) = 2 steps: after both, lr = 0.05 * (1 + cos(pi)) / 2 = 0.
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert collector.weight_updates == 2  # UpdateWeights after each batch
    # By hand: the same trainer with the first step at lr 0.05 and the second at 0.025.
    collector, loss = parts()
    optimizer = torch.optim.SGD(loss.parameters(), lr=0.05)
    by_hand = Trainer(collector, 16, loss, optimizer, progress_bar=False, seed=1)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 2)
    by_hand.register_op("post_optim", schedule.step)
    by_hand.train()
    for want, have in zip(loss.parameters(), got):
        torch.testing.assert_close(have, want.detach(), rtol=0, atol=0)


def test_make_trainer_refuses_unknown_settings(tiny):
    from rl_objectives.trainers.helpers import make_trainer

    loss = tiny.Loss(tiny.value_network(0))
    with pytest.raises(
        ValueError, match=r"cfg\.optimizer must be one of \['adam', 'adamax', 'sgd'\], got 'lion'"
    ):
        make_trainer([], loss, cfg={"optimizer": "lion", "total_frames": 8})
    with pytest.raises(ValueError, match=r"cfg is required"):
        make_trainer([], loss)
