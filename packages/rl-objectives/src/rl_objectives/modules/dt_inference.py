"""Acting with a Decision Transformer: :class:`DecisionTransformerInferenceWrapper`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import unravel_key

from rl_core import keys as K
from rl_core.keys import NestedKey

RETURN_TO_GO = "return_to_go"


class DecisionTransformerInferenceWrapper(TensorDictModuleBase):
    """Runs a sequence policy on a context window and keeps the action of the last step.

    The input holds the last ``T`` steps: ``observation`` ``[*B, T, obs_dim]``,
    ``return_to_go`` ``[*B, T, 1]`` and ``action`` ``[*B, T, action_dim]``, the ``T``
    *previous* actions ``a_{t-T} .. a_{t-1}`` (what ``CatFrames`` stacks before the policy
    runs). The actions are moved one step back to line up with their observations, the
    unknown current action slot is zeroed, and every step older than ``inference_context``
    is zeroed in the three inputs. The policy then runs on that copy, and the result is the
    input with ``action`` replaced by the predicted action of the last step ``[*B,
    action_dim]`` and ``return_to_go`` by its last entry ``[*B, 1]``.

    Target-return handling: the returns-to-go come from the env, e.g.
    ``TransformedEnv(env, Compose(TargetReturn(target, out_keys=["return_to_go"]),
    CatFrames(T, dim=-2, in_keys=["observation", "action", "return_to_go"])))``:
    ``TargetReturn`` starts each episode at the target and subtracts each reward (the return
    still to collect), ``CatFrames`` keeps the window. The input is not modified in place.

    Args:
        policy: a TensorDict module reading ``observation``, ``action`` and
            ``return_to_go`` ``[*B, T, .]`` and writing ``action`` ``[*B, T, action_dim]``.

    Keyword Args:
        inference_context: number of most recent steps the policy sees. Defaults to 5.
        spec: the action spec, kept as ``self.spec``. Defaults to the policy's.
        device: accepted for TorchRL compatibility; the policy's device is used.

    The action the policy writes is read at ``out_action`` (``"action"`` unless renamed with
    :meth:`set_tensor_keys`), which must be one of the policy's ``out_keys``: a policy that
    writes its action elsewhere is refused at its first call, as in TorchRL.

    Raises:
        ValueError: ``inference_context`` is not positive, the policy does not write
            ``out_action``, or the inputs are not ``[*B, T, F]`` sequences of one length.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives.modules import DecisionTransformerInferenceWrapper, DTActor
        >>> actor = DTActor(3, 2, transformer_config={"n_embd": 16, "n_layer": 1, "n_inner": 32})
        >>> policy = TensorDictModule(actor, ["observation", "action", "return_to_go"], ["action"])
        >>> wrapper = DecisionTransformerInferenceWrapper(policy, inference_context=4)
        >>> td = TensorDict(observation=torch.randn(6, 10, 3), action=torch.randn(6, 10, 2),
        ...     return_to_go=torch.randn(6, 10, 1), batch_size=[6])
        >>> out = wrapper(td)
        >>> out["action"].shape, out["return_to_go"].shape
        (torch.Size([6, 2]), torch.Size([6, 1]))
    """

    def __init__(
        self,
        policy: TensorDictModuleBase,
        *,
        inference_context: int = 5,
        spec: Any = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if isinstance(inference_context, bool) or inference_context < 1:
            raise ValueError(
                f"DecisionTransformerInferenceWrapper: expected inference_context >= 1, got "
                f"{inference_context!r}."
            )
        self.td_module = policy
        self.inference_context = int(inference_context)
        self.spec = spec if spec is not None else getattr(policy, "spec", None)
        self.device = device
        self.observation_key: NestedKey = K.OBSERVATION
        self.action_key: NestedKey = K.ACTION
        self.out_action_key: NestedKey = K.ACTION
        self.return_to_go_key: NestedKey = RETURN_TO_GO
        self._sync_keys()

    def _sync_keys(self) -> None:
        self.in_keys = [self.observation_key, self.action_key, self.return_to_go_key]
        written = [unravel_key(k) for k in getattr(self.td_module, "out_keys", [])]
        # TorchRL's order: the policy's outputs and the three inputs, sorted by name
        self.out_keys = sorted({*written, *map(unravel_key, self.in_keys)}, key=str)

    def _check_out_action(self) -> None:
        written = [unravel_key(k) for k in getattr(self.td_module, "out_keys", [])]
        if unravel_key(self.out_action_key) not in written:
            raise ValueError(
                f"DecisionTransformerInferenceWrapper: The value of out_action_key "
                f"({self.out_action_key!r}) must be one of the policy's out_keys ({written}). "
                f"Set it with set_tensor_keys(out_action=...)."
            )

    def set_tensor_keys(
        self,
        *,
        observation: NestedKey | None = None,
        action: NestedKey | None = None,
        return_to_go: NestedKey | None = None,
        out_action: NestedKey | None = None,
    ) -> DecisionTransformerInferenceWrapper:
        """Renames the entries read (``observation``, ``action``, ``return_to_go``: the
        policy's inputs) and the policy's action output (``out_action``).

        Raises:
            ValueError: the policy does not write ``out_action``.
        """
        if observation is not None:
            self.observation_key = observation
        if action is not None:
            self.action_key = action
        if return_to_go is not None:
            self.return_to_go_key = return_to_go
        if out_action is not None:
            previous, self.out_action_key = self.out_action_key, out_action
            try:
                self._check_out_action()
            except ValueError:
                self.out_action_key = previous
                raise
        self._sync_keys()
        return self

    def _masked(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = tensordict.get(self.observation_key)
        action = tensordict.get(self.action_key)
        rtg = tensordict.get(self.return_to_go_key)
        shapes = [tuple(x.shape) for x in (obs, action, rtg)]
        need = tensordict.batch_dims + 2
        if any(x.dim() < need for x in (obs, action, rtg)) or len({s[:-1] for s in shapes}) != 1:
            raise ValueError(
                f"DecisionTransformerInferenceWrapper: expected observation, action and "
                f"return_to_go shaped [*B, T, F] with one T, got {shapes}. Stack a context "
                f"window first (CatFrames with dim=-2)."
            )
        # a_{t-T}..a_{t-1} -> aligned with s_{t-T+1}..s_t, the current action slot zeroed
        action = torch.cat([action[..., 1:, :], torch.zeros_like(action[..., :1, :])], dim=-2)
        steps = obs.shape[-2]
        keep = torch.arange(steps, device=obs.device) >= steps - self.inference_context
        keep = keep.unsqueeze(-1)
        td = tensordict.copy()
        td.set(self.observation_key, obs * keep.to(obs.dtype))
        td.set(self.action_key, action * keep.to(action.dtype))
        td.set(self.return_to_go_key, rtg * keep.to(rtg.dtype))
        return td

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns a copy of ``tensordict`` with the last predicted action and return-to-go."""
        self._check_out_action()
        out = self.td_module(self._masked(tensordict))
        result = tensordict.copy()
        inputs = set(map(unravel_key, self.in_keys))
        for key in self.out_keys:
            if key not in inputs:
                result.set(key, out.get(key))
        result.set(self.out_action_key, out.get(self.out_action_key)[..., -1, :])
        result.set(self.return_to_go_key, tensordict.get(self.return_to_go_key)[..., -1, :])
        return result


__all__ = ["DecisionTransformerInferenceWrapper"]
