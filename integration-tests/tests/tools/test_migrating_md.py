"""MIGRATING.md's list of deliberate differences stays in step with the code: every default it
states (written ``defaults `Name(param=value)` ``) is read from the code's signature, and the
behaviour each entry states is checked here (a change of behaviour fails this test and says
to update MIGRATING.md)."""

import ast
import importlib
import inspect
import math
import re
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule

ROOT = Path(__file__).resolve().parents[3]
TEXT = (ROOT / "MIGRATING.md").read_text()
DIFFERENCES = TEXT.split("## Behaves differently", 1)[1].split("\n## ", 1)[0]
DEFAULT_CLAIM = re.compile(r"defaults `(\w+)\(([^`]*)\)`")
UPDATE = "MIGRATING.md's 'Behaves differently' no longer matches the code: update the entry"


def resolve(name: str, import_map) -> object:
    """The object a name in MIGRATING.md stands for: through the import map, else rl_*."""
    target = import_map.targets.get(name)
    if target is not None:
        return getattr(importlib.import_module(target.module), target.name)
    for module_name, (module, _) in import_map.new.items():
        if module_name == name:
            return getattr(importlib.import_module(module), name)
    raise AssertionError(f"MIGRATING.md names {name}, which the import map does not place")


def stated_defaults() -> list[tuple[str, dict[str, object]]]:
    claims = []
    for name, args in DEFAULT_CLAIM.findall(TEXT):
        call = ast.parse(f"f({args})", mode="eval").body
        assert isinstance(call, ast.Call)
        assert not call.args, f"defaults `{name}(...)`: write keyword=value pairs only"
        claims.append((name, {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}))
    return claims


def test_every_stated_default_is_the_codes(migrate):
    import_map = migrate.ImportMap.load()
    claims = stated_defaults()
    assert claims, "MIGRATING.md states no defaults: the pattern `defaults `Name(...)`` changed?"
    for name, defaults in claims:
        parameters = inspect.signature(resolve(name, import_map)).parameters
        for param, value in defaults.items():
            assert param in parameters, f"{name} has no parameter {param}: {UPDATE}"
            assert parameters[param].default == value, (
                f"{name}({param}=...) defaults to {parameters[param].default!r} in the code, "
                f"{value!r} in MIGRATING.md: {UPDATE}"
            )


def test_every_difference_says_what_to_do():
    entries = [e for e in re.split(r"\n- ", DIFFERENCES) if e.startswith("**")]
    assert len(entries) >= 7
    for entry in entries:
        assert "**What to do:**" in " ".join(entry.split()), f"no 'What to do' in: {entry[:80]}"


def small_cql(**kwargs):
    from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
    from rl_objectives import CQLLoss

    torch.manual_seed(0)
    net = TensorDictModule(
        torch.nn.Sequential(MLP(3, 2, depth=1, num_cells=8), NormalParamExtractor()),
        ["observation"],
        ["loc", "scale"],
    )
    actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
    q = ValueOperator(MLP(4, 1, depth=1, num_cells=8), ["observation", "action"])
    return CQLLoss(actor, q, num_random=3, **kwargs)


def cql_batch():
    g = torch.Generator().manual_seed(1)
    return TensorDict(
        observation=torch.randn(6, 3, generator=g),
        action=torch.rand(6, 1, generator=g) - 0.5,
        next=TensorDict(
            observation=torch.randn(6, 3, generator=g),
            reward=torch.randn(6, 1, generator=g),
            done=torch.zeros(6, 1, dtype=torch.bool),
            terminated=torch.zeros(6, 1, dtype=torch.bool),
        ),
        batch_size=[6],
    )


