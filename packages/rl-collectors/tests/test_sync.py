import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from rl_collectors import Collector, SyncDataCollector, split_trajectories
from rl_core import ExplorationType, StepCounter, TransformedEnv
from rl_core.modules import EGreedyModule
from rl_core.testing import CountingEnv


class RandomBit(nn.Module):
    """A policy drawing its action from the global torch RNG (seeded runs are reproducible)."""

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        shape = td.get("observation").shape
        return td.set("action", torch.randint(0, 2, shape))


class Linear(TensorDictModule):
    """action = 1 when weight * observation + bias > 0.5 (weights decide the output)."""

    def __init__(self) -> None:
        layer = nn.Linear(1, 1)
        nn.init.zeros_(layer.weight)
        nn.init.zeros_(layer.bias)
        super().__init__(
            nn.Sequential(layer, _Threshold()), in_keys=["observation"], out_keys=["action"]
        )


class _Threshold(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x > 0.5).long()


def make_env(batch=(3,)):
    return CountingEnv(max_count=4, start_high=3, batch_size=list(batch))


def generic_loop(env, policy, steps):
    """The oracle: the step-by-step loop of step_and_maybe_reset, stacked at the end."""
    out = []
    td = env.reset()
    with torch.no_grad():
        for _ in range(steps):
            td, nxt = env.step_and_maybe_reset(policy(td))
            out.append(td)
            td = nxt
    return torch.stack(out, -1)


@pytest.mark.parametrize(("steps", "batches"), [(5, 4), (75, 2)])  # T < and > the chunk
def test_batches_match_the_generic_loop(steps, batches):
    env = make_env()
    env.set_seed(3)
    torch.manual_seed(0)
    expected = generic_loop(env, RandomBit(), steps * batches)
    env = make_env()
    env.set_seed(3)
    torch.manual_seed(0)
    collector = SyncDataCollector(
        env, RandomBit(), frames_per_batch=3 * steps, total_frames=3 * steps * batches
    )
    got = torch.cat(list(collector), -1)
    assert got.batch_size == torch.Size([3, steps * batches])
    got = got.exclude("collector")  # the trajectory ids (on by default) are tested apart
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        torch.testing.assert_close(got.get(key), expected.get(key), msg=str(key))


def test_a_step_with_another_structure_keeps_every_entry():
    calls = {"n": 0}

    def policy(td):
        calls["n"] += 1
        td.set("action", torch.ones(3, 1, dtype=torch.int64))
        if calls["n"] == 3:
            td.set("extra", torch.ones(3))
        return td

    collector = SyncDataCollector(make_env(), policy, frames_per_batch=15, trust_policy=True)
    batch = collector.rollout()
    assert batch.batch_size == torch.Size([3, 5])
    assert batch[:, 2].get("extra").tolist() == [1.0, 1.0, 1.0]
    assert batch.get(("next", "observation")).shape == (3, 5, 1)


def test_a_step_with_a_renamed_entry_keeps_every_entry():
    calls = {"n": 0}

    def policy(td):
        calls["n"] += 1
        td.set("action", torch.ones(3, 1, dtype=torch.int64))
        td.set("b" if calls["n"] == 4 else "a", torch.full((3,), float(calls["n"])))
        return td

    batch = SyncDataCollector(make_env(), policy, frames_per_batch=15, trust_policy=True).next()
    assert batch[:, 3].get("b").tolist() == [4.0, 4.0, 4.0]
    assert batch[:, 4].get("a").tolist() == [5.0, 5.0, 5.0]


def test_frame_counts_are_exact():
    collector = Collector(make_env(), None, frames_per_batch=6, total_frames=25)
    sizes = [batch.numel() for batch in collector]
    assert sizes == [6] * 5  # 25 frames rounded up to whole batches
    assert collector._frames == 30
    with pytest.raises(StopIteration):
        collector.next()


