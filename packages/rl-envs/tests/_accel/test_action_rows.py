"""``rand_action`` and ``step_and_maybe_reset`` of a GymEnv through its step plan
(``rl_envs._accel.action_rows``, ``gym_plan``): against the reference code (``reference_only``),
with the same torch seeds."""

import sys

import pytest
import torch

from rl_core.envs import reference_only
from rl_core.specs import OneHot, Unbounded
from rl_core.ted import step_mdp
from rl_envs._accel.action_rows import one_hot_rows

gym = pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')

from rl_envs.libs import GymEnv  # noqa: E402


def _draws(env, seed, count):
    torch.manual_seed(seed)
    td = env.reset()
    actions = [env.rand_action(td)["action"] for _ in range(count)]
    return actions, torch.rand(3)  # what the generator gives next: its state after the draws


@pytest.mark.parametrize("num_envs", [0, 3])
def test_rand_action_draws_what_the_spec_draws(num_envs):
    env = GymEnv("CartPole-v1", num_envs=num_envs)
    env.set_seed(0)
    # 150 draws: more than two blocks of rows.
    planned, planned_next = _draws(env, 7, 150)
    with reference_only():
        reference, reference_next = _draws(env, 7, 150)
    for mine, theirs in zip(planned, reference, strict=True):
        assert mine.dtype == theirs.dtype == torch.int64
        assert mine.shape == theirs.shape == env.action_spec.shape
        assert torch.equal(mine, theirs)
    assert torch.equal(planned_next, reference_next)
    # Every action is a row of a block, written once: earlier draws keep their values.
    assert planned[0].untyped_storage().nbytes() > planned[0].nbytes
    assert torch.equal(torch.stack(planned), torch.stack(reference))
    env.close()


def test_a_masked_action_spec_draws_through_the_spec():
    env = GymEnv("CartPole-v1", num_envs=2)
    env.reset()
    env.action_spec.update_mask(torch.tensor([[True, False], [False, True]]))
    for _ in range(5):
        action = env.rand_action(env.reset())["action"]
        assert action.tolist() == [[1, 0], [0, 1]]
    env.close()


def test_one_hot_rows_only_for_a_cpu_one_hot_itself():
    class Drawn(OneHot):
        def rand(self, shape=()):
            return super().rand(shape)

    assert one_hot_rows(OneHot(3)) is not None
    assert one_hot_rows(Drawn(3)) is None
    env = GymEnv("CartPole-v1", categorical_action_encoding=True)
    assert one_hot_rows(env.action_spec) is None
    env.close()


@pytest.mark.parametrize("num_envs", [0, 3])
def test_step_and_maybe_reset_and_step_write_the_rows_in_one_call(num_envs):
    # The route writes the row's outputs under "next" without done completion: traced calls.
    env = GymEnv("CartPole-v1", num_envs=num_envs)
    env.set_seed(0)
    td = env.reset()
    called = set()

    def trace(frame, event, arg):
        if event == "call":
            called.add(frame.f_code.co_name)

    sys.setprofile(trace)
    try:
        for _ in range(40):
            _, td = env.step_and_maybe_reset(env.rand_action(td))
        for _ in range(40):  # env.step, then step_mdp (or a reset) as users write it
            td = env.step(env.rand_action(td))
            td = env.reset() if td["next", "done"].any() else step_mdp(td)
    finally:
        sys.setprofile(None)
    assert "merge_reset_rows" in called  # episodes ended within 40 random steps
    assert not called & {"step_and_reset", "write_step", "complete_done_flags"}
    env.close()


def test_an_info_reader_added_after_the_plan_takes_the_generic_route():
    from rl_envs.libs import default_info_dict_reader

    env = GymEnv("CartPole-v1")
    td = env.reset()
    _, td = env.step_and_maybe_reset(env.rand_action(td))
    reader = default_info_dict_reader(["x"], spec=[Unbounded(shape=(), dtype=torch.int64)])
    env.set_info_dict_reader(reader)
    td = env.reset()
    transition, _ = env.step_and_maybe_reset(env.rand_action(td))
    assert "x" in transition["next"].keys()
    env.close()


@pytest.mark.parametrize("shape", [(7,), (4, 5), (2, 3, 6)])
def test_one_hot_rows_draw_the_values_and_random_state_of_spec_rand(shape):
    spec = OneHot(shape[-1], shape=shape)
    rows = one_hot_rows(spec)
    torch.manual_seed(11)
    drawn = [rows.draw() for _ in range(70)]  # more than one block of 64 rows
    after = torch.rand(4)
    torch.manual_seed(11)
    expected = [spec.rand() for _ in range(70)]
    for mine, theirs in zip(drawn, expected, strict=True):
        assert mine.dtype == theirs.dtype
        assert torch.equal(mine, theirs)
    assert torch.equal(after, torch.rand(4))


def test_a_draw_makes_one_tensor_method_call_and_no_torch_randint():
    # randint's argument parsing costs about 1.5 us of a 3.5 us draw between gymnasium steps:
    # the draw calls random_ on its index buffer (the kernel randint runs) instead.
    rows = one_hot_rows(OneHot(2))
    rows.draw()
    calls = []

    def trace(frame, event, arg):
        if event == "c_call":
            calls.append(arg)

    sys.setprofile(trace)
    try:
        rows.draw()
    finally:
        sys.setprofile(None)
    assert torch.randint not in calls
    assert torch.Tensor.random_ in calls or any(
        getattr(c, "__name__", "") == "random_" for c in calls
    )
