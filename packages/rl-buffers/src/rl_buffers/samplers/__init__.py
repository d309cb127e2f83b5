"""Samplers: which stored items a batch holds."""

from rl_buffers.samplers.consuming import ConsumingSampler
from rl_buffers.samplers.ensemble import SamplerEnsemble
from rl_buffers.samplers.prioritized import PrioritizedSampler
from rl_buffers.samplers.prioritized_slice import PrioritizedSliceSampler
from rl_buffers.samplers.random import RandomSampler
from rl_buffers.samplers.sampler import Sampler
from rl_buffers.samplers.slice import SliceSampler
from rl_buffers.samplers.slice_without_replacement import SliceSamplerWithoutReplacement
from rl_buffers.samplers.staleness import StalenessAwareSampler
from rl_buffers.samplers.streaming_slice import StreamingSliceSampler
from rl_buffers.samplers.without_replacement import SamplerWithoutReplacement

__all__ = [
    "StalenessAwareSampler",
    "ConsumingSampler",
    "StreamingSliceSampler",
    "SamplerEnsemble",
    "PrioritizedSampler",
    "PrioritizedSliceSampler",
    "RandomSampler",
    "Sampler",
    "SamplerWithoutReplacement",
    "SliceSampler",
    "SliceSamplerWithoutReplacement",
]