def test_trajectory_ids_run_across_batches():
    collector = SyncDataCollector(
        CountingEnv(max_count=4, batch_size=[2]),
        lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)),
        frames_per_batch=6,
        track_traj_ids=True,
    )
    first, second = collector.next(), collector.next()
    ids = torch.cat([first["collector", "traj_ids"], second["collector", "traj_ids"]], -1)
    # Episodes last 4 steps: the first crosses the batch boundary with one id.
    assert ids[0].tolist() == [0, 0, 0, 0, 2, 2]
    assert ids[1].tolist() == [1, 1, 1, 1, 3, 3]
    assert first["collector", "traj_ids"][:, -1].tolist() == [0, 1]
    assert second["collector", "traj_ids"][:, 0].tolist() == [0, 1]
    # On by default, as in TorchRL; off on request.
    assert ("collector", "traj_ids") in SyncDataCollector(
        make_env(), None, frames_per_batch=3
    ).next().keys(True)
    off = SyncDataCollector(make_env(), None, frames_per_batch=3, track_traj_ids=False)
    assert "collector" not in off.next().keys()


def test_split_trajs_cuts_at_batch_ends():
    collector = SyncDataCollector(
        CountingEnv(max_count=4, batch_size=[2]),
        lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)),
        frames_per_batch=12,
        split_trajs=True,
    )
    batch = collector.next()
    assert batch.batch_size == torch.Size([4, 4])
    assert batch["collector", "mask"].sum(-1).tolist() == [4, 2, 4, 2]
    assert batch["next", "observation"][0].squeeze(-1).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_init_random_frames_use_random_actions():
    calls = {"n": 0}

    def policy(td):
        calls["n"] += 1
        return td.set("action", torch.zeros(3, 1, dtype=torch.int64))

    torch.manual_seed(0)
    collector = SyncDataCollector(
        make_env(), policy, frames_per_batch=30, init_random_frames=60, total_frames=90
    )
    batches = list(collector)
    assert calls["n"] == 10  # only the third batch used the policy
    assert batches[0]["action"].float().mean() > 0.2
    assert batches[1]["action"].float().mean() > 0.2
    assert batches[2]["action"].sum() == 0


def test_exploration_is_off_under_deterministic():
    env = make_env()
    greedy = TensorDictModule(
        lambda obs: torch.zeros_like(obs, dtype=torch.int64),
        in_keys=["observation"],
        out_keys=["action"],
    )
    policy = TensorDictSequential(greedy, EGreedyModule(env.action_spec, eps_init=1.0))
    det = SyncDataCollector(
        env, policy, frames_per_batch=60, exploration_type=ExplorationType.DETERMINISTIC
    )
    assert det.next()["action"].sum() == 0
    rand = SyncDataCollector(env, policy, frames_per_batch=60)
    assert rand.next()["action"].sum() > 0


def test_state_dict_resume_gives_the_next_batch():
    # Resets always start at 0: the env keeps no random state outside the TensorDict, so the
    # collector's state dict (with torch's RNG for the policy) is the whole state of the run.
    def build():
        env = CountingEnv(max_count=4, batch_size=[3])
        return SyncDataCollector(env, RandomBit(), frames_per_batch=9, track_traj_ids=True)

    torch.manual_seed(5)
    reference = build()
    reference.next()
    state = reference.state_dict()
    expected = reference.next()
    torch.manual_seed(123)  # the RNG moves on; the state dict brings it back
    resumed = build()
    resumed.load_state_dict(state)
    got = resumed.next()
    assert (got == expected).all()
    assert resumed._frames == 18


def test_set_truncated_marks_the_batch_only():
    collector = SyncDataCollector(
        CountingEnv(max_count=4, batch_size=[2]),
        lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)),
        frames_per_batch=6,
        set_truncated=True,
    )
    batch = collector.next()
    assert batch["next", "truncated"][:, -1].all()
    assert batch["next", "done"][:, -1].all()
    assert not batch["next", "terminated"][:, -1].any()
    # The env carries on from the cut step: its own flags were not touched.
    assert not collector._carrier["done"].any()
    assert collector.next()["next", "observation"][:, 0].squeeze(-1).tolist() == [4.0, 4.0]


