"""DreamerV3's policy for discrete actions: :class:`DreamerV3DiscreteActor`."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey, unravel_key
from torch.distributions import OneHotCategoricalStraightThrough

from rl_core import ExplorationType, exploration_type
from rl_objectives.modules.dreamer_v3_nets import DreamerV3MLP

__all__ = ["DreamerV3DiscreteActor", "DreamerV3SeededPolicy"]


class DreamerV3DiscreteActor(TensorDictModuleBase):
    """A one-hot categorical policy over the latent ``[belief, state]`` (Hafner et al. 2023).

    A :class:`DreamerV3MLP` (output weights scaled by 0.01 at the start) maps the belief
    concatenated before the state to ``out_features`` logits; the probabilities are mixed with
    ``unimix`` of the uniform, ``p = (1 - unimix) * softmax + unimix / out_features``, and the
    written ``logits`` are ``log p``. Calling the actor writes the logits, a one-hot action
    sampled from ``p`` (the most likely one under ``ExplorationType.DETERMINISTIC`` or
    ``MODE``) and its log-probability. :meth:`get_dist` returns the distribution with
    straight-through ``rsample`` for gradients through the action.

    Args:
        in_features: the belief's plus the state's size.
        out_features: the number of actions.

    Keyword Args:
        depth: hidden layers, >= 1. Defaults to 3.
        num_cells: hidden width. Defaults to 1024.
        norm_eps: the RMS norm's epsilon. Defaults to 1e-4.
        unimix: uniform share in ``[0, 1)``. Defaults to 0.01.
        in_keys: the state and the belief, in that order. Defaults to ``["state", "belief"]``.
        action_key: where the one-hot action goes. Defaults to ``"action"``.
        logits_key: where the logits go. Defaults to ``"logits"``.
        log_prob_key: where the action's log-probability goes. Defaults to
            ``"action_log_prob"``.
        device: device of the parameters.

    Raises:
        ValueError: ``unimix`` outside ``[0, 1)``, ``depth`` < 1, or not two in_keys.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.modules import DreamerV3DiscreteActor
        >>> actor = DreamerV3DiscreteActor(12, 3, depth=1, num_cells=16)
        >>> td = actor(TensorDict(state=torch.randn(4, 8), belief=torch.randn(4, 4), batch_size=[4]))
        >>> td["action"].shape, td["action"].sum(-1).tolist(), td["action_log_prob"].shape
        (torch.Size([4, 3]), [1.0, 1.0, 1.0, 1.0], torch.Size([4]))
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        depth: int = 3,
        num_cells: int = 1024,
        norm_eps: float = 1e-4,
        unimix: float = 0.01,
        in_keys: Sequence[NestedKey] | None = None,
        action_key: NestedKey = "action",
        logits_key: NestedKey = "logits",
        log_prob_key: NestedKey = "action_log_prob",
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        where = "DreamerV3DiscreteActor"
        if not 0.0 <= unimix < 1.0:
            raise ValueError(f"{where}: expected unimix in [0, 1), got {unimix!r}.")
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise ValueError(f"{where}: expected depth as an int >= 1, got {depth!r}.")
        in_keys = ["state", "belief"] if in_keys is None else list(in_keys)
        if len(in_keys) != 2:
            raise ValueError(
                f"{where}: expected two in_keys (the state, then the belief), got {in_keys}."
            )
        self.net = DreamerV3MLP(
            in_features, out_features, depth, num_cells, outscale=0.01, norm_eps=norm_eps,
            device=device,
        )  # fmt: skip
        self.unimix = float(unimix)
        self.in_keys = [unravel_key(k) for k in in_keys]
        self.action_key = unravel_key(action_key)
        self.logits_key = unravel_key(logits_key)
        self.log_prob_key = unravel_key(log_prob_key)
        self.out_keys = [self.logits_key, self.action_key, self.log_prob_key]

    def _logits(self, tensordict: TensorDictBase) -> torch.Tensor:
        state, belief = (tensordict.get(key) for key in self.in_keys)
        logits = self.net(belief, state).float()
        probs = torch.softmax(logits, -1)
        if self.unimix:
            probs = (1 - self.unimix) * probs + self.unimix / probs.shape[-1]
        return probs.log()

    def get_dist(self, tensordict: TensorDictBase) -> OneHotCategoricalStraightThrough:
        """The action distribution (one-hot, straight-through ``rsample``)."""
        return OneHotCategoricalStraightThrough(logits=self._logits(tensordict))

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Writes ``logits``, the one-hot ``action`` and its ``action_log_prob``."""
        logits = self._logits(tensordict)
        dist = OneHotCategoricalStraightThrough(logits=logits)
        if exploration_type() in (ExplorationType.DETERMINISTIC, ExplorationType.MODE):
            action = torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1])
            action = action.to(logits.dtype)
        else:
            action = dist.sample()
        tensordict.set(self.logits_key, logits)
        tensordict.set(self.action_key, action)
        tensordict.set(self.log_prob_key, dist.log_prob(action))
        return tensordict


class DreamerV3SeededPolicy(TensorDictModuleBase):
    """Runs a policy on a random stream of its own that checkpoints with it.

    Call ``n`` (counting from 0) runs ``module`` with torch's generator seeded from
    ``(seed, n)`` and the caller's generator state restored afterwards, so the policy's
    samples depend only on the seed and the number of calls, not on other uses of torch's
    random numbers; ``seed`` and the call count are saved in ``state_dict`` (``extra_state``),
    so a restored policy draws what the saved one would have.

    Args:
        module: the policy (a TensorDict module with ``in_keys``/``out_keys``).
        seed: the stream's seed, an int >= 0.

    Raises:
        TypeError: ``module`` is not a TensorDict module.
        ValueError: ``seed`` is not an int >= 0.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.modules import DreamerV3DiscreteActor, DreamerV3SeededPolicy
        >>> policy = DreamerV3SeededPolicy(DreamerV3DiscreteActor(6, 3, depth=1, num_cells=8), seed=7)
        >>> data = TensorDict(state=torch.zeros(2, 4), belief=torch.zeros(2, 2), batch_size=[2])
        >>> _ = policy(data.clone())
        >>> saved = policy.state_dict()
        >>> expected = policy(data.clone())["action"]
        >>> _ = policy.load_state_dict(saved)
        >>> torch.equal(policy(data.clone())["action"], expected)
        True
    """

    def __init__(self, module: TensorDictModuleBase, seed: int) -> None:
        super().__init__()
        if not hasattr(module, "in_keys") or not hasattr(module, "out_keys"):
            raise TypeError(
                f"DreamerV3SeededPolicy: expected module as a TensorDict module (with in_keys "
                f"and out_keys), got {type(module).__name__}."
            )
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"DreamerV3SeededPolicy: expected seed as an int >= 0, got {seed!r}.")
        self.module = module
        self.in_keys = list(module.in_keys)
        self.out_keys = list(module.out_keys)
        self.seed = seed
        self.counter = 0

    def _call_seed(self) -> int:
        # one 63-bit seed per (seed, call): a fixed odd multiplier spreads consecutive calls
        return (self.seed * 0x9E3779B97F4A7C15 + self.counter) % (2**63 - 1)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs ``module`` on the stream's next seed."""
        devices = (
            [tensordict.device] if tensordict.device and tensordict.device.type == "cuda" else []
        )
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self._call_seed())
            out = self.module(tensordict)
        self.counter += 1
        return out

    def get_extra_state(self) -> dict[str, int]:
        return {"seed": self.seed, "counter": self.counter}

    def set_extra_state(self, state: dict[str, int]) -> None:
        self.seed = int(state["seed"])
        self.counter = int(state["counter"])
