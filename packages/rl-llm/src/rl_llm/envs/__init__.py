"""Chat and text environments, task envs with their reward parsers, and the transforms that
act on dialogs (data loading, templates, tools, KL, reward shaping)."""

from rl_llm.envs._reward_parser import RewardParserBase
from rl_llm.envs.chat_env import ChatEnv
from rl_llm.envs.countdown import CountdownEnv, CountdownRewardParser, make_countdown_dataset
from rl_llm.envs.data_loading_primer import DataLoadingPrimer, RayDataLoadingPrimer
from rl_llm.envs.dataset_chat_env import DatasetChatEnv
from rl_llm.envs.execute_tools import ExecuteToolsInOrder
from rl_llm.envs.gsm8k import (
    GSM8KEnv,
    GSM8KRewardParser,
    answer_reward,
    make_arithmetic_dataset,
    parse_answer,
)
from rl_llm.envs.gsm8k_prepare import GSM8KPrepareQuestion
from rl_llm.envs.ifeval import IFEvalEnv, IfEvalScorer
from rl_llm.envs.ifeval_data import IFEvalData
from rl_llm.envs.ifeval_score import IFEvalScoreData
from rl_llm.envs.incremental_tokenizer import IncrementalTokenizer
from rl_llm.envs.kl import KLComputation, RetrieveKL, RetrieveLogProb
from rl_llm.envs.kl_reward import KLRewardTransform
from rl_llm.envs.llm_env import LLMEnv, make_gsm8k_env
from rl_llm.envs.llm_hashing_env import LLMHashingEnv
from rl_llm.envs.math_env import MATHEnv, MATHRewardParser
from rl_llm.envs.mcp_tool import MCPToolTransform
from rl_llm.envs.policy_version import PolicyVersion
from rl_llm.envs.python_executor_service import PythonExecutorService
from rl_llm.envs.python_interpreter import PythonInterpreter
from rl_llm.envs.ray_kl import RayKLRewardTransform, RayRetrieveKL
from rl_llm.envs.reason import AddThinkingPrompt
from rl_llm.envs.simple_tool import SimpleToolTransform
from rl_llm.envs.template import TemplateTransform
from rl_llm.envs.tokenizer import Tokenizer
from rl_llm.envs.tool_parsers import JSONCallParser, XMLBlockParser
from rl_llm.envs.tool_registry import (
    LLMToolParser,
    ParseResult,
    ToolCall,
    ToolRegistry,
    ToolService,
)

__all__ = [
    "ChatEnv",
    "DatasetChatEnv",
    "GSM8KEnv",
    "answer_reward",
    "parse_answer",
    "make_arithmetic_dataset",
    "KLRewardTransform",
    "PythonInterpreter",
    "SimpleToolTransform",
    "LLMEnv",
    "make_gsm8k_env",
    "MATHEnv",
    "MATHRewardParser",
    "CountdownEnv",
    "CountdownRewardParser",
    "make_countdown_dataset",
    "IFEvalEnv",
    "IfEvalScorer",
    "RewardParserBase",
    "DataLoadingPrimer",
    "TemplateTransform",
    "Tokenizer",
    "AddThinkingPrompt",
    "RetrieveLogProb",
    "RetrieveKL",
    "KLComputation",
    "MCPToolTransform",
    "RayDataLoadingPrimer",
    "ToolRegistry",
    "ToolCall",
    "ToolService",
    "ParseResult",
    "LLMToolParser",
    "XMLBlockParser",
    "JSONCallParser",
    "ExecuteToolsInOrder",
    "PythonExecutorService",
    "IncrementalTokenizer",
    "PolicyVersion",
    "GSM8KRewardParser",
    "GSM8KPrepareQuestion",
    "IFEvalScoreData",
    "IFEvalData",
    "LLMHashingEnv",
    "RayKLRewardTransform",
    "RayRetrieveKL",
]
