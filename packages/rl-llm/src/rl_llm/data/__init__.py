"""Data structures of rl-llm: chat histories and the outputs of LLM policies."""

from rl_llm.data._templates import add_chat_template, detect_chat_template
from rl_llm.data.buffer_dataset import TorchRLBufferDataset
from rl_llm.data.chat_history import ChatHistory
from rl_llm.data.history import History, set_chat_template
from rl_llm.data.infinite import create_infinite_iterator
from rl_llm.data.kl_controllers import AdaptiveKLController, ConstantKLController, KLControllerBase
from rl_llm.data.log_probs import LogProbs
from rl_llm.data.masks import Masks
from rl_llm.data.prompt_data import PromptData
from rl_llm.data.prompt_group_sampler import PromptGroupSampler
from rl_llm.data.reward import PairwiseDataset, RewardData
from rl_llm.data.text import Text
from rl_llm.data.tokenizers import PromptTensorDictTokenizer, TensorDictTokenizer
from rl_llm.data.tokens import Tokens
from rl_llm.data.topk import TopKRewardSelector
from rl_llm.data.utils import as_nested_tensor, as_padded_tensor

__all__ = [
    "History",
    "ChatHistory",
    "Text",
    "Tokens",
    "Masks",
    "LogProbs",
    "add_chat_template",
    "detect_chat_template",
    "set_chat_template",
    "as_padded_tensor",
    "as_nested_tensor",
    "ConstantKLController",
    "AdaptiveKLController",
    "KLControllerBase",
    "PromptGroupSampler",
    "RewardData",
    "PairwiseDataset",
    "TopKRewardSelector",
    "create_infinite_iterator",
    "TensorDictTokenizer",
    "PromptTensorDictTokenizer",
    "PromptData",
    "TorchRLBufferDataset",
]
