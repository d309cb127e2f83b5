"""SyncDataCollector (``Collector``): runs a policy in an env in this process and yields ``[*batch, T]`` batches."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_collectors._common import (
    EnvFactory,
    as_device,
    check_positive_int,
    check_schemes,
    check_total_frames,
    done_paths,
    finished,
    load_weights,
    make_env,
    mark_last_truncated,
    module_device,
    policy_on_device,
)
from rl_collectors.base import BaseCollector
from rl_collectors.profiling import ProfileConfig, RolloutProfiler
from rl_collectors.utils import COLLECTOR, TRAJ_IDS, split_trajectories
from rl_collectors.weight_sync import WeightSyncScheme
from rl_collectors.weight_update import VanillaWeightUpdater, WeightUpdaterBase
from rl_core import EnvBase, ExplorationType, set_exploration_type
from rl_core._accel.seam import PolicyCallPlan
from rl_core.envs import TrajectoryWriter


class SyncDataCollector(BaseCollector):
    """Runs a policy in an environment and yields batches of ``frames_per_batch`` transitions.

    ``Collector`` (TorchRL 0.14's name) is the same class.

    Each batch is a TensorDict of batch size ``[*env.batch_size, T]`` with
    ``T = frames_per_batch / env.batch_size.numel()``, in the TED layout of ``env.rollout``.
    Sub-envs that finish are reset (``env.step_and_maybe_reset``) and the collection goes on
    where the previous batch stopped. The policy runs under ``torch.no_grad()`` and
    ``set_exploration_type(exploration_type)``. Transitions are written into a buffer
    allocated at the first step and reused (rl-core's ``TrajectoryWriter``), and the iterator yields a copy
    of it (``return_same_td=True`` yields the buffer itself).

    Args:
        create_env_fn: an ``EnvBase``, or a callable returning one.
        policy: a callable that reads the root TensorDict and writes the action(s) into it
            (a ``TensorDictModule``, an actor), or ``None`` for random actions.
        frames_per_batch: frames per batch, a multiple of the env's batch numel.
        total_frames: stop after this many frames (rounded up to whole batches); ``-1`` never.
        init_random_frames: batches are collected with random actions (``env.rand_action``)
            until this many frames have been collected.
        max_frames_per_traj: truncate episodes after this many steps (a ``StepCounter``).
        reset_at_each_iter: reset the env at the start of every batch.
        split_trajs: yield ``split_trajectories(batch, prefix="collector")``: ``[n_trajs, T]`` with a ``("collector",
            "mask")``.
        exploration_type: the exploration type under which the policy runs.
        device: the default for ``storing_device`` and ``policy_device``.
        storing_device: where batches are stored; defaults to the env's device.
        env_device: the device the env works on; must be the env's own (envs are not moved).
        policy_device: where the policy runs; data moves there and back when it differs from
            the env's device, and the policy is copied there if its weights live elsewhere
            (``update_policy_weights_()`` refreshes the copy).
        postproc: a callable applied to each batch before it is yielded.
        reset_when_done: reset finished sub-envs; ``False`` keeps stepping them.
        replay_buffer: anything with ``extend(td)``: each batch is added to it and the
            iterator yields ``None``.
        extend_buffer: ``True`` extends the buffer with whole batches, ``False`` with one time
            step (``batch[..., t]``) at a time.
        trust_policy: skip the check of the policy's first output.
        compile_policy: ``torch.compile`` the policy (``True`` or a dict of compile options).
        set_truncated: mark the last step of each batch ``truncated`` (and ``done``) for the
            sub-envs not done there, in the batch only: the env's own flags are untouched.
        track_traj_ids: write ``("collector", "traj_ids")``, a trajectory id per frame that
            runs on across batches (on anyway with ``split_trajs``); on by default, as in
            TorchRL. Computed once per batch from its done flags (no per-step cost).
        return_same_td: yield the reused buffer instead of a copy.
        weight_updater: the ``WeightUpdaterBase`` that ``update_policy_weights_`` calls;
            defaults to a ``VanillaWeightUpdater`` of the collector's policy (``None`` when
            the policy has no weights).
        create_env_kwargs: keyword arguments for ``create_env_fn`` (a factory), as TorchRL.
        weight_sync_schemes: ``{model_id: WeightSyncScheme}`` (TorchRL 0.14), instead of a
            ``weight_updater``: ``update_policy_weights_`` sends each model's weights
            (``"policy"``: the given weights or the source policy's; another id: the object
            at that attribute path on the collector) and the running copy receives them.

    Raises:
        ValueError: a frame count is not a positive int, or ``frames_per_batch`` is not a
            multiple of the env's batch numel.
        TypeError: the env factory returns no ``EnvBase``, the replay buffer has no ``extend``,
            or the policy returns no TensorDict.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors import SyncDataCollector
        >>> collector = SyncDataCollector(
        ...     lambda: CountingEnv(max_count=4, batch_size=[2]), None,
        ...     frames_per_batch=10, total_frames=30,
        ... )
        >>> [batch.batch_size for batch in collector]
        [torch.Size([2, 5]), torch.Size([2, 5]), torch.Size([2, 5])]
        >>> collector.shutdown()
    """

    def __init__(
        self,
        create_env_fn: EnvFactory | EnvBase,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        init_random_frames: int = 0,
        max_frames_per_traj: int | None = None,
        reset_at_each_iter: bool = False,
        split_trajs: bool = False,
        exploration_type: ExplorationType = ExplorationType.RANDOM,
        device: torch.device | str | None = None,
        storing_device: torch.device | str | None = None,
        env_device: torch.device | str | None = None,
        policy_device: torch.device | str | None = None,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        reset_when_done: bool = True,
        replay_buffer: Any = None,
        extend_buffer: bool = True,
        trust_policy: bool = False,
        compile_policy: bool | dict[str, Any] = False,
        set_truncated: bool = False,
        track_traj_ids: bool = True,
        return_same_td: bool = False,
        weight_updater: WeightUpdaterBase | None = None,
        weight_sync_schemes: dict[str, WeightSyncScheme] | None = None,
        create_env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        where = type(self).__name__
        check_positive_int(where, "frames_per_batch", frames_per_batch)
        self.total_frames = check_total_frames(where, total_frames)
        self.init_random_frames = check_positive_int(
            where, "init_random_frames", init_random_frames, allow_zero=True
        )
        if replay_buffer is not None and not callable(getattr(replay_buffer, "extend", None)):
            raise TypeError(
                f"{where}: expected replay_buffer to have an extend(td) method, got "
                f"{type(replay_buffer).__name__}."
            )
        self._owns_env = not isinstance(create_env_fn, EnvBase)
        self.env = make_env(where, create_env_fn, max_frames_per_traj, create_env_kwargs)
        env_batch = self.env.batch_size.numel()
        if frames_per_batch % env_batch:
            raise ValueError(
                f"{where}: expected frames_per_batch as a multiple of the env batch numel "
                f"{env_batch} (batch size {tuple(self.env.batch_size)}), got {frames_per_batch}."
            )
        env_device = as_device(env_device)
        if env_device is not None and env_device != self.env.device:
            raise ValueError(
                f"{where}: env_device={env_device} differs from the env's device "
                f"{self.env.device}; build the env on that device in create_env_fn."
            )
        self.frames_per_batch = frames_per_batch
        self.steps = frames_per_batch // env_batch
        device = as_device(device)
        self.storing_device = as_device(storing_device) or device or self.env.device
        self.policy_device = as_device(policy_device) or device
        self.max_frames_per_traj = max_frames_per_traj
        self.reset_at_each_iter = reset_at_each_iter
        self.split_trajs = split_trajs
        self.exploration_type = exploration_type
        self.postproc = postproc
        self.reset_when_done = reset_when_done
        self.replay_buffer = replay_buffer
        self.extend_buffer = extend_buffer
        self.trust_policy = trust_policy
        self.set_truncated = set_truncated
        self.track_traj_ids = track_traj_ids or split_trajs
        self.return_same_td = return_same_td
        self._source_policy = policy
        self.policy = policy_on_device(policy, self.policy_device)
        if self.policy_device is None:
            self.policy_device = module_device(self.policy)
        # An env without a device works on CPU tensors.
        self._env_device = self.env.device or torch.device("cpu")
        self._cast = self.policy_device is not None and self.policy_device != self._env_device
        self._call = self.policy
        self._plan: PolicyCallPlan | None = None  # built per batch (see _collect)
        if compile_policy and policy is not None:
            options = compile_policy if isinstance(compile_policy, dict) else {}
            self._call = torch.compile(self.policy, **options)
        self._checked = trust_policy or policy is None
        self.weight_sync_schemes = check_schemes(where, weight_sync_schemes, weight_updater)
        for model_id, scheme in self.weight_sync_schemes.items():
            # Both sides live here: the source policy sends, the running copy receives.
            sender = self._source_policy if model_id == "policy" else None
            scheme.init_on_sender(model_id=model_id, model=sender, context=self)
            scheme.init_on_receiver(model_id=model_id, context=self)
        if self.weight_sync_schemes:
            self.weight_updater = None
        else:
            self.weight_updater = weight_updater or self._default_weight_updater()
        if self.weight_updater is not None:
            self.weight_updater.register_collector(self)
        self._done_paths = done_paths(self.env)
        # (key, shape) of each action entry whose spec has one shape (not a lazy stack of
        # specs of different shapes, marked -1): checked in the first output and per batch.
        self._action_shapes = [
            (key, self.env.full_action_spec[key].shape)
            for key in self.env.action_keys
            if all(size >= 0 for size in self.env.full_action_spec[key].shape)
        ]
        self._writer = TrajectoryWriter(self.steps, device=self.storing_device)
        self._carrier: TensorDictBase | None = None
        self._traj_ids: torch.Tensor | None = None
        self._next_traj_id = 0
        self._frames = 0
        self._iter = 0
        self._iterator: Iterator | None = None
        self.policy_version = 0
        self._profiler: RolloutProfiler | None = None
        self._closed = False

    # ------------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[TensorDictBase | None]:
        while self.total_frames < 0 or self._frames < self.total_frames:
            batch = self.rollout()
            if self.replay_buffer is not None:
                self._extend(batch)
                yield None
            else:
                yield batch

    def _extend(self, batch: TensorDictBase) -> None:
        if self.extend_buffer:
            self.replay_buffer.extend(batch)
            return
        for step in batch.unbind(batch.batch_dims - 1):
            self.replay_buffer.extend(step)

    def rollout(self) -> TensorDictBase:
        """Collects one batch and counts its frames (whatever ``total_frames`` says)."""
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.rollout: the collector was shut down.")
        if self.reset_at_each_iter or self._carrier is None:
            self._start()
        random = self._frames < self.init_random_frames
        try:
            with self._profiler.rollout() if self._profiler else contextlib.nullcontext():
                batch = self._collect(random)
        except BaseException:
            # The env stepped on past the carried TensorDict: continuing from it would pair a
            # stale observation with a newer next observation. Start the next batch from a
            # reset instead (the interrupted episodes end there, with new trajectory ids).
            self._carrier = None
            raise
        self._frames += self.frames_per_batch
        self._iter += 1
        if not self.return_same_td or self.split_trajs:
            batch = batch.clone()
        if self.set_truncated:
            mark_last_truncated(batch, self._done_paths)
        if self.split_trajs:
            batch = split_trajectories(batch, prefix=COLLECTOR)
        if self.postproc is not None:
            batch = self.postproc(batch)
        return batch

    def _start(self) -> None:
        self._carrier = self.env.reset()
        # Every reset starts new trajectories.
        shape = self.env.batch_size
        n = shape.numel()
        self._traj_ids = torch.arange(self._next_traj_id, self._next_traj_id + n).reshape(shape)
        self._next_traj_id += n

    def _collect(self, random: bool) -> TensorDictBase:
        env, writer = self.env, self._writer
        if random or self.policy is None:
            policy = env.rand_action
        else:
            # Built per batch, so a policy changed between batches is planned again.
            self._plan = PolicyCallPlan(self._call)
            policy = self._policy if self._cast or not self._checked else self._plan
        step = env.step_and_maybe_reset if self.reset_when_done else self._step_no_reset
        td = self._carrier
        writer.start()
        with torch.no_grad(), set_exploration_type(self.exploration_type):
            for _ in range(self.steps):
                td, next_root = step(policy(td))
                writer.append(td)
                td = next_root
        self._carrier = td
        batch = writer.result()
        self._check_action_shapes(batch)
        if self.track_traj_ids:
            batch.set(TRAJ_IDS, self._batch_traj_ids(batch).to(batch.device))
        return batch

    def _check_action_shapes(self, batch: TensorDictBase) -> None:
        """One shape compare per action entry and batch: a policy that wrote actions of
        another shape than the spec's (and the writer then stacked them lazily) is named."""
        steps = batch.batch_size[-1]
        env_dims = len(self.env.batch_size)
        for key, spec_shape in self._action_shapes:
            expected = (*spec_shape[:env_dims], steps, *spec_shape[env_dims:])
            try:
                got = tuple(batch.get(key).shape)
            except RuntimeError:  # a lazy stack of actions whose shapes differ
                got = "shapes that differ from step to step"
            if got != expected:
                raise ValueError(
                    f"{type(self).__name__}: expected the policy's {_key_name(key)} of shape "
                    f"{tuple(spec_shape)} (the action spec's) at each step, i.e. {expected} "
                    f"over the batch; got {got}. Fix the policy's output (or the env's "
                    f"action spec)."
                )

    def _policy(self, td: TensorDictBase) -> TensorDictBase:
        if self._cast:
            out = self._plan(td.to(self.policy_device)).to(self._env_device)
        else:
            out = self._plan(td)
        if not self._checked:
            self._check_output(out)
        return out

    def _check_output(self, out: Any) -> None:
        where = type(self).__name__
        if not isinstance(out, TensorDictBase):
            raise TypeError(
                f"{where}: expected the policy to return the TensorDict with the action, got "
                f"{type(out).__name__}. Wrap a plain module in a TensorDictModule."
            )
        missing = [key for key in self.env.action_keys if out.get(key, None) is None]
        if missing:
            raise KeyError(
                f"{where}: the policy's output lacks the action key(s) {missing}; it holds "
                f"{sorted(map(str, out.keys(True, True)))}."
            )
        for key, spec_shape in self._action_shapes:
            got = out.get(key).shape
            if got != spec_shape:
                raise ValueError(
                    f"{where}: expected the policy's {_key_name(key)} of shape "
                    f"{tuple(spec_shape)} (the action spec's), got {tuple(got)}. Fix the "
                    f"policy's output (or the env's action spec)."
                )
        self._checked = True

    def _step_no_reset(self, td: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        td = self.env.step(td)
        # The env's precomputed step_mdp (the same result as step_mdp with its keys).
        return td, self.env.step_mdp_plan()(td)

    def _batch_traj_ids(self, batch: TensorDictBase) -> torch.Tensor:
        """The ``[*env.batch_size, T]`` trajectory ids of a batch, from its done flags, in a
        few tensor ops per batch (nothing per step).

        The ids are those of handing out new ids step by step: after each step, every
        sub-env done there gets the next free id (sub-envs in order); until then a sub-env
        keeps the id it carried into the batch.
        """
        shape = self.env.batch_size
        done = finished(batch, self._done_paths, len(shape) + 1).cpu()
        steps = done.shape[-1]
        events = done.reshape(-1, steps).t()  # [T, N], time-major: the order ids are given in
        given = self._next_traj_id - 1 + events.reshape(-1).cumsum(0).reshape(events.shape)
        # Row 0: the ids carried in; row s + 1: the ids given after step s.
        table = torch.cat([self._traj_ids.reshape(1, -1).cpu(), given], 0)
        marks = events * torch.arange(1, steps + 1).unsqueeze(-1)
        # Step t reads the row of the last done step before t (row 0 if none).
        before = torch.cat([torch.zeros_like(marks[:1]), marks[:-1]], 0).cummax(0).values
        ids = table.gather(0, before)
        self._traj_ids = table.gather(0, marks.cummax(0).values[-1:]).reshape(shape)
        self._next_traj_id += int(events.sum())
        return ids.t().reshape(*shape, steps)

    # ------------------------------------------------------------------ control
    def reset(self) -> None:
        """Resets the env; the next batch starts from fresh episodes."""
        self._carrier = None

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds the env; returns the seed for the next one (see ``EnvBase.set_seed``)."""
        return self.env.set_seed(seed, static_seed=static_seed)

    def _default_weight_updater(self) -> VanillaWeightUpdater | None:
        updater = VanillaWeightUpdater.from_policy(self.policy)
        source = self._source_policy
        if updater is not None and self.policy is not source:
            # The collector runs a copy (on policy_device): a push without weights copies the
            # source policy's current ones.
            updater.weight_getter = lambda: TensorDict.from_module(source).data
        return updater

    def _apply_profile(self, config: ProfileConfig, worker_idx: int = 0) -> None:
        """Profiles the next rollouts (the worker processes call it with their index)."""
        self._profiler = RolloutProfiler(config, worker_idx)

    def update_policy_weights_(self, weights: Any = None, *, worker_ids: Any = None) -> None:
        """Updates the collector's policy through its ``weight_updater`` and bumps
        ``policy_version``.

        Args:
            weights: ``None`` copies the weights of the policy passed at construction into
                the collector's copy (when it made one for ``policy_device``); a TensorDict
                (``TensorDict.from_module(policy)``), a state dict or a module is loaded in
                place.
            worker_ids: passed on to the weight updater (a single-process collector has one
                worker).
        """
        if self.weight_sync_schemes:
            for model_id, scheme in self.weight_sync_schemes.items():
                scheme.send(weights if model_id == "policy" else None)
                scheme.receive(timeout=0.0)
        elif self.weight_updater is not None:
            self.weight_updater.push_weights(weights, worker_ids=worker_ids)
        elif weights is not None:
            load_weights(f"{type(self).__name__}.update_policy_weights_", self.policy, weights)
        self.policy_version += 1

    def state_dict(self) -> dict[str, Any]:
        """What resumes the run: counters, the running TensorDict, trajectory ids, the policy's
        and env's state dicts and torch's RNG state."""
        return {
            "frames": self._frames,
            "iter": self._iter,
            "policy_version": self.policy_version,
            "carrier": None if self._carrier is None else self._carrier.clone(),
            "traj_ids": self._traj_ids,
            "next_traj_id": self._next_traj_id,
            "policy_state_dict": (
                self.policy.state_dict() if isinstance(self.policy, torch.nn.Module) else None
            ),
            "env_state_dict": self.env.state_dict(),
            "torch_rng_state": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned; the next batch continues that run."""
        self._frames = state["frames"]
        self._iter = state["iter"]
        self.policy_version = state["policy_version"]
        carrier = state["carrier"]
        self._carrier = None if carrier is None else carrier.clone()
        self._traj_ids = state["traj_ids"]
        self._next_traj_id = state["next_traj_id"]
        if state["policy_state_dict"] is not None:
            self.policy.load_state_dict(state["policy_state_dict"])
        self.env.load_state_dict(state["env_state_dict"])
        torch.set_rng_state(state["torch_rng_state"])
        self._iterator = None

    def shutdown(self) -> None:
        """Closes the env if the collector built it; later batches raise."""
        if not self._closed and self._owns_env:
            self.env.close()
        self._closed = True

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(env={type(self.env).__name__}, "
            f"frames_per_batch={self.frames_per_batch}, total_frames={self.total_frames}, "
            f"frames={self._frames})"
        )


def _key_name(key: Any) -> str:
    return repr(key) if isinstance(key, str) else repr(tuple(key))


Collector = SyncDataCollector

__all__ = ["Collector", "SyncDataCollector"]