def test_cql_lagrangian_terms_train_only_their_own_parameters():
    loss = small_cql(with_lagrange=True)
    critics = [p for n, p in loss.named_parameters() if "qvalue" in n and p.requires_grad]
    assert critics
    torch.manual_seed(2)
    out = loss(cql_batch())
    to_critics = torch.autograd.grad(
        out["loss_alpha_prime"], critics, retain_graph=True, allow_unused=True
    )
    assert all(g is None or not g.any() for g in to_critics), (
        f"loss_alpha_prime now reaches the critics (TorchRL's behaviour): {UPDATE}"
    )
    (to_dual,) = torch.autograd.grad(
        out["loss_cql"], [loss.log_alpha_prime], retain_graph=True, allow_unused=True
    )
    assert to_dual is None or not to_dual.any(), f"loss_cql now trains log_alpha_prime: {UPDATE}"
    assert any(
        g is not None and g.any()
        for g in torch.autograd.grad(out["loss_cql"], critics, allow_unused=True)
    )
    # loss_cql is scaled by alpha_prime (lagrange_thresh 0): doubling alpha_prime doubles it
    with torch.no_grad():
        loss.log_alpha_prime.add_(math.log(2.0))
    torch.manual_seed(2)
    doubled = loss(cql_batch())["loss_cql"]
    torch.testing.assert_close(doubled, 2 * out["loss_cql"].detach(), rtol=1e-5, atol=1e-6)


def test_vtrace_bootstraps_a_truncated_episode_from_its_own_next_value():
    from rl_objectives.value.functional import vtrace_advantage_estimate

    gamma = 0.9
    g = torch.Generator().manual_seed(0)
    value, next_value, reward = (torch.randn(3, 1, dtype=torch.float64, generator=g) for _ in "abc")
    log_prob = torch.zeros(3, 1, dtype=torch.float64)  # on-policy: rho = c = 1
    done = torch.tensor([[False], [True], [False]])  # step 1 is truncated, not terminated
    terminated = torch.zeros(3, 1, dtype=torch.bool)
    advantage, _ = vtrace_advantage_estimate(
        gamma, log_prob, log_prob, value, next_value, reward, done, terminated
    )
    # from the paper, with rho = c = 1: within the first episode (steps 0-1)
    # vs[1] = V(x1) + delta1 = reward1 + gamma * next_value1
    vs1 = reward[1] + gamma * next_value[1]
    expected = torch.stack(
        [
            reward[0] + gamma * vs1 - value[0],
            reward[1] + gamma * next_value[1] - value[1],  # own bootstrap (TorchRL: vs[2])
            reward[2] + gamma * next_value[2] - value[2],
        ]
    )
    torch.testing.assert_close(advantage, expected, msg=lambda m: f"{m}\n{UPDATE}")


@pytest.mark.parametrize("name", ["td1_return_estimate", "td_lambda_return_estimate"])
def test_per_step_gamma_is_refused_by_the_looped_functions(name):
    from rl_objectives.value import functional

    fn = getattr(functional, name)
    args = [0.9] if name == "td1_return_estimate" else [0.9, 0.5]
    reward = torch.ones(4, 1)
    flags = torch.zeros(4, 1, dtype=torch.bool)
    fn(*args, torch.ones(4, 1), reward, flags, flags, rolling_gamma=True)
    with pytest.raises(RuntimeError):
        fn(*args, torch.ones(4, 1), reward, flags, flags, rolling_gamma=False)


def test_spec_checks_are_off_per_step_and_switchable():
    import rl_core

    assert not rl_core.spec_checks_enabled()
    with rl_core.set_spec_checks():
        assert rl_core.spec_checks_enabled()
    assert not rl_core.spec_checks_enabled()


def test_torch_stack_works_on_specs_as_the_named_differently_table_says():
    from rl_core import Bounded, Stacked, stack_specs

    assert "(`torch.stack` works too)" in TEXT
    a, b = Bounded(-1.0, 1.0, shape=(3,)), Bounded(-2.0, 2.0, shape=(3,))
    stacked = torch.stack([a, a], 0)
    assert stacked == stack_specs([a, a], 0)
    assert stacked.shape == (2, 3)
    assert isinstance(torch.stack([a, b], 0), Stacked)


