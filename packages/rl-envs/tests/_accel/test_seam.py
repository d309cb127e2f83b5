"""rl_envs._accel: rl-envs' speed-only code in one private folder behind one seam module."""

import pytest

from rl_envs._accel.seam import GymParts, gym_parts, numpy_stepper, register_gym_parts
from rl_envs.batched import SerialEnv
from rl_envs.libs import GymEnv, GymWrapper

grimp = pytest.importorskip("grimp")  # import-linter's graph (the lint group)


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("rl_envs")


def test_the_speed_folder_imports_no_other_rl_envs_folder(graph):
    # Function-level and TYPE_CHECKING imports included: what a plan needs of a wrapper
    # comes through GymPlanEnv and the registered GymParts.
    for module in graph.find_descendants("rl_envs._accel"):
        imported = graph.find_modules_directly_imported_by(module)
        wrong = sorted(
            m for m in imported if m.startswith("rl_envs") and not m.startswith("rl_envs._accel")
        )
        assert not wrong, f"{module} imports {wrong}"


def test_contract_modules_reach_the_speed_folder_through_the_seam_only(graph):
    private = graph.find_descendants("rl_envs._accel") - {"rl_envs._accel.seam"}
    contract = set(graph.modules) - graph.find_descendants("rl_envs._accel") - {"rl_envs._accel"}
    for module in sorted(contract):
        wrong = sorted(graph.find_modules_directly_imported_by(module) & private)
        assert not wrong, f"{module} imports {wrong}"


def test_the_numpy_row_paths_left_the_public_classes():
    assert not hasattr(GymWrapper, "numpy_stepper")
    assert not hasattr(SerialEnv, "numpy_stepper")
    assert GymWrapper.__bases__[0].__name__ == "EnvBase"
    env = GymEnv("CartPole-v1")
    assert numpy_stepper(env) is env._stepper
    assert gym_parts().wrapper is GymWrapper
    env.close()


def test_register_gym_parts_names_what_it_expected():
    with pytest.raises(TypeError, match=r"register_gym_parts: expected a GymParts, got dict"):
        register_gym_parts({})
    assert GymParts.__dataclass_fields__.keys() == {"wrapper", "make_encoder"}


def test_serial_envs_vector_group_is_speed_code_behind_the_seam():
    vectorized = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
    one_by_one = SerialEnv(2, lambda: GymEnv("CartPole-v1"), vectorize=False)
    try:
        assert vectorized.vectorized
        assert not one_by_one.vectorized
        assert type(vectorized._steps).__module__ == "rl_envs._accel.gym_group"
        assert type(one_by_one._steps).__module__ == "rl_envs.batched._serial_steps"
    finally:
        vectorized.close()
        one_by_one.close()


def test_the_workers_direct_path_is_speed_code_behind_the_seam():
    from rl_envs._accel.seam import GymDirectStep

    assert GymDirectStep.__module__ == "rl_envs._accel.worker_gym"