def test_max_frames_per_traj_truncates_episodes():
    collector = SyncDataCollector(
        CountingEnv(max_count=100, batch_size=[2]),
        lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)),
        frames_per_batch=14,
        max_frames_per_traj=3,
    )
    batch = collector.next()
    assert batch["next", "step_count"][0].squeeze(-1).tolist() == [1, 2, 3, 1, 2, 3, 1]
    assert batch["next", "truncated"][0].squeeze(-1).tolist() == [0, 0, 1, 0, 0, 1, 0]


def test_reset_at_each_iter_restarts_episodes():
    collector = SyncDataCollector(
        CountingEnv(max_count=100, batch_size=[2]),
        lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)),
        frames_per_batch=4,
        reset_at_each_iter=True,
    )
    for _ in range(2):
        assert collector.next()["observation"][:, 0].sum() == 0


def test_reset_when_done_false_keeps_stepping():
    collector = SyncDataCollector(
        CountingEnv(max_count=2, batch_size=[1]),
        lambda td: td.set("action", torch.ones(1, 1, dtype=torch.int64)),
        frames_per_batch=4,
        reset_when_done=False,
    )
    assert collector.next()["next", "observation"][0].squeeze(-1).tolist() == [1, 2, 3, 4]


def test_replay_buffer_is_extended():
    class ListBuffer:
        def __init__(self):
            self.items = []

        def extend(self, td):
            self.items.append(td)

    buffer = ListBuffer()
    collector = SyncDataCollector(
        make_env(), None, frames_per_batch=6, total_frames=12, replay_buffer=buffer
    )
    assert list(collector) == [None, None]
    assert [td.batch_size for td in buffer.items] == [torch.Size([3, 2])] * 2
    per_step = ListBuffer()
    collector = SyncDataCollector(
        make_env(), None, frames_per_batch=6, replay_buffer=per_step, extend_buffer=False
    )
    collector.next()
    assert [td.batch_size for td in per_step.items] == [torch.Size([3])] * 2


def test_yielded_batches_are_copies_unless_asked():
    collector = SyncDataCollector(make_env(), None, frames_per_batch=6)
    first = collector.next()
    kept = first.clone()
    collector.next()
    assert (first == kept).all()
    same = SyncDataCollector(make_env(), None, frames_per_batch=6, return_same_td=True)
    assert same.next() is same.next()


def test_update_policy_weights_changes_the_output():
    policy = Linear()
    collector = SyncDataCollector(
        CountingEnv(max_count=100, start_high=3, batch_size=[4]), policy, frames_per_batch=8
    )
    assert collector.next()["action"].sum() == 0
    weights = TensorDict.from_module(policy).clone()
    weights["module", "0", "bias"] = torch.ones(1)
    collector.update_policy_weights_(weights)
    assert collector.policy_version == 1
    assert collector.next()["action"].all()
    state = {"module.0.weight": torch.zeros(1, 1), "module.0.bias": -torch.ones(1)}
    collector.update_policy_weights_(state)
    assert collector.next()["action"].sum() == 0


def test_postproc_and_compile_policy():
    collector = SyncDataCollector(
        make_env(), None, frames_per_batch=6, postproc=lambda td: td.set("tag", torch.ones(3, 2))
    )
    assert collector.next()["tag"].shape == (3, 2)
    env = make_env()
    env.set_seed(0)
    expected = SyncDataCollector(env, Linear(), frames_per_batch=6).next()
    env.set_seed(0)
    compiled = SyncDataCollector(
        env, Linear(), frames_per_batch=6, compile_policy={"backend": "eager"}
    )
    assert compiled._call is not compiled.policy
    assert (compiled.next() == expected).all()


