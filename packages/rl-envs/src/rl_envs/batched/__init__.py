"""Batched envs: several envs run as one, in this process (SerialEnv) or in workers (ParallelEnv)."""

from rl_envs.batched._meta import EnvMetadata
from rl_envs.batched.async_pool import (
    AsyncEnvPool,
    ProcessorAsyncEnvPool,
    ThreadingAsyncEnvPool,
)
from rl_envs.batched.base import BatchedEnvBase
from rl_envs.batched.env_creator import EnvCreator, env_creator, get_env_metadata
from rl_envs.batched.parallel import ParallelEnv
from rl_envs.batched.serial import SerialEnv

__all__ = [
    "AsyncEnvPool",
    "BatchedEnvBase",
    "EnvCreator",
    "EnvMetadata",
    "ParallelEnv",
    "ProcessorAsyncEnvPool",
    "SerialEnv",
    "ThreadingAsyncEnvPool",
    "env_creator",
    "get_env_metadata",
]
