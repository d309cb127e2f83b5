import math

import pytest
import torch
from tensordict import TensorDict

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.modules import AdditiveGaussianModule, EGreedyModule, OrnsteinUhlenbeckProcessModule
from rl_core.specs import Bounded, Categorical, Composite, MultiCategorical, MultiOneHot, OneHot

OFF = [ExplorationType.DETERMINISTIC, ExplorationType.MODE, ExplorationType.MEAN]
ON = [ExplorationType.RANDOM, None]
N = 4


def _categorical_td(batch=(2000,)):
    return TensorDict(action=torch.zeros(batch, dtype=torch.long), batch_size=batch)


# -- EGreedyModule ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", OFF)
def test_egreedy_is_identity_when_exploration_is_off(kind):
    module = EGreedyModule(Categorical(N), eps_init=1.0)
    td = _categorical_td()
    with set_exploration_type(kind):
        out = module(td.clone())
    assert (out["action"] == 0).all()


@pytest.mark.parametrize("kind", ON)
def test_egreedy_explores_under_random_and_by_default(kind):
    torch.manual_seed(0)
    module = EGreedyModule(Categorical(N), eps_init=1.0)
    with set_exploration_type(kind):
        out = module(_categorical_td())
    counts = torch.bincount(out["action"], minlength=N)
    assert (counts > 400).all()  # uniform over N=4 actions, 2000 draws


def test_egreedy_replaces_a_fraction_eps_of_the_batch():
    torch.manual_seed(0)
    module = EGreedyModule(OneHot(N), eps_init=0.5)
    greedy = torch.zeros(4000, N, dtype=torch.bool)
    greedy[:, 0] = True
    out = module(TensorDict(action=greedy.clone(), batch_size=[4000]))
    changed = (out["action"] != greedy).any(-1).float().mean()
    # replaced with prob 0.5, and a random action differs from action 0 with prob 3/4
    assert abs(changed.item() - 0.5 * 3 / 4) < 0.04
    assert OneHot(N).expand(4000, N).is_in(out["action"])
    module.eps.fill_(0.0)
    out = module(TensorDict(action=greedy.clone(), batch_size=[4000]))
    assert torch.equal(out["action"], greedy)


@pytest.mark.parametrize("spec", [Categorical(N), OneHot(N)])
def test_egreedy_random_actions_respect_the_mask(spec):
    torch.manual_seed(0)
    mask = torch.zeros(1000, N, dtype=torch.bool)
    mask[:, 2] = True
    mask[::2, 3] = True
    module = EGreedyModule(spec, eps_init=1.0, action_mask_key="action_mask")
    action = spec.zero((1000,))
    out = module(TensorDict(action=action, action_mask=mask, batch_size=[1000]))
    index = out["action"] if isinstance(spec, Categorical) else out["action"].long().argmax(-1)
    assert mask.gather(-1, index.unsqueeze(-1)).all()
    assert (index[::2] == 3).any()
    assert spec.mask is None  # the module's spec is not changed by the call


@pytest.mark.parametrize("spec", [MultiCategorical([2, 3]), MultiOneHot([2, 3])])
def test_egreedy_multi_discrete_with_mask(spec):
    torch.manual_seed(0)
    mask = torch.tensor([True, False, False, True, True]).expand(500, 5)
    module = EGreedyModule(spec, eps_init=1.0, action_mask_key="mask")
    out = module(TensorDict(action=spec.zero((500,)), mask=mask, batch_size=[500]))
    masked = spec.expand(500, *spec.shape).clone()
    masked.update_mask(mask)
    assert masked.is_in(out["action"])
    assert len(out["action"].unique(dim=0)) == 2  # sub-action 0 fixed, sub-action 1 in {1, 2}


def test_egreedy_with_batched_spec_and_extra_time_dim():
    torch.manual_seed(0)
    spec = Composite(action=Bounded(-2.0, 2.0, shape=(3, 2)), shape=(3,))
    module = EGreedyModule(spec, eps_init=1.0)
    td = TensorDict(action=torch.full((5, 3, 2), 10.0), batch_size=[5, 3])
    out = module(td)
    assert out["action"].abs().max() <= 2.0


def test_egreedy_annealing_is_linear_and_saved():
    module = EGreedyModule(Categorical(N), eps_init=1.0, eps_end=0.2, annealing_num_steps=4)
    values = []
    for _ in range(6):
        values.append(round(module.eps.item(), 4))
        module.step()
    assert values == [1.0, 0.8, 0.6, 0.4, 0.2, 0.2]
    module.step(frames=0)
    state = module.state_dict()
    assert state["eps"].item() == pytest.approx(0.2)
    fresh = EGreedyModule(Categorical(N))
    fresh.load_state_dict(state)
    assert fresh.eps.item() == pytest.approx(0.2)


def test_egreedy_errors():
    with pytest.raises(ValueError, match=r"expected eps_init in \[0, 1\], got 1.5"):
        EGreedyModule(Categorical(N), eps_init=1.5)
    with pytest.raises(ValueError, match="expected a positive int annealing_num_steps, got 0"):
        EGreedyModule(Categorical(N), annealing_num_steps=0)
    with pytest.raises(KeyError, match="the spec has no entry 'action'"):
        EGreedyModule(Composite(act=Categorical(N)))


# -- AdditiveGaussianModule ---------------------------------------------------------------------


def _box_td(n=5000, dim=2):
    return TensorDict(action=torch.zeros(n, dim), batch_size=[n])


