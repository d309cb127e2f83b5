"""DreamerEnv: imagined rollouts in the latent space of a Dreamer world model."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core import Transform
from rl_core.envs import EnvBase
from rl_core.keys import NEXT
from rl_core.specs import Composite, Unbounded
from rl_envs.model_based.common import ModelBasedEnvBase

__all__ = ["DreamerEnv", "DreamerDecoder"]

_LATENTS = ("state", "belief")


class DreamerEnv(ModelBasedEnvBase):
    """An env whose states are a Dreamer world model's latents: imagination as an env.

    The observations are the latents ``"state"`` (stochastic, ``prior_shape``) and
    ``"belief"`` (deterministic, ``belief_shape``); ``world_model`` (usually a
    ``WorldModelWrapper`` of rl-objectives' RSSM prior and the reward model) reads
    ``"state"``, ``"belief"`` and the action and writes the next ``"state"``, ``"belief"`` and
    ``"reward"``. Episodes never end (``terminated`` is False) unless the model writes done
    flags.

    ``reset(tensordict)`` starts from the latents in ``tensordict`` (e.g. the posterior states
    of a batch of real sequences) and, unlike other envs, accepts a TensorDict of any batch
    size: imagination runs on that batch (thousands of starts at once, on the model's device),
    and ``rollout(..., auto_reset=False, tensordict=start)`` returns ``[*batch, T]``. Without
    latents, ``reset`` starts from zeros of ``batch_size``. Transforms (``TransformedEnv``)
    and ``rollout`` work as with any env.

    The action, reward and done specs are set by :meth:`set_specs_from_env` (from the real
    env) or by hand; the observation spec holds only the latents (the real observations are
    not imagined: :meth:`decode_obs` decodes them when an ``obs_decoder`` is given).

    Args:
        world_model: the imagination model (see above).
        prior_shape: the shape of ``"state"`` (``(state_dim,)``).
        belief_shape: the shape of ``"belief"`` (``(rnn_hidden_dim,)``).
        obs_decoder: optional TensorDict module decoding latents into observations.
        device: where the model and the env's tensors live. Defaults to ``"cpu"``.
        batch_size: the batch shape of a reset without latents. Defaults to ``()``.

    Raises:
        ValueError: ``reset`` got a TensorDict of another batch size without both latents.

    Examples:
        A toy world model: one MLP for the next latents, one for the reward (a Dreamer
        world model, e.g. rl-objectives' ``RSSMPrior`` in a ``WorldModelWrapper``, reads and
        writes the same keys).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule, TensorDictSequential
        >>> from rl_core.modules import MLP
        >>> from rl_core.specs import Bounded
        >>> from rl_envs.model_based import DreamerEnv
        >>> class Transition(torch.nn.Module):  # (state, belief, action) -> next (state, belief)
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.net = MLP(4 + 6 + 1, 4 + 6, depth=1, num_cells=8)
        ...     def forward(self, state, belief, action):
        ...         return self.net(state, belief, action).split([4, 6], -1)
        >>> model = TensorDictSequential(
        ...     TensorDictModule(Transition(), ["state", "belief", "action"], ["state", "belief"]),
        ...     TensorDictModule(MLP(10, 1, depth=1, num_cells=8), ["state", "belief"], ["reward"]))
        >>> env = DreamerEnv(model, prior_shape=(4,), belief_shape=(6,))
        >>> env.action_spec = Bounded(-2.0, 2.0, shape=(1,))
        >>> start = TensorDict(state=torch.randn(32, 4), belief=torch.randn(32, 6), batch_size=[32])
        >>> traj = env.rollout(5, auto_reset=False, tensordict=env.reset(start))
        >>> traj.batch_size, traj["next", "reward"].shape
        (torch.Size([32, 5]), torch.Size([32, 5, 1]))
    """

    def __init__(
        self,
        world_model: nn.Module,
        prior_shape: torch.Size | tuple[int, ...],
        belief_shape: torch.Size | tuple[int, ...],
        obs_decoder: nn.Module | None = None,
        device: torch.device | str | int | None = "cpu",
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
    ) -> None:
        super().__init__(world_model, device=device, batch_size=batch_size)
        self.obs_decoder = (
            obs_decoder.to(self.device)
            if obs_decoder is not None and self.device is not None
            else obs_decoder
        )
        self.prior_shape = torch.Size(prior_shape)
        self.belief_shape = torch.Size(belief_shape)
        self._set_latent_specs()
        self.reward_spec = Unbounded(shape=(*self.batch_size, 1), device=self.device)

    def _set_latent_specs(self) -> None:
        batch = tuple(self.batch_size)
        latents = Composite(
            state=Unbounded(shape=(*batch, *self.prior_shape), device=self.device),
            belief=Unbounded(shape=(*batch, *self.belief_shape), device=self.device),
            shape=batch,
            device=self.device,
        )
        self.observation_spec = latents

    def set_specs_from_env(self, env: EnvBase) -> None:
        """Copies the action, reward and done specs of ``env``; the observations stay the
        latents (``"state"`` and ``"belief"``). ``env`` must have this env's ``batch_size``."""
        super().set_specs_from_env(env)
        self.state_spec = Composite(shape=self.batch_size, device=self.device)
        self._set_latent_specs()

    def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        """Starts imagination from the latents in ``tensordict`` (any batch size), or from
        zeros of ``batch_size`` when ``tensordict`` is ``None``."""
        if tensordict is None or tensordict.batch_size == self.batch_size:
            return super().reset(tensordict, **kwargs)
        missing = [key for key in _LATENTS if key not in tensordict.keys()]
        if missing:
            raise ValueError(
                f"DreamerEnv.reset: expected a TensorDict holding the latents {list(_LATENTS)} "
                f"to start from (any batch size), or one of batch size "
                f"{tuple(self.batch_size)}; got batch size {tuple(tensordict.batch_size)} "
                f"without {missing}."
            )
        out = tensordict.exclude(NEXT, *self.reset_keys)
        for key in self.done_keys:
            spec = self.full_done_spec[key]
            feature = spec.shape[len(self.batch_size) :]
            out.set(
                key,
                torch.zeros(
                    (*tensordict.batch_size, *feature), dtype=spec.dtype, device=out.device
                ),
            )
        return out

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes uniformly random actions for the batch of ``tensordict`` (any batch size)."""
        if tensordict is None or tensordict.batch_size == self.batch_size:
            return super().rand_action(tensordict)
        if self.batch_size:
            raise ValueError(
                f"DreamerEnv.rand_action: random actions for a batch other than the env's "
                f"({tuple(self.batch_size)}) need an env built with batch_size=(); got a "
                f"TensorDict of batch size {tuple(tensordict.batch_size)}. Pass a policy."
            )
        for key in self.action_keys:
            tensordict.set(key, self.full_action_spec[key].rand(tensordict.batch_size))
        return tensordict

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        batch = self.batch_size
        if tensordict is not None and all(key in tensordict.keys() for key in _LATENTS):
            return tensordict.select(*_LATENTS).clone()
        return TensorDict(
            state=torch.zeros(*batch, *self.prior_shape, device=self.device),
            belief=torch.zeros(*batch, *self.belief_shape, device=self.device),
            batch_size=batch,
            device=self.device,
        )

    def decode_obs(self, tensordict: TensorDictBase, compute_latents: bool = False) -> Any:
        """Runs ``obs_decoder`` on ``tensordict`` (e.g. an imagined trajectory) and returns
        its output, with the decoded observations.

        Args:
            tensordict: holds the latents the decoder reads.
            compute_latents: first run the world model on ``tensordict`` (to get the next
                latents from the actions).

        Raises:
            ValueError: the env was built without an ``obs_decoder``.
        """
        if self.obs_decoder is None:
            raise ValueError(
                "DreamerEnv.decode_obs: the env has no obs_decoder; build it with "
                "DreamerEnv(..., obs_decoder=TensorDictModule(ObsDecoder(...), ...))."
            )
        if compute_latents:
            tensordict = self.world_model(tensordict)
        return self.obs_decoder(tensordict)


class DreamerDecoder(Transform):
    """Adds the decoded observations to a :class:`DreamerEnv`'s steps and resets.

    At each step and reset, the ``obs_decoder`` of the ``DreamerEnv`` below this transform
    reads the latents and writes its reconstructions (e.g. ``"reco_pixels"``) beside them,
    so that an imagined rollout can be looked at. The specs are left as they are.

    Raises:
        ValueError: (at a step or reset) no ``DreamerEnv`` with an ``obs_decoder`` below the
            transform.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core import TransformedEnv
        >>> from rl_core.specs import Bounded
        >>> from rl_envs.model_based import DreamerDecoder, DreamerEnv
        >>> model = TensorDictModule(lambda s, b, a: (s + a, b, -s), ["state", "belief", "action"],
        ...                          ["state", "belief", "reward"])
        >>> decoder = TensorDictModule(lambda s, b: 2 * s, ["state", "belief"], ["reco_pixels"])
        >>> env = DreamerEnv(model, prior_shape=(1,), belief_shape=(2,), obs_decoder=decoder)
        >>> env.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        >>> env = TransformedEnv(env, DreamerDecoder())
        >>> traj = env.rollout(3, lambda td: td.set("action", torch.ones(1)))
        >>> traj["next", "reco_pixels"].squeeze(-1).tolist()
        [2.0, 4.0, 6.0]
    """

    def __init__(self) -> None:
        super().__init__()

    def _decoder(self) -> nn.Module:
        env = self.parent
        while env is not None and getattr(env, "obs_decoder", None) is None:
            inner = getattr(env, "base_env", None)
            env = None if inner is env else inner  # a plain env's base_env is itself
        if env is None:
            raise ValueError(
                "DreamerDecoder: expected a DreamerEnv built with an obs_decoder below this "
                "transform (DreamerEnv(..., obs_decoder=TensorDictModule(...)))."
            )
        return env.obs_decoder

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self._decoder()(tensordict)
        return tensordict if out is None else out

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)
