"""Policy building blocks: networks, actors, critics, Q-value heads, distributions, exploration,
recurrence."""

from rl_core.modules.actor_critic import ActorCriticOperator, ActorCriticWrapper, ActorValueOperator
from rl_core.modules.actors import Actor, ProbabilisticActor, ValueOperator
from rl_core.modules.call_plan import PolicyCallPlan
from rl_core.modules.convnet import ConvNet
from rl_core.modules.cross_group_critic import CrossCriticGroupSpec, CrossGroupCritic
from rl_core.modules.decision_transformer import DecisionTransformer, DTActor, OnlineDTActor
from rl_core.modules.distributional_qvalue import (
    DistributionalQValueActor,
    DistributionalQValueModule,
)
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
from rl_core.modules.dqn_nets import DuelingCnnDQNet, NoisyLinear, reset_noise
from rl_core.modules.dreamer import DreamerActor, ObsDecoder, ObsEncoder
from rl_core.modules.dreamer_v3_utils import (
    SymExpTwoHot,
    symexp,
    symlog,
    two_hot_cross_entropy,
    two_hot_decode,
    two_hot_encode,
)
from rl_core.modules.dt_inference import DecisionTransformerInferenceWrapper
from rl_core.modules.exploration import (
    AdditiveGaussianModule,
    EGreedyModule,
    OrnsteinUhlenbeckProcessModule,
)
from rl_core.modules.mlp import MLP
from rl_core.modules.multiagent import MultiAgentConvNet, MultiAgentMLP
from rl_core.modules.planners import CEMPlanner, MPCPlannerBase, MPPIPlanner
from rl_core.modules.qvalue import QValueActor, QValueModule
from rl_core.modules.recurrent import GRUModule, LSTMModule, get_primers_from_module
from rl_core.modules.rnn import GRU, LSTM, GRUCell, LSTMCell
from rl_core.modules.safe import SafeModule, SafeSequential
from rl_core.modules.world_models import (
    RSSMPosterior,
    RSSMPrior,
    RSSMRollout,
    WorldModelWrapper,
)
from rl_core.modules.world_models_v3 import RSSMPosteriorV3, RSSMPriorV3

__all__ = [
    # networks
    "MLP",
    "ConvNet",
    "MultiAgentMLP",
    "MultiAgentConvNet",
    "CrossGroupCritic",
    "CrossCriticGroupSpec",
    "DuelingCnnDQNet",
    "NoisyLinear",
    "reset_noise",
    # sequence policies (Decision Transformer; GPT-2 blocks from transformers)
    "DecisionTransformer",
    "DTActor",
    "OnlineDTActor",
    "DecisionTransformerInferenceWrapper",
    # actors and critics
    "Actor",
    "ProbabilisticActor",
    "ValueOperator",
    "ActorValueOperator",
    "ActorCriticOperator",
    "ActorCriticWrapper",
    "QValueModule",
    "QValueActor",
    "DistributionalQValueModule",
    "DistributionalQValueActor",
    # TensorDict modules with output specs
    "SafeModule",
    "SafeSequential",
    # calling a policy
    "PolicyCallPlan",
    # exploration
    "EGreedyModule",
    "AdditiveGaussianModule",
    "OrnsteinUhlenbeckProcessModule",
    # recurrent
    "LSTMModule",
    "GRUModule",
    "get_primers_from_module",
    "LSTM",
    "GRU",
    "LSTMCell",
    "GRUCell",
    # model-based: planners and DreamerV3's scalar transforms
    "MPCPlannerBase",
    "CEMPlanner",
    "MPPIPlanner",
    "symlog",
    "symexp",
    "two_hot_encode",
    "two_hot_decode",
    "two_hot_cross_entropy",
    "SymExpTwoHot",
    # model-based: Dreamer's world model and actor
    "RSSMPrior",
    "RSSMPosterior",
    "RSSMRollout",
    "WorldModelWrapper",
    "ObsEncoder",
    "ObsDecoder",
    "DreamerActor",
    "RSSMPriorV3",
    "RSSMPosteriorV3",
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
