"""Networks designed for one family of algorithms, beside the losses that train them.

World models and Dreamer networks (``RSSMPrior``, ``RSSMRollout``, ``WorldModelWrapper``,
``ObsEncoder``, ``DreamerActor``, DreamerV3's categorical latents and two-hot heads), Decision
Transformer networks, imitation policies (ACT, diffusion), multi-agent networks and the cross-group critic, and DQN-specific
networks (noisy layers, the dueling net, distributional Q-value heads), PILCO's GP
world model and RBF controller, ordinal distributions, consistent dropout and batch
renormalisation. The building blocks
every policy needs (``MLP``, ``ConvNet``, actors, ``QValueActor``, distributions) stay in
:mod:`rl_core.modules`.
"""

from rl_objectives.modules.act import ACTModel
from rl_objectives.modules.batchrenorm import BatchRenorm1d
from rl_objectives.modules.consistent_dropout import ConsistentDropout, ConsistentDropoutModule
from rl_objectives.modules.conv3d import Conv3dNet
from rl_objectives.modules.cross_group_critic import CrossCriticGroupSpec, CrossGroupCritic
from rl_objectives.modules.ddpg_nets import (
    DdpgCnnActor,
    DdpgCnnQNet,
    DdpgMlpActor,
    DdpgMlpQNet,
    ddpg_init_last_layer,
)
from rl_objectives.modules.decision_transformer import DecisionTransformer, DTActor, OnlineDTActor
from rl_objectives.modules.diffusion import DiffusionActor
from rl_objectives.modules.distributional_dqn_net import DistributionalDQNnet
from rl_objectives.modules.distributional_qvalue import (
    DistributionalQValueActor,
    DistributionalQValueModule,
    expected_action_value,
)
from rl_objectives.modules.dqn_nets import DuelingCnnDQNet, NoisyLinear, reset_noise
from rl_objectives.modules.dreamer import DreamerActor, ObsDecoder, ObsEncoder
from rl_objectives.modules.dreamer_v3_actor import DreamerV3DiscreteActor, DreamerV3SeededPolicy
from rl_objectives.modules.dreamer_v3_conv import DreamerV3ImageDecoder, DreamerV3ImageEncoder
from rl_objectives.modules.dreamer_v3_nets import (
    DreamerV3BlockGRU,
    DreamerV3BlockGRUCell,
    DreamerV3MLP,
)
from rl_objectives.modules.dreamer_v3_utils import (
    SymExpTwoHot,
    symexp,
    symlog,
    two_hot_cross_entropy,
    two_hot_decode,
    two_hot_encode,
)
from rl_objectives.modules.dt_inference import DecisionTransformerInferenceWrapper
from rl_objectives.modules.dueling_mlp import DuelingMlpDQNet
from rl_objectives.modules.env_transforms import get_env_transforms_from_module
from rl_objectives.modules.gp_world_model import GPWorldModel
from rl_objectives.modules.gsde import LazygSDEModule, gSDEModule
from rl_objectives.modules.multiagent import MultiAgentConvNet, MultiAgentMLP
from rl_objectives.modules.multiagent_base import MultiAgentNetBase
from rl_objectives.modules.net_layers import SquashDims, Squeeze2dLayer, SqueezeLayer
from rl_objectives.modules.noisy_lazy import NoisyLazyLinear
from rl_objectives.modules.ordinal import OneHotOrdinal, Ordinal, ordinal_logits
from rl_objectives.modules.qvalue_hooks import DistributionalQValueHook, QValueHook
from rl_objectives.modules.rbf_controller import RBFController
from rl_objectives.modules.rssm_state_estimator import RSSMStateEstimatorV3
from rl_objectives.modules.tanh_module import TanhModule
from rl_objectives.modules.value_transforms import (
    ComposeValueTransform,
    IdentityValueTransform,
    SignedHyperbolicValueTransform,
    SymLogValueTransform,
    ValueTransform,
    signed_hyperbolic,
    signed_parabolic,
)
from rl_objectives.modules.vmap_module import VmapModule
from rl_objectives.modules.world_model import WorldModel
from rl_objectives.modules.world_models import (
    RSSMPosterior,
    RSSMPrior,
    RSSMRollout,
    WorldModelWrapper,
)
from rl_objectives.modules.world_models_v3 import RSSMPosteriorV3, RSSMPriorV3, RSSMRolloutV3

__all__ = [
    # Dreamer: world model and actor
    "RSSMPrior",
    "RSSMPosterior",
    "RSSMRollout",
    "WorldModelWrapper",
    "WorldModel",
    "ObsEncoder",
    "ObsDecoder",
    "DreamerActor",
    # DreamerV3: categorical latents and the scalar transforms of its heads
    "RSSMPriorV3",
    "RSSMPosteriorV3",
    "RSSMRolloutV3",
    "RSSMStateEstimatorV3",
    "DreamerV3MLP",
    "DreamerV3BlockGRUCell",
    "DreamerV3BlockGRU",
    "DreamerV3ImageEncoder",
    "DreamerV3ImageDecoder",
    "DreamerV3DiscreteActor",
    "DreamerV3SeededPolicy",
    "symlog",
    "symexp",
    "two_hot_encode",
    "two_hot_decode",
    "two_hot_cross_entropy",
    "SymExpTwoHot",
    # invertible transforms of value targets (symlog, Pohlen et al.'s h)
    "ValueTransform",
    "IdentityValueTransform",
    "SymLogValueTransform",
    "SignedHyperbolicValueTransform",
    "ComposeValueTransform",
    "signed_hyperbolic",
    "signed_parabolic",
    # Decision Transformer (GPT-2 blocks from transformers)
    "DecisionTransformer",
    "DTActor",
    "OnlineDTActor",
    "DecisionTransformerInferenceWrapper",
    # imitation: action chunking (ACT) and diffusion policies
    "ACTModel",
    "DiffusionActor",
    # multi-agent
    "MultiAgentMLP",
    "MultiAgentConvNet",
    "MultiAgentNetBase",
    "CrossGroupCritic",
    "CrossCriticGroupSpec",
    # DQN family
    "DuelingCnnDQNet",
    "DuelingMlpDQNet",
    "DistributionalDQNnet",
    "DdpgMlpActor",
    "DdpgMlpQNet",
    "DdpgCnnActor",
    "DdpgCnnQNet",
    "ddpg_init_last_layer",
    "Conv3dNet",
    "SquashDims",
    "SqueezeLayer",
    "Squeeze2dLayer",
    "TanhModule",
    "VmapModule",
    "QValueHook",
    "DistributionalQValueHook",
    "gSDEModule",
    "LazygSDEModule",
    "get_env_transforms_from_module",
    "NoisyLinear",
    "NoisyLazyLinear",
    "reset_noise",
    "DistributionalQValueModule",
    "DistributionalQValueActor",
    "expected_action_value",
    # PILCO: GP dynamics with moment matching and the RBF policy
    "GPWorldModel",
    "RBFController",
    # ordinal distributions, dropout replayed in the loss, batch renormalisation
    "Ordinal",
    "OneHotOrdinal",
    "ordinal_logits",
    "ConsistentDropout",
    "ConsistentDropoutModule",
    "BatchRenorm1d",
]
