"""Default SLURM settings of the collector nodes and of the trainer's job (submitit)."""

from __future__ import annotations

DEFAULT_SLURM_CONF: dict[str, object] = {
    "timeout_min": 10,
    "slurm_partition": "train",
    "slurm_cpus_per_task": 32,
    "slurm_gpus_per_node": 0,
}
"""What a collector node's SLURM job asks for (``slurm_kwargs`` of the distributed
collectors, ``submitit_collection_conf`` of ``submitit_delayed_launcher``)."""

DEFAULT_SLURM_CONF_MAIN: dict[str, object] = {
    "timeout_min": 10,
    "slurm_partition": "train",
    "slurm_cpus_per_task": 32,
    "slurm_gpus_per_node": 1,
}
"""What the trainer's SLURM job asks for (``submitit_main_conf`` of
``submitit_delayed_launcher``)."""

__all__ = ["DEFAULT_SLURM_CONF", "DEFAULT_SLURM_CONF_MAIN"]
