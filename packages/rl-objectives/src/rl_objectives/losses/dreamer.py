"""Dreamer's losses: :class:`DreamerModelLoss`, :class:`DreamerActorLoss`, :class:`DreamerValueLoss`.

Hafner et al., "Dream to Control: Learning Behaviors by Latent Imagination" (2019),
https://arxiv.org/abs/1912.01603. As TorchRL's, each ``forward`` returns a pair: the TensorDict
of loss terms and a TensorDict for the next loss (the world model's output, then the imagined
trajectory with its ``"lambda_target"``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Real
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor, nn

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.keys import NEXT, NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import ValueEstimators, distance_loss

__all__ = ["DreamerModelLoss", "DreamerActorLoss", "DreamerValueLoss"]


@contextmanager
def _held_out(module: nn.Module) -> Iterator[None]:
    """Runs the block with ``module``'s parameters not requiring grad (restored after), so a
    loss's gradient flows through the module into its inputs but not into its parameters."""
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def _check_weight(owner: str, name: str, value: Any, *, at_most: float = math.inf) -> None:
    """Refuses a weight, clamp or discount that is not a finite number in ``[0, at_most]``."""
    if (
        not isinstance(value, Real)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not 0 <= value <= at_most
    ):
        bound = "" if at_most == math.inf else f", at most {at_most:g}"
        raise ValueError(f"{owner}: expected {name} as a finite number >= 0{bound}, got {value!r}.")


def _check_same_shape(owner: str, entries: list[tuple[str, Tensor]], fix: str) -> None:
    """Refuses entries (``(name, tensor)``) that do not all have the first one's shape."""
    shapes = {name: tuple(value.shape) for name, value in entries}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"{owner}: expected entries of one shape, got {listed}. {fix}")


def _refuse_non_finite(
    owner: str,
    losses: TensorDictBase | dict[str, Tensor],
    sources: Iterable[tuple[str, Tensor | None]],
) -> None:
    """Raises a ValueError when a loss term (or another named value) is NaN or infinite,
    naming the first of ``sources`` (``(description, tensor)``: the inputs, then what the
    networks wrote) that holds a NaN or infinite value.

    Eager calls only (a compiled loss checks nothing): one device sync on the terms' sum, the
    sources are looked at only when a term is not finite.
    """
    if torch.compiler.is_compiling():
        return
    terms = [value.detach() for value in losses.values()]
    if bool(torch.isfinite(torch.stack([t.sum() for t in terms]).sum())):
        return
    bad = [key for key, value in losses.items() if not bool(torch.isfinite(value).all())]
    if not bad:
        return
    for what, value in sources:
        if value is None or not value.is_floating_point():
            continue
        finite = torch.isfinite(value.detach())
        if not bool(finite.all()):
            raise ValueError(
                f"{owner}: {bad} not finite: {what} holds {int((~finite).sum())} NaN or "
                f"infinite value(s) out of {value.numel()}. Drop or clean the data (rl-envs' "
                f"FiniteTensorDictCheck finds the step), or lower the learning rate if a "
                f"network diverged."
            )
    raise ValueError(
        f"{owner}: {bad} not finite although every input and network output is finite (a "
        f"standard deviation of 0, or values too large for the distance). Check the networks' "
        f"outputs."
    )


def _feature_dims(value: Tensor, batch_dims: int) -> tuple[int, ...]:
    return tuple(range(batch_dims, value.ndim))


def _gaussian_kl(
    prior_mean: Tensor, prior_std: Tensor, posterior_mean: Tensor, posterior_std: Tensor
) -> Tensor:
    """``KL(N(posterior) || N(prior))`` per dimension."""
    return (
        torch.log(prior_std / posterior_std)
        + (posterior_std.pow(2) + (prior_mean - posterior_mean).pow(2)) / (2 * prior_std.pow(2))
        - 0.5
    )