def test_bounded_stays_bounded_and_equals_its_continuous_name():
    from rl_core import Bounded, Unbounded
    from rl_core.specs import BoundedContinuous, UnboundedContinuous

    plain = Bounded(-1.0, 1.0, shape=(2,))
    assert type(plain) is Bounded, f"Bounded(...) now returns {type(plain).__name__}: {UPDATE}"
    assert type(Unbounded(shape=(2,))) is Unbounded
    named = BoundedContinuous(-1.0, 1.0, shape=(2,))
    assert isinstance(named, Bounded)
    assert named == plain
    assert isinstance(UnboundedContinuous(shape=(2,)), Unbounded)


def test_multicategorical_per_element_counts():
    from rl_core import MultiCategorical

    same = MultiCategorical(nvec=torch.tensor([[2, 3], [2, 3]]), shape=(2, 2))
    assert same.nvec.tolist() == [2, 3], f"nvec is no longer stored 1-d: {UPDATE}"
    different = MultiCategorical(nvec=torch.tensor([[2, 3], [4, 5]]), shape=(2, 2))
    assert different.is_in(different.rand())
    with pytest.raises(ValueError, match="same nvec for every batch element"):
        different.cardinality()


def test_non_functional_losses_and_float_coefficients():
    from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
    from rl_objectives import ClipPPOLoss

    net = TensorDictModule(
        torch.nn.Sequential(MLP(3, 2, num_cells=[8]), NormalParamExtractor()),
        ["observation"],
        ["loc", "scale"],
    )
    actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
    critic = ValueOperator(MLP(3, 1, num_cells=[8]), ["observation"])
    loss = ClipPPOLoss(actor, critic, functional=False)
    assert not loss.functional
    assert isinstance(loss.actor_network_params, TensorDict), (
        f"actor_network_params is {type(loss.actor_network_params).__name__}: {UPDATE}"
    )
    for name in ("clip_epsilon", "entropy_coeff", "critic_coeff"):
        assert isinstance(getattr(loss, name), float), f"{name} is no longer a float: {UPDATE}"


def test_distribution_checks_follow_torchs_switch_not_an_import():
    import subprocess
    import sys

    import torch.distributions as D

    from rl_core.modules import TanhNormal

    code = (
        "import torch.distributions as D; import rl_core.modules, rl_objectives; "
        "print(D.Distribution._validate_args)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True", UPDATE  # importing the stack left torch's default
    before = D.Distribution._validate_args
    outside = torch.tensor([2.0, 0.0])  # 2.0 is outside TanhNormal's (-1, 1)
    try:
        D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError, match="support"):
            TanhNormal(torch.zeros(2), torch.ones(2)).log_prob(outside)
        TanhNormal(torch.zeros(2), torch.ones(2), validate_args=False).log_prob(outside)
        D.Distribution.set_default_validate_args(False)  # TorchRL's switch, set by hand
        TanhNormal(torch.zeros(2), torch.ones(2)).log_prob(outside)
    finally:
        D.Distribution.set_default_validate_args(before)


def test_klpen_penalises_the_sampled_kl():
    from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor
    from rl_objectives import KLPENPPOLoss

    torch.manual_seed(0)
    net = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["logits"])
    actor = ProbabilisticActor(net, ["logits"], distribution_class=OneHotCategorical)
    loss = KLPENPPOLoss(actor, beta=1.0)
    old_log_prob = torch.tensor([-0.3, -1.2, -0.7, -2.0])
    td = TensorDict(
        observation=torch.randn(4, 3),
        action=torch.eye(2)[[0, 1, 1, 0]],
        action_log_prob=old_log_prob,
        advantage=torch.randn(4, 1),
        batch_size=[4],
    )
    new_log_prob = actor.get_dist(td.clone()).log_prob(td["action"])
    out = loss(td)
    expected = (old_log_prob - new_log_prob).mean()  # no loc/scale/logits read from the batch
    torch.testing.assert_close(out["kl"], expected.detach(), msg=lambda m: f"{m}\n{UPDATE}")
