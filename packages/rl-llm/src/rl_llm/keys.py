"""The TensorDict keys rl-llm components read and write.

A chat env writes ``("history", "prompt")`` (a :class:`~rl_llm.data.History`); a policy writes
``"text"``, ``"tokens"``, ``"masks"``, ``"log_probs"`` (tensorclasses of batch ``(B,)``) and
``("history", "response")``/``("history", "full")``. Rewards and done flags follow rl-core's
TED layout.
"""

HISTORY = "history"
TEXT = "text"
TOKENS = "tokens"
MASKS = "masks"
LOG_PROBS = "log_probs"
QUERY = "query"
ANSWER = "answer"
ADVANTAGE = "advantage"
REF_LOG_PROBS = "ref_log_probs"

__all__ = [
    "HISTORY",
    "TEXT",
    "TOKENS",
    "MASKS",
    "LOG_PROBS",
    "QUERY",
    "ANSWER",
    "ADVANTAGE",
    "REF_LOG_PROBS",
]
