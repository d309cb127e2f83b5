import pytest
import torch

from rl_core.envs import EnvBase
from rl_core.specs import Unbounded
from rl_envs._accel.seam import numpy_stepper
from rl_envs._accel.worker_gym import GymDirectStep
from rl_envs.batched import ParallelEnv, SerialEnv
from rl_envs.batched._worker_transport import numpy_stepper_of
from rl_envs.libs import GymEnv, default_info_dict_reader

pytest.importorskip("gymnasium")

STEP = [("observation",), ("reward",), ("done",), ("terminated",), ("truncated",)]
RESET = [("observation",), ("done",), ("terminated",), ("truncated",)]


def _paths():
    return {"sent": [("action",)], "step_outputs": STEP, "reset_outputs": RESET}


def _leaves(env: EnvBase) -> dict[str, list[torch.Tensor]]:
    specs = {
        **{k: env.full_observation_spec[k] for k in env.observation_keys},
        **{k: env.full_reward_spec[k] for k in env.reward_keys},
        **{k: env.full_done_spec[k] for k in env.done_keys},
        **{k: env.full_action_spec[k] for k in env.action_keys},
    }
    return {name: [specs[p[0]].zero() for p in paths] for name, paths in _paths().items()}


def _cartpole(kind: str) -> EnvBase:
    if kind == "single":
        return GymEnv("CartPole-v1")
    if kind == "vector":
        return GymEnv("CartPole-v1", num_envs=3)
    return SerialEnv(3, lambda: GymEnv("CartPole-v1"))


@pytest.mark.parametrize("kind", ["single", "vector", "serial"])
def test_direct_steps_match_step_and_maybe_reset(kind):
    direct_env, generic = _cartpole(kind), _cartpole(kind)
    leaves = _leaves(direct_env)
    direct = GymDirectStep.build(direct_env, numpy_stepper_of(direct_env), _paths(), leaves)
    assert direct is not None
    direct_env.set_seed(3)
    generic.set_seed(3)
    root = generic.reset()
    assert (direct_env.reset() == root).all()
    torch.manual_seed(0)
    finished_steps = 0
    for _ in range(60):
        action = generic.rand_action()["action"]
        leaves["sent"][0].copy_(action)
        finished = direct.step(reset=True)
        td, root = generic.step_and_maybe_reset(root.set("action", action))
        for path, leaf in zip(STEP, leaves["step_outputs"]):
            assert torch.equal(leaf, td.get(("next", *path))), path
        expected_row = leaves["reset_outputs"] if finished else leaves["step_outputs"]
        row = dict(zip(RESET if finished else STEP, expected_row))
        for path in RESET:
            assert torch.equal(row[path], root.get(path)), path
        finished_steps += finished
    assert finished_steps > 0
    # Without reset, a finished env is left as it is.
    while not direct.step(reset=False) and not leaves["step_outputs"][2].any():
        pass
    assert leaves["step_outputs"][2].any()


def test_the_direct_path_applies_only_to_plain_gym_envs():
    env = GymEnv("CartPole-v1")
    assert numpy_stepper_of(env) is numpy_stepper(env) is not None
    assert numpy_stepper_of(SerialEnv(2, lambda: GymEnv("CartPole-v1"))) is not None
    assert numpy_stepper_of(SerialEnv(2, lambda: GymEnv("CartPole-v1"), vectorize=False)) is None

    class Custom(GymEnv):
        def _step(self, tensordict):
            return super()._step(tensordict)

    assert numpy_stepper_of(Custom("CartPole-v1")) is None
    with_info = GymEnv("CartPole-v1")
    reader = default_info_dict_reader(["steps"], spec=[Unbounded(shape=(), dtype=torch.int64)])
    direct = GymDirectStep.build(
        with_info, numpy_stepper_of(with_info), _paths(), _leaves(with_info)
    )
    assert direct.usable()
    with_info.set_info_dict_reader(reader)
    assert not direct.usable()  # built before the reader: it stops
    assert (
        GymDirectStep.build(with_info, numpy_stepper_of(with_info), _paths(), _leaves(with_info))
        is None
    )
    state_paths = {**_paths(), "sent": [("action",), ("state",)]}
    assert GymDirectStep.build(env, numpy_stepper_of(env), state_paths, _leaves(env)) is None


def _serial_cartpoles():
    return SerialEnv(3, lambda: GymEnv("CartPole-v1"))


@pytest.mark.parametrize("steps_per_call", ["fused", "step"])
def test_parallel_serial_gym_envs_match_serial_env(steps_per_call):
    parallel = ParallelEnv(2, _serial_cartpoles)
    serial = SerialEnv(2, _serial_cartpoles)
    try:
        torch.manual_seed(0)
        actions = [parallel.rand_action() for _ in range(40)]
        trajectories = []
        for env in (parallel, serial):
            env.set_seed(0)
            replay = iter(actions)

            def policy(td, replay=replay):
                return td.update(next(replay))

            trajectories.append(
                env.rollout(40, policy, break_when_any_done=steps_per_call == "step")
            )
        a, b = trajectories
        assert a["next", "done"].any()
        assert (a == b).all()
        # A partial reset after direct steps starts from the root the workers left.
        root = a[..., -1].get("next").select(*serial.observation_keys, *serial.done_keys)
        root.set("_reset", torch.tensor([[True] * 3, [False] * 3]).unsqueeze(-1))
        out = parallel.reset(root.clone())
        assert torch.equal(out["observation"][1], root["observation"][1])
    finally:
        parallel.close()