def _discounts(gamma: float | Tensor, like: Tensor) -> Tensor:
    """``gamma ** t`` along the time dim (``-2``) of ``like``."""
    steps = torch.arange(like.shape[-2], device=like.device, dtype=like.dtype)
    gamma = torch.as_tensor(gamma, device=like.device, dtype=like.dtype)
    return gamma.pow(steps).unsqueeze(-1).expand_as(like)


class DreamerModelLoss(LossModule):
    """The world-model loss: KL(posterior || prior), observation reconstruction and reward.

    ``world_model`` runs on a shallow copy of the batch in which ``("next", reward)`` is
    renamed ``("next", true_reward)``; it must write (under ``"next"``) the prior and posterior
    parameters, the reconstructed observation and the predicted reward. With ``B`` the batch
    dims of the input (``[batch, time]``):

    - ``loss_model_kl = lambda_kl * mean(max(sum_d KL_d, free_nats))`` (the clamp after the
      mean with ``delayed_clamp``; no sum over ``d`` with ``global_average``);
    - ``loss_model_reco = lambda_reco * mean(sum_features d(obs, reco))``;
    - ``loss_model_reward = lambda_reward * mean(d(true_reward, reward))``,

    ``d`` the ``reco_loss``/``reward_loss`` distance, means over ``B`` (over everything with
    ``global_average``). Each term is a scalar (TorchRL's have shape ``[1]``).

    Args:
        world_model: a TensorDict module, e.g. a :class:`~rl_objectives.modules.WorldModelWrapper`
            of (encoder, :class:`~rl_objectives.modules.RSSMRollout`, decoder) and a reward model.

    Keyword Args:
        lambda_kl: weight of the KL term. Defaults to 1.0.
        lambda_reco: weight of the reconstruction term. Defaults to 1.0.
        lambda_reward: weight of the reward term. Defaults to 1.0.
        reco_loss: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"l2"``.
        reward_loss: the same for the reward. Defaults to ``"l2"``.
        free_nats: the KL's lower clamp. Defaults to 3.
        delayed_clamp: clamp the mean KL instead of each one. Defaults to False.
        global_average: average over every dim instead of summing the feature dims.
            Defaults to False.

    Raises:
        ValueError: a weight or ``free_nats`` that is not a finite number >= 0; (when called)
            the prior's and posterior's parameters, the reconstruction and the observation, or
            the predicted and true rewards of different shapes, or a loss term that is NaN or
            infinite (the message names the first input or world-model output holding a NaN
            or infinite value; eager calls only).

    ``forward`` returns ``(losses, tensordict)``: the three terms, and the world model's
    output (detached).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives import DreamerModelLoss
        >>> class Toy(torch.nn.Module):  # stands in for the encoder/RSSM/decoder pipeline
        ...     def forward(self, obs):
        ...         ones = torch.ones(*obs.shape[:-1], 2)
        ...         return ones, ones, ones, 2 * ones, obs + 1, obs[..., :1]
        >>> model = TensorDictModule(Toy(), [("next", "pixels")], [
        ...     ("next", k) for k in ("prior_mean", "prior_std", "posterior_mean",
        ...                           "posterior_std", "reco_pixels", "reward")])
        >>> td = TensorDict(next=TensorDict(pixels=torch.zeros(4, 5, 3),
        ...                                 reward=torch.zeros(4, 5, 1)), batch_size=[4, 5])
        >>> losses, _ = DreamerModelLoss(model, free_nats=0)(td)
        >>> [round(losses[k].item(), 4) for k in ("loss_model_kl", "loss_model_reco")]
        [1.6137, 3.0]
    """

    @dataclass
    class _AcceptedKeys:
        """Keys read under ``"next"``: ``reward`` (renamed ``true_reward`` before the model
        runs, which writes its prediction at ``reward``), the prior's and posterior's
        ``*_mean``/``*_std``, the observation ``pixels`` and its reconstruction
        ``reco_pixels``."""

        reward: NestedKey = "reward"
        true_reward: NestedKey = "true_reward"
        prior_mean: NestedKey = "prior_mean"
        prior_std: NestedKey = "prior_std"
        posterior_mean: NestedKey = "posterior_mean"
        posterior_std: NestedKey = "posterior_std"
        pixels: NestedKey = "pixels"
        reco_pixels: NestedKey = "reco_pixels"

    def __init__(
        self,
        world_model: nn.Module,
        *,
        lambda_kl: float = 1.0,
        lambda_reco: float = 1.0,
        lambda_reward: float = 1.0,
        reco_loss: str | None = None,
        reward_loss: str | None = None,
        free_nats: int = 3,
        delayed_clamp: bool = False,
        global_average: bool = False,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        for name, value in (
            ("lambda_kl", lambda_kl),
            ("lambda_reco", lambda_reco),
            ("lambda_reward", lambda_reward),
            ("free_nats", free_nats),
        ):
            _check_weight(owner, name, value)
        self.convert_to_functional(world_model, "world_model", functional=False)
        self.reco_loss = C.check_loss_function(owner, reco_loss or "l2")
        self.reward_loss = C.check_loss_function(owner, reward_loss or "l2")
        self.lambda_kl = lambda_kl
        self.lambda_reco = lambda_reco
        self.lambda_reward = lambda_reward
        self.free_nats = free_nats
        self.delayed_clamp = delayed_clamp
        self.global_average = global_average

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [(NEXT, self.tensor_keys.reward), (NEXT, self.tensor_keys.pixels)]

    def kl_loss(
        self, prior_mean: Tensor, prior_std: Tensor, posterior_mean: Tensor, posterior_std: Tensor
    ) -> Tensor:
        """The clamped KL term (before ``lambda_kl``), a scalar."""
        kl = _gaussian_kl(prior_mean, prior_std, posterior_mean, posterior_std)
        if not self.global_average:
            kl = kl.sum(-1)
        if self.delayed_clamp:
            return kl.mean().clamp_min(self.free_nats)
        return kl.clamp_min(self.free_nats).mean()

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self.tensor_keys
        batch_dims = tensordict.batch_dims
        tensordict = tensordict.copy()
        nxt = tensordict.get(NEXT).copy()
        nxt.rename_key_(keys.reward, keys.true_reward)
        tensordict.set(NEXT, nxt)
        tensordict = self.world_model(tensordict)
        nxt = tensordict.get(NEXT)
        owner = type(self).__name__
        written = [
            (f"the world model's ('next', {name!r})", nxt.get(name))
            for name in (
                keys.prior_mean,
                keys.prior_std,
                keys.posterior_mean,
                keys.posterior_std,
                keys.reco_pixels,
                keys.reward,
            )
        ]
        _check_same_shape(
            owner,
            written[:4],
            "The world model writes the prior's and the posterior's mean and std for the same "
            "latent.",
        )
        pixels, true_reward = nxt.get(keys.pixels), nxt.get(keys.true_reward)
        observed = f"the batch's ('next', {keys.pixels!r})"
        rewarded = f"the batch's ('next', {keys.reward!r})"
        _check_same_shape(
            owner,
            [written[4], (observed, pixels)],
            "The reconstruction has the observation's shape.",
        )
        _check_same_shape(
            owner,
            [written[5], (rewarded, true_reward)],
            "The reward head writes one reward per step, shaped like the batch's.",
        )
        kl = self.kl_loss(*(value for _, value in written[:4]))
        reco = distance_loss(nxt.get(keys.reco_pixels), pixels, self.reco_loss)
        reward = distance_loss(nxt.get(keys.reward), true_reward, self.reward_loss)
        if not self.global_average:
            reco = reco.sum(_feature_dims(reco, batch_dims))
            reward = reward.sum(_feature_dims(reward, batch_dims))
        losses = TensorDict(
            loss_model_kl=self.lambda_kl * kl,
            loss_model_reco=self.lambda_reco * reco.mean(),
            loss_model_reward=self.lambda_reward * reward.mean(),
        )
        _refuse_non_finite(
            owner,
            losses,
            [(observed, pixels), (rewarded, true_reward), *written],
        )
        return losses, tensordict.detach()


class _ImaginationActorLoss(C.EstimatorChoice, LossModule):
    """What Dreamer's and DreamerV3's actor losses share: the constructor's checks (``gamma``
    and ``lmbda`` refused, ``imagination_horizon``, ``model_based_env``), the held-out value
    network and env, the TD estimators, and the imagined rollout with its lambda-returns.

    A subclass declares ``_AcceptedKeys`` (with ``belief``, ``reward``, ``value``, ``done`` and
    ``terminated``), sets what else it needs and then calls ``make_value_estimator()``.
    """

    default_value_estimator = ValueEstimators.TDLambda

    def __init__(
        self,
        actor_model: nn.Module,
        value_model: nn.Module,
        model_based_env: Any,
        *,
        imagination_horizon: int,
        discount_loss: bool,
        gamma: float | None,
        lmbda: float | None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        for name, value in (("gamma", gamma), ("lmbda", lmbda)):
            if value is not None:
                raise TypeError(
                    f"{owner}: {name} is not a constructor argument (as in TorchRL); set it "
                    f"with loss.make_value_estimator({name}={value})."
                )
        if (
            not isinstance(imagination_horizon, int)
            or isinstance(imagination_horizon, bool)
            or imagination_horizon < 1
        ):
            raise ValueError(
                f"{owner}: expected imagination_horizon as a positive int, got "
                f"{imagination_horizon!r}."
            )
        if not hasattr(model_based_env, "rollout"):
            raise TypeError(
                f"{owner}: expected model_based_env as an env (a DreamerEnv), got "
                f"{type(model_based_env).__name__}."
            )
        if not isinstance(value_model, nn.Module):
            raise TypeError(
                f"{owner}: expected value_model as a TensorDict module writing the state value, "
                f"got {type(value_model).__name__}."
            )
        self.convert_to_functional(actor_model, "actor_model", functional=False)
        # neither registered: their parameters are not this loss's (they are held out)
        self.__dict__["value_model"] = value_model
        self.__dict__["model_based_env"] = model_based_env
        self.imagination_horizon = imagination_horizon
        self.discount_loss = discount_loss

    def _make_value_estimator(self, value_type: Any, **hyperparams: Any) -> Any:
        if not C.is_estimator(value_type):  # one given is used as it is
            hyperparams.setdefault("skip_existing", True)
        allowed = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
        return C.build_estimator(self, value_type, hyperparams, None, allowed=allowed)

    def _forward_value_estimator_keys(self, **kwargs: Any) -> None:
        C.forward_estimator_keys(self, kwargs)

    def lambda_target(self, reward: Tensor, value: Tensor) -> Tensor:
        """The value estimator's return of ``reward`` and the next ``value`` (``[N, T, 1]``),
        with no episode end."""
        keys = self.tensor_keys
        done = torch.zeros(reward.shape, dtype=torch.bool, device=reward.device)
        data = TensorDict(
            {
                (NEXT, keys.reward): reward,
                (NEXT, keys.value): value,
                (NEXT, keys.done): done,
                (NEXT, keys.terminated): done.clone(),
            },
            batch_size=reward.shape[:-1],
        )
        return self.value_estimator.value_estimate(data)

    def _imagine(
        self, tensordict: TensorDictBase, state_key: NestedKey, **rollout_kwargs: Any
    ) -> tuple[TensorDictBase, Tensor]:
        """Imagines ``imagination_horizon`` steps from the detached, flattened latents
        (``state_key`` and ``belief``) under the actor (exploration RANDOM), values the next
        states, and returns the trajectory (with ``"lambda_target"`` set) and the
        lambda-returns; the env and the value network are held out."""
        keys = self.tensor_keys
        env = self.model_based_env
        self._check_latents(tensordict, (state_key, keys.belief))
        start = tensordict.select(state_key, keys.belief).detach().reshape(-1)
        with _held_out(env), set_exploration_type(ExplorationType.RANDOM):
            start = env.reset(start.copy())
            fake_data = env.rollout(
                self.imagination_horizon,
                self.actor_model,
                auto_reset=False,
                tensordict=start,
                **rollout_kwargs,
            )
            with _held_out(self.value_model):
                next_td = self.value_model(fake_data.get(NEXT).copy())
        reward = fake_data.get((NEXT, keys.reward))
        lambda_target = self.lambda_target(reward, next_td.get(keys.value))
        fake_data.set("lambda_target", lambda_target)
        return fake_data, lambda_target

    def _check_latents(self, tensordict: TensorDictBase, latent_keys: Iterable[NestedKey]) -> None:
        """Refuses a latent whose trailing dims are not those of the imagination env's
        observation spec (the world model and the actor would fail on it, naming nothing)."""
        env = self.model_based_env
        spec = getattr(env, "observation_spec", None)
        if spec is None:
            return
        env_dims = len(getattr(env, "batch_size", ()))
        for key in latent_keys:
            if key not in spec.keys(include_nested=True) or key not in tensordict.keys(True):
                continue
            feature = tuple(spec[key].shape[env_dims:])
            got = tuple(tensordict.get(key).shape)
            if feature and got[len(got) - len(feature) :] != feature:
                raise ValueError(
                    f"{type(self).__name__}: expected the batch's {key!r} to end in the "
                    f"imagination env's latent shape {feature} (its observation spec), got "
                    f"shape {got}."
                )

    def _imagined_sources(
        self, tensordict: TensorDictBase, state_key: NestedKey, fake_data: TensorDictBase
    ) -> list[tuple[str, Tensor | None]]:
        """What a non-finite actor loss may come from: the batch's latents, then the imagined
        trajectory's rewards and values."""
        keys = self.tensor_keys
        return [
            (f"the batch's {state_key!r}", tensordict.get(state_key, None)),
            (f"the batch's {keys.belief!r}", tensordict.get(keys.belief, None)),
            (
                f"the imagined trajectory's ('next', {keys.reward!r}) (model_based_env)",
                fake_data.get((NEXT, keys.reward), None),
            ),
            (
                "the imagined trajectory's 'lambda_target' (value_model)",
                fake_data.get("lambda_target", None),
            ),
        ]


class DreamerActorLoss(_ImaginationActorLoss):
    """The actor loss: minus the (discounted) lambda-returns of imagined trajectories.

    From the latents ``"state"`` and ``belief`` of the batch (detached, flattened to one batch
    dim), ``model_based_env`` (a ``DreamerEnv``) imagines ``imagination_horizon`` steps under
    ``actor_model`` (exploration type RANDOM). ``value_model`` values the imagined next states;
    the lambda-return ``G`` of the imagined rewards (``value_estimator``, TD(lambda) with
    ``gamma=0.99``, ``lmbda=0.95`` by default; no episode ends) is backpropagated through the
    world model and the values into the actions: ``loss_actor = -mean_batch(sum_t w_t G_t)``
    with ``w_t = gamma**t`` when ``discount_loss``, else 1. The world model and the value
    network are held out: they get no gradient from this loss (``loss.parameters()`` are the
    actor's).

    Args:
        actor_model: the policy, writing the action from ``"state"`` and ``"belief"``.
        value_model: writes ``value`` from the latents.
        model_based_env: the imagination env (a ``DreamerEnv``).

    Keyword Args:
        imagination_horizon: imagined steps. Defaults to 15.
        discount_loss: weight step ``t`` by ``gamma**t``. Defaults to True (as TorchRL's
            code; its docstring says False).
        gamma: refused, as in TorchRL: set it with ``make_value_estimator(gamma=...)``.
        lmbda: refused, as in TorchRL: set it with ``make_value_estimator(lmbda=...)``.

    Raises:
        TypeError: ``gamma`` or ``lmbda`` given, ``model_based_env`` is not an env, or
            ``value_model`` is not a module.
        ValueError: ``imagination_horizon`` is not a positive int; (when called) a latent
            whose trailing dims are not the env's latent shape, or a NaN or infinite loss
            (the message names the latent, the imagined reward or the lambda-return holding a
            NaN or infinite value; eager calls only).

    ``forward`` returns ``(losses, fake_data)``: ``loss_actor``, and the imagined trajectory
    (detached, ``[N, imagination_horizon]``) with its ``"lambda_target"`` for
    :class:`DreamerValueLoss`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.envs import EnvBase
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> from rl_objectives import DreamerActorLoss
        >>> class Imagination(EnvBase):  # stands in for a DreamerEnv: state' = state + action
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.observation_spec = Composite(state=Unbounded(shape=(1,)),
        ...                                           belief=Unbounded(shape=(1,)))
        ...         self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        ...     def reset(self, tensordict=None, **kwargs):  # any batch, as DreamerEnv's
        ...         return tensordict
        ...     def _reset(self, tensordict, **kwargs):
        ...         return tensordict
        ...     def _step(self, td):
        ...         state = td["state"] + td["action"]
        ...         return TensorDict(state=state, belief=td["belief"], reward=-state.pow(2),
        ...                           terminated=torch.zeros_like(state, dtype=torch.bool),
        ...                           batch_size=td.batch_size)
        ...     def _set_seed(self, seed):
        ...         pass
        >>> actor = TensorDictModule(torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Tanh()),
        ...                          ["state"], ["action"])
        >>> value = TensorDictModule(torch.nn.Linear(1, 1), ["state"], ["state_value"])
        >>> loss = DreamerActorLoss(actor, value, Imagination(), imagination_horizon=3)
        >>> td = TensorDict(state=torch.randn(2, 5, 1), belief=torch.randn(2, 5, 1), batch_size=[2, 5])
        >>> losses, fake_data = loss(td)
        >>> losses["loss_actor"].backward()  # into the actor, through the imagined steps
        >>> actor.module[0].weight.grad is not None, value.module.weight.grad is None
        (True, True)
        >>> losses["loss_actor"].shape, fake_data["lambda_target"].shape
        (torch.Size([]), torch.Size([10, 3, 1]))
    """

    @dataclass
    class _AcceptedKeys:
        """``belief`` (the latent read beside ``"state"``), ``reward``, ``value``, ``done`` and
        ``terminated`` (the keys of the imagined trajectory)."""

        belief: NestedKey = "belief"
        reward: NestedKey = "reward"
        value: NestedKey = "state_value"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

    def __init__(
        self,
        actor_model: nn.Module,
        value_model: nn.Module,
        model_based_env: Any,
        *,
        imagination_horizon: int = 15,
        discount_loss: bool = True,
        gamma: float | None = None,
        lmbda: float | None = None,
    ) -> None:
        super().__init__(
            actor_model,
            value_model,
            model_based_env,
            imagination_horizon=imagination_horizon,
            discount_loss=discount_loss,
            gamma=gamma,
            lmbda=lmbda,
        )
        self.make_value_estimator()

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return ["state", self.tensor_keys.belief]

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        fake_data, lambda_target = self._imagine(tensordict, "state")
        if self.discount_loss:
            lambda_target = lambda_target * _discounts(self.value_estimator.gamma, lambda_target)
        actor_loss = -lambda_target.sum((-2, -1)).mean()
        losses = TensorDict(loss_actor=actor_loss)
        _refuse_non_finite(
            type(self).__name__, losses, self._imagined_sources(tensordict, "state", fake_data)
        )
        return losses, fake_data.detach()


class _ImaginedValueLoss(LossModule):
    """What Dreamer's and DreamerV3's value losses share: they read ``value_model``'s inputs
    and the ``"lambda_target"`` of an imagined trajectory."""

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [*self._network_in_keys("value_model"), "lambda_target"]

    def _check_target(self, value_name: str, value: Tensor, target: Tensor) -> None:
        _check_same_shape(
            type(self).__name__,
            [(f"value_model's {value_name!r}", value), ("'lambda_target'", target)],
            "lambda_target holds one return per imagined step ([*B, T, 1], as DreamerActorLoss "
            "writes it).",
        )

    def _value_output(self, fake_data: TensorDictBase) -> TensorDictBase:
        """``value_model`` run on its inputs selected from ``fake_data`` (a copy of all of it
        when the model declares no ``in_keys``)."""
        in_keys = getattr(self.value_model, "in_keys", None)
        inputs = fake_data.select(*in_keys, strict=False) if in_keys else fake_data.copy()
        return self.value_model(inputs)


class DreamerValueLoss(_ImaginedValueLoss):
    """The value loss: the value of imagined states regressed on their lambda-returns.

    ``loss_value = mean_batch(sum_t w_t d(V(s_t), G_t))`` over the imagined trajectory of
    :class:`DreamerActorLoss` (its ``"lambda_target"`` ``G``, detached), ``w_t = gamma**t``
    when ``discount_loss``, else 1; ``d`` the ``value_loss`` distance.

    Args:
        value_model: writes ``value`` from the latents.
        value_loss: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"l2"``.
        discount_loss: weight step ``t`` by ``gamma**t``. Defaults to True (as TorchRL's
            code; its docstring says False).
        gamma: the discount of the weights. Defaults to 0.99.

    Raises:
        ValueError: ``gamma`` outside ``[0, 1]``, an unknown ``value_loss``; (when called) a
            value and a ``"lambda_target"`` of different shapes, or a NaN or infinite loss
            (naming ``"lambda_target"`` or the value holding a NaN or infinite value; eager
            calls only).

    ``forward`` returns ``(losses, fake_data)``: ``loss_value`` and the input.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives import DreamerValueLoss
        >>> value = TensorDictModule(torch.nn.Linear(4, 1), ["state"], ["state_value"])
        >>> fake = TensorDict(state=torch.randn(8, 3, 4), lambda_target=torch.randn(8, 3, 1),
        ...                   batch_size=[8, 3])
        >>> DreamerValueLoss(value)(fake)[0]["loss_value"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        """``value``: where ``value_model`` writes the state value."""

        value: NestedKey = "state_value"

    def __init__(
        self,
        value_model: nn.Module,
        value_loss: str | None = None,
        discount_loss: bool = True,
        gamma: float = 0.99,
    ) -> None:
        super().__init__()
        _check_weight(type(self).__name__, "gamma", gamma, at_most=1.0)
        self.convert_to_functional(value_model, "value_model", functional=False)
        self.value_loss = C.check_loss_function(type(self).__name__, value_loss or "l2")
        self.discount_loss = discount_loss
        self.gamma = gamma

    def forward(self, fake_data: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        lambda_target = fake_data.get("lambda_target").detach()
        value = self._value_output(fake_data).get(self.tensor_keys.value)
        self._check_target(self.tensor_keys.value, value, lambda_target)
        error = distance_loss(value, lambda_target, self.value_loss)
        if self.discount_loss:
            error = error * _discounts(self.gamma, error)
        losses = TensorDict(loss_value=error.sum((-2, -1)).mean())
        _refuse_non_finite(
            type(self).__name__,
            losses,
            [
                ("the batch's 'lambda_target'", lambda_target),
                (f"value_model's {self.tensor_keys.value!r}", value),
            ],
        )
        return losses, fake_data
