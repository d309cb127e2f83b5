"""Oracle tests of the losses' fast paths against the generic paths they shortcut."""

import sys
from pathlib import Path

import torch
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, offpolicy_batch

from rl_core.modules import MLP, QValueActor, ValueOperator
from rl_objectives import DQNLoss
from rl_objectives.losses import _common as C
from rl_objectives.value import TD0Estimator


class Shifted(TensorDictModule):
    """A subclass with its own forward: the fast path must not apply to it."""

    def forward(self, tensordict, *args, **kwargs):
        out = super().forward(tensordict, *args, **kwargs)
        out["state_value"] = out["state_value"] + 1
        return out


def test_read_output_matches_module_call():
    torch.manual_seed(0)
    td = offpolicy_batch()
    for module in (
        ValueOperator(MLP(OBS, 1, depth=1, num_cells=8), ["observation"]),
        TensorDictModule(MLP(OBS, 1, depth=1, num_cells=8), ["observation"], ["state_value"]),
        Shifted(MLP(OBS, 1, depth=1, num_cells=8), ["observation"], ["state_value"]),
    ):
        expected = module(td.copy())["state_value"]
        torch.testing.assert_close(C.read_output(module, td, "state_value"), expected)


def test_td0_bootstrap_fast_path_matches_estimator():
    td = offpolicy_batch()
    next_value = torch.randn(8, 1)
    loss = DQNLoss(QValueActor(MLP(OBS, N_ACT, depth=1, num_cells=8), action_space="categorical"))
    assert type(loss.value_estimator) is TD0Estimator
    fast = C.bootstrap_target(loss, td, next_value)
    keys = loss.value_estimator.tensor_keys
    generic = loss.value_estimator.value_estimate(C.next_value_td(td, keys.value, next_value, keys))
    torch.testing.assert_close(fast, generic)


def test_dqn_qvalue_head_fast_path_matches_full_network():
    torch.manual_seed(0)
    net = QValueActor(MLP(OBS, N_ACT, depth=1, num_cells=8), action_space="categorical")
    loss = DQNLoss(net)
    td = offpolicy_batch()
    fast = loss._action_values(td, target=True)
    with loss.target_value_network_params.to_module(loss.value_network):
        full = loss.value_network(td.copy())["action_value"]
    torch.testing.assert_close(fast, full)