def test_split_trajectories_utility_matches_the_collector_output():
    collector = SyncDataCollector(make_env(), None, frames_per_batch=30, track_traj_ids=True)
    batch = collector.next()
    split = split_trajectories(batch)
    mask = split["collector", "mask"]
    assert mask.sum() == 30
    assert (split["next", "observation"][~mask] == 0).all()


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="multiple of the env batch numel 3"):
        SyncDataCollector(make_env(), None, frames_per_batch=10)
    with pytest.raises(ValueError, match="frames_per_batch as an int >= 1"):
        SyncDataCollector(make_env(), None, frames_per_batch=0)
    with pytest.raises(ValueError, match="total_frames as a positive int or -1"):
        SyncDataCollector(make_env(), None, frames_per_batch=3, total_frames=0)
    with pytest.raises(TypeError, match="replay_buffer to have an extend"):
        SyncDataCollector(make_env(), None, frames_per_batch=3, replay_buffer=object())
    with pytest.raises(TypeError, match="EnvBase or a callable returning one"):
        SyncDataCollector(lambda: 3, None, frames_per_batch=3)
    with pytest.raises(TypeError, match="policy to return the TensorDict"):
        SyncDataCollector(make_env(), lambda td: None, frames_per_batch=3).next()
    with pytest.raises(KeyError, match="lacks the action key"):
        SyncDataCollector(make_env(), lambda td: td, frames_per_batch=3).next()
    collector = SyncDataCollector(make_env(), None, frames_per_batch=3)
    collector.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        collector.next()


def test_transformed_env_and_seeding():
    def build():
        env = TransformedEnv(make_env(), StepCounter())
        collector = SyncDataCollector(env, None, frames_per_batch=9)
        assert collector.set_seed(7) == 8
        torch.manual_seed(0)
        return collector.next()

    assert (build() == build()).all()


def _qvalue_policy():
    """A Q-value policy (fast call plan) with epsilon-greedy exploration (generic module)."""
    from rl_core.modules import QValueActor

    torch.manual_seed(7)
    spec = make_env().action_spec
    actor = QValueActor(nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 2)), spec=spec)
    return TensorDictSequential(actor, EGreedyModule(spec, eps_init=0.3, eps_end=0.3))


def _threshold_policy():
    torch.manual_seed(7)
    net = nn.Sequential(nn.Linear(1, 1), _Threshold())
    return TensorDictModule(net, in_keys=["observation"], out_keys=["action"])


@pytest.mark.parametrize("policy_factory", [_qvalue_policy, _threshold_policy])
def test_the_call_plan_gives_the_batches_of_the_generic_call(policy_factory):
    """Oracle: the collector (policy through rl-core's PolicyCallPlan) against the generic
    step-by-step loop calling ``policy(td)``, same seeds, same policy."""
    from rl_core._accel.seam import PolicyCallPlan

    policy = policy_factory()
    assert PolicyCallPlan(policy).fast
    env = make_env()
    env.set_seed(3)
    torch.manual_seed(0)
    with torch.no_grad():
        expected = generic_loop(env, policy, 40)
    env = make_env()
    env.set_seed(3)
    torch.manual_seed(0)
    collector = SyncDataCollector(env, policy, frames_per_batch=3 * 20, total_frames=3 * 40)
    got = torch.cat(list(collector), -1)
    got = got.exclude("collector")  # the trajectory ids (on by default) are tested apart
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        torch.testing.assert_close(got.get(key), expected.get(key), msg=str(key))


class StatefulCountingEnv(CountingEnv):
    """Keeps its count inside the env, as a simulator does (CountingEnv reads it back from
    the TensorDict): stepping from a stale TensorDict then shows in the data."""

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        out = super()._reset(tensordict, **kwargs)
        self.count = out.get("observation").clone()
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.count = self.count + tensordict.get("action").to(torch.float32)
        return super()._step(tensordict.clone(False).set("observation", self.count - 1))


