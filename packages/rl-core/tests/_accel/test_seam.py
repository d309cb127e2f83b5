"""rl_core._accel: one private folder behind one seam, below every contract module."""

import pytest

from rl_core._accel.seam import PolicyClasses, register_policy_classes

grimp = pytest.importorskip("grimp")  # import-linter's graph (the lint group)

CONTRACT = (
    "rl_core.envs",
    "rl_core.transforms",
    "rl_core._transform",
    "rl_core.modules",
    "rl_core.objectives",
    "rl_core.testing",
    "rl_core.ted",
)


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("rl_core")


def test_the_speed_folder_imports_no_contract_module(graph):
    # Function-level and TYPE_CHECKING imports included: what a plan needs of an env, a
    # transform or a module comes through the seam's interfaces and registries.
    for module in graph.find_descendants("rl_core._accel"):
        imported = graph.find_modules_directly_imported_by(module)
        wrong = sorted(m for m in imported if m.startswith(CONTRACT))
        assert not wrong, f"{module} imports {wrong}"


def test_contract_modules_reach_the_speed_folder_through_the_seam_only(graph):
    private = graph.find_descendants("rl_core._accel") - {"rl_core._accel.seam"}
    for package in CONTRACT:
        modules = {package} | graph.find_descendants(package)
        for module in modules:
            wrong = sorted(graph.find_modules_directly_imported_by(module) & private)
            assert not wrong, f"{module} imports {wrong}"


def test_register_policy_classes_names_what_it_expected():
    with pytest.raises(
        TypeError, match=r"register_policy_classes: expected a PolicyClasses, got dict"
    ):
        register_policy_classes({})
    assert PolicyClasses.__dataclass_fields__.keys() >= {"actor", "tanh_normal"}


def test_rl_cores_fusable_declarations_live_in_the_registry_not_in_the_classes():
    from rl_core.transforms import (
        Compose,
        InitTracker,
        StepCounter,
        Transform,
    )

    for kind in (Compose, InitTracker, StepCounter):
        assert "fusable" not in vars(kind), kind
    # The values the classes declared before, read the same way.
    assert InitTracker().fusable
    assert StepCounter().fusable
    assert not StepCounter(max_steps=3).fusable
    assert Compose(InitTracker(), StepCounter()).fusable
    assert not Compose(InitTracker(), StepCounter(max_steps=2)).fusable
    assert not Transform().fusable


def test_a_declared_transform_is_fused_until_a_subclass_overrides_a_step_method():
    from rl_core._accel.seam import declare_fusable, fusable_as_declared
    from rl_core.transforms import Transform

    class Declared(Transform):
        pass

    class Overriding(Declared):
        def _step(self, tensordict, next_tensordict):
            return next_tensordict

    class DeclaredAgain(Overriding):
        pass

    class OwnAttribute(Overriding):
        fusable = True

    assert not fusable_as_declared(Declared())
    declare_fusable(Declared)
    declare_fusable(DeclaredAgain, lambda transform: transform.in_keys == ["a"])
    assert Declared().fusable
    assert fusable_as_declared(Declared())
    # The declaration is inherited, but not honoured over a step method it never covered.
    assert Overriding().fusable
    assert not fusable_as_declared(Overriding())
    assert fusable_as_declared(DeclaredAgain(in_keys=["a"]))
    assert not fusable_as_declared(DeclaredAgain(in_keys=["b"]))
    # A class may still set the attribute itself (rl-envs' transforms do).
    assert fusable_as_declared(OwnAttribute())


def test_declare_fusable_names_what_it_expected():
    from rl_core._accel.seam import declare_fusable

    with pytest.raises(TypeError, match=r"declare_fusable: expected a transform class, got 3"):
        declare_fusable(3)
    with pytest.raises(TypeError, match=r"declare_fusable\(type\): expected rule=True/False"):
        declare_fusable(type, rule="yes")
