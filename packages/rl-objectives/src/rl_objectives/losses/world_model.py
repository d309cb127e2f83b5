"""Supervised losses of a general world model: :class:`WorldModelLoss`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core.keys import NEXT, NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses.dreamer import _check_weight
from rl_objectives.utils import distance_loss

__all__ = ["WorldModelLoss"]


class WorldModelLoss(LossModule):
    """Regression of a world model's predictions on real transitions.

    The true ``("next", reward)`` (and ``("next", done)``/``("next", terminated)`` for the
    done loss) are moved to ``("next", true_reward)`` (``true_done``, ``true_terminated``)
    before ``world_model`` runs on a shallow copy of the batch, so that its heads write their
    predictions at the usual keys. Each requested term is ``weight * mean(d(prediction,
    target))`` with ``d`` the term's ``"l2"``, ``"l1"`` or ``"smooth_l1"`` distance:

    - ``loss_reward``: ``("next", reward)`` against ``("next", true_reward)``;
    - ``loss_done``: ``("next", done)`` against ``("next", true_done)``, both as floats;
    - ``loss_reconstruction``: ``reconstructed_observation`` against ``observation``;
    - ``loss_latent``: ``predicted_latent`` against ``target_latent`` (for deterministic
      models; a stochastic RSSM is trained by ``DreamerModelLoss``/``DreamerV3ModelLoss``).

    Args:
        world_model: a :class:`~rl_objectives.modules.WorldModel` (or any TensorDict module).

    Keyword Args:
        losses: the terms, a subset of ``["reward", "done", "reconstruction", "latent"]``.
            Defaults to ``["reward"]``.
        reward_loss, done_loss, reconstruction_loss, latent_loss: each term's distance.
            Default ``"l2"``.
        reward_weight, done_weight, reconstruction_weight, latent_weight: each term's
            weight, a finite number >= 0. Default 1.0.

    Raises:
        ValueError: an unknown term or distance, or a weight that is not a finite number
            >= 0.
        KeyError: (when called) a target missing from the batch or a prediction the world
            model did not write.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives import WorldModelLoss
        >>> from rl_objectives.modules import WorldModel
        >>> model = WorldModel(
        ...     TensorDictModule(torch.nn.Linear(8, 4), ["observation"], ["latent"]),
        ...     TensorDictModule(torch.nn.Bilinear(4, 2, 4), ["latent", "action"], [("next", "latent")]),
        ...     TensorDictModule(torch.nn.Linear(4, 1), [("next", "latent")], [("next", "reward")]))
        >>> batch = TensorDict(observation=torch.randn(4, 8), action=torch.randn(4, 2),
        ...                    next=TensorDict(reward=torch.randn(4, 1), batch_size=[4]), batch_size=[4])
        >>> WorldModelLoss(model)(batch)["loss_reward"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        """The predictions (``reward``, ``done``, ``terminated`` under ``"next"``;
        ``reconstructed_observation``, ``predicted_latent``), where the true values go
        (``true_reward``, ``true_done``, ``true_terminated``) and the targets
        (``observation``, ``target_latent``)."""

        reward: NestedKey = "reward"
        true_reward: NestedKey = "true_reward"
        done: NestedKey = "done"
        true_done: NestedKey = "true_done"
        terminated: NestedKey = "terminated"
        true_terminated: NestedKey = "true_terminated"
        observation: NestedKey = "observation"
        reconstructed_observation: NestedKey = "reconstructed_observation"
        predicted_latent: NestedKey = "predicted_latent"
        target_latent: NestedKey = "target_latent"

    _TERMS: ClassVar[tuple[str, ...]] = ("reward", "done", "reconstruction", "latent")

    def __init__(
        self,
        world_model: nn.Module,
        *,
        losses: list[str] | None = None,
        reward_loss: str = "l2",
        done_loss: str = "l2",
        reconstruction_loss: str = "l2",
        latent_loss: str = "l2",
        reward_weight: float = 1.0,
        done_weight: float = 1.0,
        reconstruction_weight: float = 1.0,
        latent_weight: float = 1.0,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        losses = ["reward"] if losses is None else list(losses)
        unknown = [term for term in losses if term not in self._TERMS]
        if unknown or not losses:
            raise ValueError(
                f"{owner}: expected losses as a non-empty subset of {list(self._TERMS)}, got "
                f"{losses!r}."
            )
        self.losses = losses
        self.distances = {
            "reward": C.check_loss_function(owner, reward_loss),
            "done": C.check_loss_function(owner, done_loss),
            "reconstruction": C.check_loss_function(owner, reconstruction_loss),
            "latent": C.check_loss_function(owner, latent_loss),
        }
        self.weights = {
            "reward": reward_weight,
            "done": done_weight,
            "reconstruction": reconstruction_weight,
            "latent": latent_weight,
        }
        for term, weight in self.weights.items():
            _check_weight(owner, f"{term}_weight", weight)
        self.world_model = world_model

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return list(getattr(self.world_model, "in_keys", []))

    def _take(self, tensordict: TensorDictBase, key: NestedKey, what: str) -> object:
        value = tensordict.get(key, None)
        if value is None:
            raise KeyError(
                f"WorldModelLoss: expected {what} at {key!r}, which is missing. Write it there "
                f"or rename the key with set_keys(...)."
            )
        return value

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_<term>`` for each term of ``losses``."""
        keys = self.tensor_keys
        td = tensordict.copy()
        if "reward" in self.losses:
            true = self._take(td, (NEXT, keys.reward), "the true reward")
            td.set((NEXT, keys.true_reward), true)
            td.exclude((NEXT, keys.reward), inplace=True)
        if "done" in self.losses:
            true = self._take(td, (NEXT, keys.done), "the true done flag")
            td.set((NEXT, keys.true_done), true)
            terminated = td.get((NEXT, keys.terminated), None)
            if terminated is not None:
                td.set((NEXT, keys.true_terminated), terminated)
            td.exclude((NEXT, keys.done), (NEXT, keys.terminated), inplace=True)
        td = self.world_model(td)
        pairs = {
            "reward": ((NEXT, keys.reward), (NEXT, keys.true_reward)),
            "done": ((NEXT, keys.done), (NEXT, keys.true_done)),
            "reconstruction": (keys.reconstructed_observation, keys.observation),
            "latent": (keys.predicted_latent, keys.target_latent),
        }
        out = {}
        for term in self.losses:
            pred_key, target_key = pairs[term]
            prediction = self._take(td, pred_key, f"the world model's {term} prediction")
            target = self._take(td, target_key, f"the {term} target")
            if term == "done":
                prediction, target = prediction.float(), target.float()
            value = distance_loss(prediction, target.detach(), self.distances[term]).mean()
            out[f"loss_{term}"] = self.weights[term] * value
        return TensorDict(out)
