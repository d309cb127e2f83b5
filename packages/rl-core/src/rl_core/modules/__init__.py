"""Policy building blocks: networks, actors, critics, Q-value heads, distributions, exploration,
recurrence."""

from rl_core.modules import _plans  # noqa: F401  (hands the policy-call plans their classes)
from rl_core.modules.actor_critic import ActorCriticOperator, ActorCriticWrapper, ActorValueOperator
from rl_core.modules.actors import Actor, ProbabilisticActor, ValueOperator
from rl_core.modules.convnet import ConvNet
from rl_core.modules.distributions import (
    Delta,
    IndependentNormal,
    MaskedCategorical,
    MaskedOneHotCategorical,
    OneHotCategorical,
    ReparamGradientStrategy,
    TanhDelta,
    TanhNormal,
    TruncatedNormal,
)
from rl_core.modules.exploration import (
    AdditiveGaussianModule,
    EGreedyModule,
    OrnsteinUhlenbeckProcessModule,
)
from rl_core.modules.mlp import MLP
from rl_core.modules.qvalue import QValueActor, QValueModule
from rl_core.modules.recurrent import (
    GRUModule,
    LSTMModule,
    get_primers_from_module,
    recurrent_mode,
    set_recurrent_mode,
)
from rl_core.modules.rnn import GRU, LSTM, GRUCell, LSTMCell
from rl_core.modules.safe import SafeModule, SafeSequential

__all__ = [
    # networks
    "MLP",
    "ConvNet",
    # actors and critics
    "Actor",
    "ProbabilisticActor",
    "ValueOperator",
    "ActorValueOperator",
    "ActorCriticOperator",
    "ActorCriticWrapper",
    "QValueModule",
    "QValueActor",
    # TensorDict modules with output specs
    "SafeModule",
    "SafeSequential",
    # calling a policy
    # exploration
    "EGreedyModule",
    "AdditiveGaussianModule",
    "OrnsteinUhlenbeckProcessModule",
    # recurrent
    "LSTMModule",
    "GRUModule",
    "get_primers_from_module",
    "set_recurrent_mode",
    "recurrent_mode",
    "LSTM",
    "GRU",
    "LSTMCell",
    "GRUCell",
    # distributions
    "Delta",
    "IndependentNormal",
    "MaskedCategorical",
    "MaskedOneHotCategorical",
    "OneHotCategorical",
    "ReparamGradientStrategy",
    "TanhDelta",
    "TanhNormal",
    "TruncatedNormal",
]
