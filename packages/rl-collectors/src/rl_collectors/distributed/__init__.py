"""Distributed collectors: ``RayCollector`` (needs the ``rl-collectors[ray]`` extra)."""

from rl_collectors.distributed.ray_collector import RayCollector

__all__ = ["RayCollector"]