@pytest.mark.parametrize("kind", OFF)
def test_gaussian_is_identity_when_exploration_is_off(kind):
    module = AdditiveGaussianModule(Bounded(-1.0, 1.0, shape=(2,)))
    with set_exploration_type(kind):
        assert (module(_box_td())["action"] == 0).all()


@pytest.mark.parametrize("kind", ON)
def test_gaussian_noise_statistics(kind):
    torch.manual_seed(0)
    module = AdditiveGaussianModule(
        Bounded(-100.0, 100.0, shape=(2,)), sigma_init=0.5, mean=1.0, std=2.0
    )
    with set_exploration_type(kind):
        noise = module(_box_td())["action"]
    assert noise.mean().item() == pytest.approx(0.5, abs=0.05)
    assert noise.std().item() == pytest.approx(1.0, abs=0.05)


def test_gaussian_projects_only_when_safe():
    torch.manual_seed(0)
    spec = Bounded(-0.1, 0.1, shape=(2,))
    safe = AdditiveGaussianModule(spec)(_box_td())["action"]
    assert safe.abs().max().item() == pytest.approx(0.1)
    unsafe = AdditiveGaussianModule(spec, safe=False)(_box_td())["action"]
    assert unsafe.abs().max() > 1.0


def test_gaussian_annealing():
    module = AdditiveGaussianModule(
        Bounded(-1.0, 1.0, shape=(2,)), sigma_init=1.0, sigma_end=0.5, annealing_num_steps=2
    )
    module.step()
    assert module.sigma.item() == pytest.approx(0.75)
    module.step(frames=10)
    assert module.sigma.item() == pytest.approx(0.5)
    assert "sigma" in module.state_dict()


# -- OrnsteinUhlenbeckProcessModule -------------------------------------------------------------


def _ou(**kwargs):
    return OrnsteinUhlenbeckProcessModule(Bounded(-100.0, 100.0, shape=(2,)), **kwargs)


@pytest.mark.parametrize("kind", OFF)
def test_ou_is_identity_when_exploration_is_off(kind):
    td = _box_td(4)
    with set_exploration_type(kind):
        out = _ou()(td)
    assert (out["action"] == 0).all()
    assert "_ou_prev_noise" not in out


def test_ou_follows_the_recursion_and_resets_per_env():
    # with sigma=0 the process is deterministic: x' = x - theta * x * dt
    theta, dt, eta = 0.5, 0.1, 2.0
    module = _ou(sigma=0.0, theta=theta, dt=dt, eta=eta, x0=1.0)
    decay = 1 - theta * dt
    td = _box_td(3)
    for step in range(1, 4):
        td = module(td)
        torch.testing.assert_close(td["_ou_prev_noise"], torch.full((3, 2), decay**step))
        assert td["_ou_steps"].view(-1).tolist() == [step] * 3
        td["action"] = torch.zeros(3, 2)
    torch.testing.assert_close(td["action"], torch.zeros(3, 2))
    td = module(td)
    torch.testing.assert_close(td["action"], eta * td["_ou_prev_noise"])
    td["is_init"] = torch.tensor([[False], [True], [False]])
    td["action"] = torch.zeros(3, 2)
    td = module(td)
    torch.testing.assert_close(td["_ou_prev_noise"][1], torch.full((2,), decay))
    torch.testing.assert_close(td["_ou_prev_noise"][0], torch.full((2,), decay**5))
    assert td["_ou_steps"].view(-1).tolist() == [5, 1, 5]


@pytest.mark.parametrize("kind", ON)
def test_ou_noise_scale_and_sigma_annealing(kind):
    torch.manual_seed(0)
    dt = 0.04
    module = _ou(sigma=1.0, theta=0.0, dt=dt, eta=1.0, sigma_min=0.2, n_steps_annealing=100)
    n = 20000
    steps = torch.zeros(n, 1, dtype=torch.long)
    steps[n // 2 :] = 1000  # annealed envs
    td = TensorDict(
        action=torch.zeros(n, 2),
        _ou_prev_noise=torch.zeros(n, 2),
        _ou_steps=steps,
        batch_size=[n],
    )
    with set_exploration_type(kind):
        noise = module(td)["_ou_prev_noise"]
    assert noise[: n // 2].std().item() == pytest.approx(math.sqrt(dt), rel=0.05)
    assert noise[n // 2 :].std().item() == pytest.approx(0.2 * math.sqrt(dt), rel=0.05)


def test_ou_projects_into_the_spec():
    torch.manual_seed(0)
    module = OrnsteinUhlenbeckProcessModule(Bounded(-0.01, 0.01, shape=(2,)), sigma=0.0, x0=5.0)
    out = module(_box_td(4))["action"]
    torch.testing.assert_close(out, torch.full((4, 2), 0.01))


def test_ou_noise_state_spec_zeros_are_a_fresh_state():
    spec = Composite(action=Bounded(-1.0, 1.0, shape=(3, 2)), shape=(3,))
    module = OrnsteinUhlenbeckProcessModule(spec, sigma=0.0, x0=0.0)
    state_spec = module.noise_state_spec()
    assert state_spec.shape == (3,)
    assert state_spec["_ou_prev_noise"].shape == (3, 2)
    assert state_spec["_ou_steps"].shape == (3, 1)
    assert state_spec["_ou_steps"].dtype is torch.int64
    td = state_spec.zero()
    td["action"] = torch.zeros(3, 2)
    out = module(td)
    assert state_spec.is_in(out.select("_ou_prev_noise", "_ou_steps"))
    assert out["_ou_steps"].view(-1).tolist() == [1, 1, 1]
