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
    "rl_core.tensordict_access",
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