def test_actor_dist_fast_path_matches_get_dist():
    from tensordict.nn import NormalParamExtractor

    from rl_core.modules import OneHotCategorical, ProbabilisticActor, TanhNormal

    torch.manual_seed(0)
    td = offpolicy_batch()
    tanh = ProbabilisticActor(
        TensorDictModule(
            torch.nn.Sequential(MLP(OBS, 4, depth=1, num_cells=8), NormalParamExtractor()),
            ["observation"],
            ["loc", "scale"],
        ),
        ["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -2.0, "high": 2.0},
    )
    onehot = ProbabilisticActor(
        TensorDictModule(MLP(OBS, N_ACT, depth=1, num_cells=8), ["observation"], ["logits"]),
        ["logits"],
        distribution_class=OneHotCategorical,
    )
    assert C._plain_parameter_step(tanh) is not None
    fast, slow = C.actor_dist(tanh, td), tanh.get_dist(td.copy())
    assert type(fast) is type(slow)
    x = slow.sample()
    torch.testing.assert_close(fast.log_prob(x), slow.log_prob(x))
    torch.testing.assert_close(fast.low, slow.low)
    fast, slow = C.actor_dist(onehot, td), onehot.get_dist(td.copy())
    torch.testing.assert_close(fast.logits, slow.logits)
    # a first step that is not a plain TensorDictModule takes the generic path
    shifted = ProbabilisticActor(
        Shifted(MLP(OBS, N_ACT, depth=1, num_cells=8), ["observation"], ["logits"]),
        ["logits"],
        distribution_class=OneHotCategorical,
    )
    assert C._plain_parameter_step(shifted) is None


class _ToModule:
    """``LossModule.use_network`` written with ``TensorDict.to_module`` only: the generic path."""

    def __init__(self, loss, name, *, target=False, params=None):
        if params is None:
            params = getattr(loss, f"target_{name}_params" if target else f"{name}_params")
        self.module = loss.__dict__[name]
        self.swap = params.to_module(self.module, preserve_module_state=False)

    def __enter__(self):
        self.swap.__enter__()
        return self.module

    def __exit__(self, *exc):
        return self.swap.__exit__(*exc)


def _generic_use_network(self, name, *, target=False, params=None):
    return _ToModule(self, name, target=target, params=params)


def _losses_and_grads(loss, td, seed):
    torch.manual_seed(seed)
    out = loss(td.clone())
    total = sum(v for k, v in out.items() if k.startswith("loss"))
    params = list(loss.parameters())
    grads = torch.autograd.grad(total, params, allow_unused=True)
    return {k: v.detach() for k, v in out.items()}, grads


def _assert_planned_loading_matches_to_module(loss, make_td, monkeypatch):
    """Planned and generic parameter loading give identical losses and gradients, also after
    optimizer steps and soft target updates."""
    from rl_core.objectives import LossModule
    from rl_objectives import SoftUpdate

    optim = torch.optim.Adam(loss.parameters(), lr=0.01)
    updater = SoftUpdate(loss, tau=0.2)
    for step in range(3):
        td = make_td(step)
        fast = _losses_and_grads(loss, td, step)
        with monkeypatch.context() as m:
            m.setattr(LossModule, "use_network", _generic_use_network)
            slow = _losses_and_grads(loss, td, step)
        for key in fast[0].keys():
            assert torch.equal(fast[0][key], slow[0][key]), key
        for a, b in zip(fast[1], slow[1], strict=True):
            assert (a is None and b is None) or torch.equal(a, b)
        optim.zero_grad()
        torch.manual_seed(step)
        out = loss(td.clone())
        sum(v for k, v in out.items() if k.startswith("loss")).backward()
        optim.step()
        updater.step()


def test_sac_planned_loading_matches_to_module(monkeypatch):
    from _continuous import ACT, q_critic, tanh_actor

    from rl_objectives import SACLoss

    loss = SACLoss(tanh_actor()[0], q_critic(), delay_actor=True)

    def make_td(step):
        g = torch.Generator().manual_seed(step)
        return offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8, seed=step)

    _assert_planned_loading_matches_to_module(loss, make_td, monkeypatch)


def test_dqn_planned_loading_matches_to_module(monkeypatch):
    torch.manual_seed(0)
    net = QValueActor(
        MLP(OBS, N_ACT, depth=1, num_cells=16), in_keys=["observation"], action_space="categorical"
    )
    loss = DQNLoss(net, double_dqn=True)

    def make_td(step):
        g = torch.Generator().manual_seed(step)
        return offpolicy_batch(action=torch.randint(N_ACT, (8,), generator=g), seed=step)

    _assert_planned_loading_matches_to_module(loss, make_td, monkeypatch)


def test_a_copy_of_a_used_loss_reads_its_own_parameters():
    import copy

    from _continuous import ACT, q_critic, tanh_actor

    from rl_objectives import SACLoss

    loss = SACLoss(tanh_actor()[0], q_critic())
    td = offpolicy_batch(action=torch.rand(8, ACT) - 0.5)
    fresh = copy.deepcopy(loss)  # copied before any cache exists
    loss(td.clone())  # detached critics and loading plans cached
    used = copy.deepcopy(loss)
    for copied in (fresh, used):
        with torch.no_grad():
            for p in copied.parameters():
                p.add_(0.1)
    torch.manual_seed(0)
    want = fresh(td.clone())
    torch.manual_seed(0)
    got = used(td.clone())
    for key in ("loss_actor", "loss_qvalue", "loss_alpha"):
        torch.testing.assert_close(got[key], want[key], rtol=0, atol=0)
