"""Training loops over built rl-llm parts: :class:`GRPOTrainer`."""

from rl_llm.trainers.grpo import GRPOTrainer

__all__ = ["GRPOTrainer"]
