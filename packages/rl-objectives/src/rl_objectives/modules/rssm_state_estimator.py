"""DreamerV3's acting-time filter: :class:`RSSMStateEstimatorV3`."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey, unravel_key

from rl_objectives.modules.world_models_v3 import RSSMPosteriorV3, RSSMPriorV3

__all__ = ["RSSMStateEstimatorV3"]

_IN_KEYS = ("state", "belief", "previous_action", "encoded_latents", "is_init")
_OUT_KEYS = ("state", "belief")


class RSSMStateEstimatorV3(TensorDictModuleBase):
    """Updates the latents a DreamerV3 agent acts on from the current encoded observation.

    With the trained prior and posterior: where ``is_init`` is set, the previous state,
    belief and action are zeroed; then ``belief' = prior.next_belief(state, belief,
    previous_action)`` (the recurrent step only: the prior's distribution is not evaluated)
    and ``state'`` is the posterior's sample given ``belief'`` and the encoded observation.
    Put it between an observation encoder and the actor in a ``TensorDictSequential``.

    Args:
        prior: the trained :class:`RSSMPriorV3`, shared with the world model.
        posterior: the trained :class:`RSSMPosteriorV3`.

    Keyword Args:
        in_keys: five keys: previous state, previous belief, previous action, encoded
            observation and reset flag. Defaults to ``["state", "belief", "previous_action",
            "encoded_latents", "is_init"]``.
        out_keys: two keys for the new state and belief. Defaults to ``["state", "belief"]``.

    Raises:
        TypeError: ``prior``/``posterior`` of the wrong class.
        ValueError: not five in_keys or two out_keys.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.modules import RSSMPosteriorV3, RSSMPriorV3, RSSMStateEstimatorV3
        >>> prior = RSSMPriorV3(action_dim=2, hidden_dim=8, rnn_hidden_dim=6, num_categoricals=2,
        ...                     num_classes=3)
        >>> post = RSSMPosteriorV3(hidden_dim=8, num_categoricals=2, num_classes=3, rnn_hidden_dim=6,
        ...                        obs_embed_dim=4)
        >>> td = TensorDict(state=torch.zeros(5, 6), belief=torch.zeros(5, 6),
        ...                 previous_action=torch.zeros(5, 2), encoded_latents=torch.randn(5, 4),
        ...                 is_init=torch.ones(5, 1, dtype=torch.bool), batch_size=[5])
        >>> out = RSSMStateEstimatorV3(prior, post)(td)
        >>> out["state"].shape, out["belief"].shape
        (torch.Size([5, 6]), torch.Size([5, 6]))
    """

    def __init__(
        self,
        prior: RSSMPriorV3,
        posterior: RSSMPosteriorV3,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__()
        for name, module, cls in (
            ("prior", prior, RSSMPriorV3),
            ("posterior", posterior, RSSMPosteriorV3),
        ):
            if not isinstance(module, cls):
                raise TypeError(
                    f"RSSMStateEstimatorV3: expected {name} as a {cls.__name__}, got "
                    f"{type(module).__name__}."
                )
        in_keys = list(_IN_KEYS if in_keys is None else in_keys)
        out_keys = list(_OUT_KEYS if out_keys is None else out_keys)
        if len(in_keys) != 5 or len(out_keys) != 2:
            raise ValueError(
                f"RSSMStateEstimatorV3: expected 5 in_keys (state, belief, previous action, "
                f"encoded observation, reset flag) and 2 out_keys (state, belief), got "
                f"{in_keys} and {out_keys}."
            )
        self.prior = prior
        self.posterior = posterior
        self.in_keys = [unravel_key(k) for k in in_keys]
        self.out_keys = [unravel_key(k) for k in out_keys]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Writes the new state and belief at ``out_keys``."""
        state_key, belief_key, action_key, encoded_key, reset_key = self.in_keys
        state = tensordict.get(state_key)
        belief = tensordict.get(belief_key)
        action = tensordict.get(action_key)
        reset = tensordict.get(reset_key, None)
        if not action.is_floating_point():
            action = action.to(belief.dtype)
        if reset is not None:
            keep = ~reset.to(torch.bool).reshape(tensordict.batch_size).unsqueeze(-1)
            state, belief, action = state * keep, belief * keep, action * keep
        next_belief = self.prior.next_belief(state, belief, action)
        _, next_state = self.posterior(next_belief, tensordict.get(encoded_key))
        tensordict.set(self.out_keys[0], next_state)
        tensordict.set(self.out_keys[1], next_belief)
        return tensordict