def test_a_policy_error_mid_batch_leaves_no_inconsistent_transition():
    calls = {"n": 0}

    def policy(td):
        calls["n"] += 1
        if calls["n"] == 7:  # once, in the middle of the second batch
            raise RuntimeError("policy: out of memory, once")
        return td.set("action", torch.ones(2, 1, dtype=torch.int64))

    env = StatefulCountingEnv(max_count=1000, batch_size=[2])
    collector = SyncDataCollector(
        env, policy, frames_per_batch=8, trust_policy=True, track_traj_ids=True
    )
    first = collector.next()
    with pytest.raises(RuntimeError, match="out of memory, once"):
        collector.next()
    after = collector.next()  # the user caught the error and goes on
    for batch in (first, after):
        # Every transition adds the action (1) to the observation: none pairs a stale
        # observation with a later next observation.
        assert (batch["next", "observation"] == batch["observation"] + 1).all()
    # The next batch starts from a reset, with new trajectories.
    assert (after["observation"][:, 0] == 0).all()
    assert after["collector", "traj_ids"][:, 0].tolist() == [2, 3]


def test_a_wrong_action_shape_is_named():
    def wide(td):
        return td.set("action", torch.ones(2, 3, dtype=torch.int64))

    env = CountingEnv(max_count=4, batch_size=[2])
    with pytest.raises(ValueError, match=r"'action' of shape \(2, 1\).*got \(2, 3\)"):
        SyncDataCollector(env, wide, frames_per_batch=8).next()
    # A trusted policy is not checked at its first output, but the batch is (one compare).
    with pytest.raises(
        ValueError, match=r"'action' of shape \(2, 1\).*\(2, 4, 1\).*got \(2, 4, 3\)"
    ):
        SyncDataCollector(env, wide, frames_per_batch=8, trust_policy=True).next()
    calls = {"n": 0}

    def changing(td):  # right at first, then another shape from the second step on
        calls["n"] += 1
        return td.set("action", torch.ones(2, 1 if calls["n"] == 1 else 3, dtype=torch.int64))

    with pytest.raises(ValueError, match=r"'action' .* differ from step to step"):
        SyncDataCollector(env, changing, frames_per_batch=8).next()


def reference_traj_ids(done: torch.Tensor) -> torch.Tensor:
    """Ids handed out step by step: sub-envs start with 0..N-1; after each step, every
    sub-env done there (in order) takes the next free id. ``done``: [N, T]."""
    rows, steps = done.shape
    current, next_id = list(range(rows)), rows
    ids = torch.zeros(rows, steps, dtype=torch.int64)
    for t in range(steps):
        for b in range(rows):
            ids[b, t] = current[b]
        for b in range(rows):
            if done[b, t]:
                current[b], next_id = next_id, next_id + 1
    return ids


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_trajectory_ids_match_the_step_by_step_definition(batch):
    env = CountingEnv(max_count=5, start_high=4, batch_size=list(batch))
    env.set_seed(1)
    torch.manual_seed(1)
    frames = 7 * max(1, torch.Size(batch).numel())
    collector = SyncDataCollector(env, RandomBit(), frames_per_batch=frames, track_traj_ids=True)
    batches = [collector.next() for _ in range(4)]
    data = torch.cat(batches, -1)
    steps = data.batch_size[-1]
    done = data["next", "done"].reshape(-1, steps)
    assert done.any()
    expected = reference_traj_ids(done)
    assert torch.equal(data["collector", "traj_ids"].reshape(-1, steps), expected)


def test_create_env_kwargs_reach_the_factory():
    # TorchRL's create_env_kwargs: CountingEnv(max_count=2) built by the collector
    from functools import partial

    factory = partial(CountingEnv, batch_size=[1])
    collector = SyncDataCollector(
        factory, None, frames_per_batch=6, total_frames=6, create_env_kwargs={"max_count": 2}
    )
    batch = next(iter(collector))
    collector.shutdown()
    assert batch["next", "observation"].max() == 2
    with pytest.raises(TypeError, match=r"create_env_kwargs=.* was given with an env instance"):
        SyncDataCollector(
            CountingEnv(), None, frames_per_batch=2, create_env_kwargs={"max_count": 2}
        )
    with pytest.raises(TypeError, match="expected create_env_kwargs to be a dict"):
        SyncDataCollector(factory, None, frames_per_batch=2, create_env_kwargs=[{"max_count": 2}])
