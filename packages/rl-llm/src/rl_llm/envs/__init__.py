"""Chat environments and the transforms that act on dialogs (tools, reward shaping)."""

from rl_llm.envs.chat_env import ChatEnv
from rl_llm.envs.dataset_chat_env import DatasetChatEnv
from rl_llm.envs.gsm8k import GSM8KEnv, answer_reward, make_arithmetic_dataset, parse_answer
from rl_llm.envs.kl_reward import KLRewardTransform
from rl_llm.envs.python_interpreter import PythonInterpreter
from rl_llm.envs.simple_tool import SimpleToolTransform

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
]
