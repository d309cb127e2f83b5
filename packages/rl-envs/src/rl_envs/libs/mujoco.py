"""MujocoEnv: a base for custom MuJoCo tasks written in MJCF, on the mujoco python bindings."""

from __future__ import annotations

import abc
import atexit
import os
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import (
    ACTION,
    DONE,
    OBSERVATION,
    PIXELS,
    RESET,
    REWARD,
    TERMINATED,
    TRUNCATED,
)
from rl_core.specs import Bounded, Categorical, Composite, Unbounded

_INSTALL = 'pip install "rl-envs[mujoco]"'
QPOS, QVEL, TIME = "qpos", "qvel", "time"
_RENDER_KEYS = ("height", "width", "camera")


def import_mujoco(who: str) -> Any:
    try:
        import mujoco
    except ImportError as err:
        raise ImportError(f"{who} needs the mujoco bindings: {_INSTALL}") from err
    return mujoco


def _positive_int(value: Any, name: str, who: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{who}: expected {name} to be an int >= 1, got {value!r}.")
    return value


class MujocoEnv(EnvBase):
    """A batch of ``num_envs`` copies of a custom MuJoCo task (MJCF), stepped on the CPU.

    A subclass names its model and implements the task:

    - the model: the class attribute ``XML_PATH`` (an MJCF file) or ``XML`` (MJCF text), or
      the ``xml_path`` argument, which wins;
    - ``_compute_reward(state, action, next_state) -> (num_envs, 1)`` and
      ``_compute_done(state, next_state) -> (num_envs, 1)`` bool (``terminated``);
    - optionally ``_make_obs(state)`` with ``_make_obs_spec()`` (default: the
      ``"observation"`` ``cat(qpos[SKIP_QPOS:], qvel)``), ``_sample_initial_state(n,
      tensordict)`` (default: ``qpos0`` and zero velocities plus uniform noise of
      ``reset_noise_scale``) and ``_prepare_ctrl(action)`` (default: the action is the
      actuators' ``ctrl``).

    ``state`` and ``next_state`` are TensorDicts ``[num_envs]`` with ``"qpos"``, ``"qvel"``
    (float64, MuJoCo's) and ``"time"``, read before and after the ``frame_skip`` physics
    steps of an action. Each env has its own ``mujoco.MjData``; a ``"_reset"`` mask resets
    only the marked envs. The action spec is ``Bounded`` by the actuators' ``ctrlrange``
    (``[-1, 1]`` for actuators without one); actions, observations and rewards have
    ``dtype``. Episodes are ``truncated`` after ``max_episode_steps`` steps.

    Pixels: with ``from_pixels``, every env's frame (uint8 ``(height, width, 3)``, rendered by
    one ``mujoco.Renderer`` from ``render_kwargs["camera"]``) goes under ``"pixels"``
    (``(num_envs, height, width, 3)``); ``pixels_only`` drops the state observations.
    Rendering without a display needs ``MUJOCO_GL=egl`` (Mesa renders in software on a
    CPU-only machine) or ``MUJOCO_GL=osmesa`` set before mujoco is first imported.

    Seeding: ``seed=`` or ``set_seed(seed)`` seeds the ``torch.Generator`` (``self.rng``)
    that initial states are drawn from.

    Keyword Args:
        xml_path: the MJCF file (overrides ``XML_PATH``/``XML``).
        backend: the physics engine; only ``"mujoco"`` (the C library through its python
            bindings) is available here. Defaults to ``"mujoco"``.
        num_envs: the batch size; the env's ``batch_size`` is ``(num_envs,)``. Defaults to 1.
        device: where the output tensors live. Defaults to ``None`` (the CPU).
        seed: seed of the initial-state generator. Defaults to ``None`` (unseeded).
        frame_skip: physics steps per action. Defaults to ``FRAME_SKIP`` (5).
        reset_noise_scale: half-width of the initial-state noise. Defaults to
            ``RESET_NOISE_SCALE`` (0.01).
        max_episode_steps: truncation horizon. Defaults to 1000.
        dtype: floating dtype of actions, observations and rewards. Defaults to float32.
        from_pixels: add rendered frames under ``"pixels"``. Defaults to ``False``.
        pixels_only: with ``from_pixels``, drop the state observations. Defaults to ``False``
            (TorchRL's default: frames and states).
        render_kwargs: ``height`` and ``width`` of the frames (at most the model's offscreen
            buffer, 480 x 640 unless its ``<visual><global>`` says otherwise) and ``camera``
            (a camera's name or id, or -1 for the free camera). Defaults to 240 x 320 from
            camera 0, or from the free camera when the model has no camera.

    Raises:
        ImportError: the mujoco bindings are not installed.
        ValueError: no model, a model that does not compile, an unknown ``backend``, or a bad
            ``num_envs``/``frame_skip``/``max_episode_steps``/``render_kwargs``, or
            ``pixels_only`` without ``from_pixels``.
        RuntimeError: at the first frame (``reset``), ``from_pixels`` and mujoco cannot render
            (no working ``MUJOCO_GL``).

    Examples:
        >>> from rl_envs.libs import PointMassEnv  # the example task
        >>> env = PointMassEnv(num_envs=3, max_episode_steps=20, seed=0)
        >>> traj = env.rollout(50)
        >>> traj.batch_size, traj["next", "observation"].shape
        (torch.Size([3, 20]), torch.Size([3, 20, 4]))
    """

    XML_PATH: ClassVar[str | Path | None] = None
    XML: ClassVar[str | None] = None
    FRAME_SKIP: ClassVar[int] = 5
    RESET_NOISE_SCALE: ClassVar[float] = 0.01
    SKIP_QPOS: ClassVar[int] = 0

    def __init__(
        self,
        *,
        xml_path: str | Path | None = None,
        backend: str = "mujoco",
        num_envs: int = 1,
        device: torch.device | str | int | None = None,
        seed: int | None = None,
        frame_skip: int | None = None,
        reset_noise_scale: float | None = None,
        max_episode_steps: int = 1000,
        dtype: torch.dtype = torch.float32,
        from_pixels: bool = False,
        pixels_only: bool = False,
        render_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        who = type(self).__name__
        if pixels_only and not from_pixels:
            raise ValueError(
                f"{who}: pixels_only=True drops the state observations for the frames, but "
                f"from_pixels is False; pass from_pixels=True too, or leave pixels_only False."
            )
        mujoco = import_mujoco(who)
        if backend != "mujoco":
            raise ValueError(
                f"{who}: expected backend='mujoco', got {backend!r}; the mujoco-torch and MJX "
                f"backends are not available in rl-envs."
            )
        num_envs = _positive_int(num_envs, "num_envs", who)
        frame_skip = _positive_int(
            self.FRAME_SKIP if frame_skip is None else frame_skip, "frame_skip", who
        )
        max_episode_steps = _positive_int(max_episode_steps, "max_episode_steps", who)
        if not dtype.is_floating_point:
            raise TypeError(f"{who}: expected a floating dtype, got {dtype}.")
        super().__init__(batch_size=(num_envs,), device=device)
        self.model = self._load_model(mujoco, xml_path, who)
        self._mujoco = mujoco
        self._data = [mujoco.MjData(self.model) for _ in range(num_envs)]
        self.num_envs = num_envs
        self.frame_skip = frame_skip
        self.reset_noise_scale = float(
            self.RESET_NOISE_SCALE if reset_noise_scale is None else reset_noise_scale
        )
        self.max_episode_steps = max_episode_steps
        self.dtype = dtype
        self.rng = torch.Generator()
        if seed is not None:
            self.rng.manual_seed(int(seed))
        self._step_count = torch.zeros(num_envs, dtype=torch.int64)
        self.from_pixels = bool(from_pixels)
        self.pixels_only = bool(pixels_only)
        self.render_kwargs = self._check_render_kwargs(render_kwargs, who)
        self._renderer: Any = None  # made at the first frame (see _make_renderer)
        self._make_specs()

    def _load_model(self, mujoco: Any, xml_path: str | Path | None, who: str) -> Any:
        path = xml_path if xml_path is not None else self.XML_PATH
        try:
            if path is not None:
                return mujoco.MjModel.from_xml_path(str(path))
            if self.XML is not None:
                return mujoco.MjModel.from_xml_string(self.XML)
        except ValueError as err:
            raise ValueError(f"{who}: the MJCF model does not compile: {err}") from err
        raise ValueError(
            f"{who}: no model; set the class attribute XML_PATH (an MJCF file) or XML (MJCF "
            f"text), or pass xml_path=..."
        )

    def _check_render_kwargs(self, render_kwargs: Mapping[str, Any] | None, who: str) -> dict:
        kwargs = dict(render_kwargs or {})
        unknown = sorted(set(kwargs) - set(_RENDER_KEYS))
        if unknown:
            raise ValueError(
                f"{who}: unknown render_kwargs {unknown}; expected some of {list(_RENDER_KEYS)}."
            )
        kwargs.setdefault("height", 240)
        kwargs.setdefault("width", 320)
        kwargs.setdefault("camera", 0 if self.model.ncam > 0 else -1)
        for key in ("height", "width"):
            _positive_int(kwargs[key], f"render_kwargs[{key!r}]", who)
        buffer = self.model.vis.global_
        if kwargs["height"] > buffer.offheight or kwargs["width"] > buffer.offwidth:
            raise ValueError(
                f"{who}: render_kwargs height={kwargs['height']}, width={kwargs['width']} exceed "
                f"the model's offscreen buffer ({buffer.offheight} x {buffer.offwidth}); render "
                f"smaller frames or raise <visual><global offheight=... offwidth=.../>."
            )
        camera = kwargs["camera"]
        if isinstance(camera, str):
            found = self._mujoco.mj_name2id(self.model, self._mujoco.mjtObj.mjOBJ_CAMERA, camera)
        else:
            found = camera if isinstance(camera, int) and -1 <= camera < self.model.ncam else -2
        if found < -1 or (isinstance(camera, str) and found == -1):
            raise ValueError(
                f"{who}: render_kwargs camera={camera!r} is not a camera of the model (expected "
                f"a camera name, an id below {self.model.ncam}, or -1 for the free camera)."
            )
        return kwargs

    def _make_renderer(self, who: str) -> Any:
        # Made at the first frame, not in __init__: a ParallelEnv builds one env in the parent
        # to read its specs, and a GL context made there hangs its forked workers (Mesa's
        # threads do not survive the fork).
        mujoco = self._mujoco
        height, width = self.render_kwargs["height"], self.render_kwargs["width"]
        try:
            renderer = mujoco.Renderer(self.model, height=height, width=width)
        except Exception as err:
            gl = os.environ.get("MUJOCO_GL")
            raise RuntimeError(
                f"{who}: from_pixels could not create a mujoco.Renderer ({type(err).__name__}: "
                f"{err}) with MUJOCO_GL={gl!r}. Headless rendering needs MUJOCO_GL=egl (Mesa's "
                f"software EGL on a CPU machine) or MUJOCO_GL=osmesa (needs libOSMesa), set "
                f"before mujoco is first imported; or pass from_pixels=False."
            ) from err
        # Freed with the env, and at exit before mujoco's own atexit hook (registered when the
        # renderer made its GL context) terminates EGL: a renderer freed after that errors.
        self._renderer_finalizer = weakref.finalize(self, renderer.close)
        self._renderer_finalizer.atexit = False
        atexit.register(self._renderer_finalizer)
        return renderer

    def render_pixels(self) -> torch.Tensor:
        """Every env's frame now, uint8 ``(num_envs, height, width, 3)`` (needs
        ``from_pixels``)."""
        if not self.from_pixels:
            raise RuntimeError(
                f"{type(self).__name__}.render_pixels: the env was built without from_pixels; "
                f"pass from_pixels=True."
            )
        if self._renderer is None:
            self._renderer = self._make_renderer(type(self).__name__)
        camera, mujoco = self.render_kwargs["camera"], self._mujoco
        frames = []
        for data in self._data:
            # After mj_step the body poses are those of the step's start: recompute them from
            # qpos so the frame shows the state the observation reports.
            mujoco.mj_forward(self.model, data)
            self._renderer.update_scene(data, camera=camera)
            frames.append(self._renderer.render())
        return torch.from_numpy(np.stack(frames))

    # ------------------------------------------------------------------ the task
    @abc.abstractmethod
    def _compute_reward(
        self, state: TensorDictBase, action: torch.Tensor, next_state: TensorDictBase
    ) -> torch.Tensor:
        """The reward of every env, ``(num_envs, 1)``."""

    @abc.abstractmethod
    def _compute_done(self, state: TensorDictBase, next_state: TensorDictBase) -> torch.Tensor:
        """Whether the task is over (``terminated``) in every env, ``(num_envs, 1)`` bool."""

    def _make_obs(self, state: TensorDictBase) -> torch.Tensor:
        """The ``"observation"``: ``cat(qpos[SKIP_QPOS:], qvel)`` in ``dtype``."""
        return torch.cat([state[QPOS][..., self.SKIP_QPOS :], state[QVEL]], dim=-1).to(self.dtype)

    def _make_obs_spec(self) -> Composite:
        """The observation spec that goes with :meth:`_make_obs`."""
        size = self.model.nq - self.SKIP_QPOS + self.model.nv
        return Composite(
            {OBSERVATION: Unbounded(shape=(self.num_envs, size), dtype=self.dtype)},
            shape=(self.num_envs,),
        )

    def _sample_initial_state(
        self, n: int, tensordict: TensorDictBase | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(qpos, qvel)`` (float64, ``(n, nq)`` and ``(n, nv)``) for ``n`` envs: ``qpos0``
        and zero velocities plus uniform noise in ``[-reset_noise_scale, reset_noise_scale]``."""
        model, scale = self.model, self.reset_noise_scale
        qpos = torch.from_numpy(np.array(model.qpos0)).expand(n, model.nq).clone()
        qvel = torch.zeros(n, model.nv, dtype=torch.float64)
        if scale > 0:
            qpos += torch.empty_like(qpos).uniform_(-scale, scale, generator=self.rng)
            qvel += torch.empty_like(qvel).uniform_(-scale, scale, generator=self.rng)
        return qpos, qvel

    def _prepare_ctrl(self, action: torch.Tensor) -> torch.Tensor:
        """The actuators' ``ctrl`` ``(num_envs, nu)`` for ``action``; the action itself."""
        return action

    # ------------------------------------------------------------------ specs and state
    @property
    def dt(self) -> float:
        """Seconds of simulated time per step (``timestep * frame_skip``)."""
        return float(self.model.opt.timestep) * self.frame_skip

    def _make_specs(self) -> None:
        n, nu = self.num_envs, self.model.nu
        if self.from_pixels and self.pixels_only:
            observation = Composite(shape=(n,))
        else:
            observation = self._make_obs_spec()
        if self.from_pixels:
            height, width = self.render_kwargs["height"], self.render_kwargs["width"]
            observation[PIXELS] = Bounded(0, 255, shape=(n, height, width, 3), dtype=torch.uint8)
        self.observation_spec = observation
        ranges = torch.from_numpy(np.array(self.model.actuator_ctrlrange).reshape(nu, 2))
        limited = torch.from_numpy(np.array(self.model.actuator_ctrllimited, dtype=bool))
        low = torch.where(limited, ranges[:, 0], torch.full((nu,), -1.0, dtype=torch.float64))
        high = torch.where(limited, ranges[:, 1], torch.ones(nu, dtype=torch.float64))
        self.action_spec = Bounded(
            low.expand(n, nu).to(self.dtype),
            high.expand(n, nu).to(self.dtype),
            shape=(n, nu),
            dtype=self.dtype,
        )
        self.reward_spec = Unbounded(shape=(n, 1), dtype=self.dtype)
        flag = Categorical(2, shape=(n, 1), dtype=torch.bool)
        self.done_spec = Composite(
            {DONE: flag, TERMINATED: flag.clone(), TRUNCATED: flag.clone()}, shape=(n,)
        )

    def get_state(self) -> TensorDict:
        """The physics state of every env: ``"qpos"``, ``"qvel"`` (float64) and ``"time"``."""
        return TensorDict(
            {
                QPOS: torch.from_numpy(np.stack([d.qpos for d in self._data])),
                QVEL: torch.from_numpy(np.stack([d.qvel for d in self._data])),
                TIME: torch.tensor([d.time for d in self._data], dtype=torch.float64),
            },
            batch_size=(self.num_envs,),
        )

    # ------------------------------------------------------------------ EnvBase contract
    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self.rng = torch.Generator()
            self.rng.manual_seed(int(seed))

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get(RESET, None)
        rows = (
            range(self.num_envs) if mask is None else mask.reshape(-1).nonzero().flatten().tolist()
        )
        qpos, qvel = self._sample_initial_state(self.num_envs, tensordict)
        mujoco = self._mujoco
        for i in rows:
            data = self._data[i]
            mujoco.mj_resetData(self.model, data)
            data.qpos[:] = qpos[i].numpy()
            data.qvel[:] = qvel[i].numpy()
            mujoco.mj_forward(self.model, data)
            self._step_count[i] = 0
        out = self._observations(self.get_state())
        return TensorDict(out, batch_size=self.batch_size, device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(ACTION).to(self.dtype)
        ctrl = self._prepare_ctrl(action).detach().cpu().to(torch.float64).numpy()
        state = self.get_state()
        mujoco = self._mujoco
        for i, data in enumerate(self._data):
            data.ctrl[:] = ctrl[i]
            mujoco.mj_step(self.model, data, nstep=self.frame_skip)
        next_state = self.get_state()
        self._step_count += 1
        reward = self._compute_reward(state, action, next_state).to(self.dtype)
        terminated = self._compute_done(state, next_state).to(torch.bool)
        out = self._observations(next_state)
        out[REWARD] = reward.reshape(self.num_envs, 1).cpu()
        out[TERMINATED] = terminated.reshape(self.num_envs, 1).cpu()
        out[TRUNCATED] = (self._step_count >= self.max_episode_steps).unsqueeze(-1)
        return TensorDict(out, batch_size=self.batch_size, device=self.device)

    def _observations(self, state: TensorDictBase) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if not (self.from_pixels and self.pixels_only):
            out[OBSERVATION] = self._make_obs(state)
        if self.from_pixels:
            out[PIXELS] = self.render_pixels()
        return out

    def close(self) -> None:
        """Frees the renderer (once)."""
        if self._renderer is not None:
            self._renderer_finalizer()
            atexit.unregister(self._renderer_finalizer)
            self._renderer = None
        super().close()


__all__ = ["MujocoEnv"]
