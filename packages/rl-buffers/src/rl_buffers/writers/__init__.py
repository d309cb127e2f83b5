"""Writers: where new items go in a storage."""

from rl_buffers.writers.ensemble import WriterEnsemble
from rl_buffers.writers.immutable import ImmutableDatasetWriter
from rl_buffers.writers.max_value import TensorDictMaxValueWriter
from rl_buffers.writers.round_robin import RoundRobinWriter
from rl_buffers.writers.tensordict_round_robin import TensorDictRoundRobinWriter
from rl_buffers.writers.writer import Writer

__all__ = [
    "ImmutableDatasetWriter",
    "RoundRobinWriter",
    "TensorDictMaxValueWriter",
    "TensorDictRoundRobinWriter",
    "Writer",
    "WriterEnsemble",
]
