"""The end-of-dialog step that the single-turn task envs (MATH, GSM8K, IFEval, Countdown) share.

A task env is a composition, nothing more: ``TransformedEnv(DatasetChatEnv(...),
Compose(<reward parser>, EndOfDialog()))``. The parser scores the reply and adds its reward;
:class:`EndOfDialog` then ends every dialog, answered or not. :func:`reward_parser` finds the
parser again (the envs' ``parser`` property).
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Compose, Transform, TransformedEnv
from rl_core.keys import DONE, TERMINATED
from rl_llm.envs._reward_parser import RewardParserBase


class EndOfDialog(Transform):
    """Ends every dialog after one step: ``"terminated"`` and ``"done"`` are set for all.

    The single-turn task envs score one reply per dialog, so each step is the last one. The
    other flags (``"truncated"``) are left as the env below wrote them.

    Examples:
        >>> from rl_core import Compose, TransformedEnv
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import DatasetChatEnv
        >>> from rl_llm.envs._task_env import EndOfDialog
        >>> env = TransformedEnv(DatasetChatEnv(["hi"], batch_size=(2,), repeats=2), EndOfDialog())
        >>> td = env.reset()
        >>> td["history"].full = td["history"].prompt.append(
        ...     History.from_chats([[{"role": "assistant", "content": "hello"}]] * 2))
        >>> out = env.step(td)["next"]
        >>> out["terminated"].squeeze(-1).tolist(), out["truncated"].squeeze(-1).tolist()
        ([True, True], [False, False])
    """

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in (TERMINATED, DONE):
            next_tensordict.set(key, torch.ones_like(next_tensordict.get(key)))
        return next_tensordict


def reward_parser(env: TransformedEnv) -> RewardParserBase:
    """The (first) reward parser among ``env``'s transforms: a task env's ``parser``."""
    transforms = env.transform if isinstance(env.transform, Compose) else [env.transform]
    for transform in transforms:
        if isinstance(transform, RewardParserBase):
            return transform
    raise AttributeError(
        f"{type(env).__name__}.parser: no RewardParserBase among the env's transforms "
        f"{[type(t).__name__ for t in transforms]}; was it removed from env.transform?"
    )


#: The task envs' ``parser`` property (one definition, shared by each class).
parser_property = property(
    reward_parser, doc="The env's reward parser (a transform of ``env.transform``)."
)
