"""generate_exp_name: a unique experiment name from a model name, an experiment name, a random
id and the date."""

from __future__ import annotations

import uuid
from datetime import datetime


def generate_exp_name(model_name: str, experiment_name: str) -> str:
    """``"<model_name>_<experiment_name>_<8 hex digits>_<yy_mm_dd-HH_MM_SS>"`` (TorchRL's
    ``generate_exp_name``): the hex digits are the start of a random UUID, the date is the
    local time now, so two calls give two names.

    Args:
        model_name: the first part (the algorithm or model).
        experiment_name: the second part.

    Raises:
        TypeError: an argument is not a string.

    Examples:
        >>> name = generate_exp_name("SAC", "HalfCheetah")
        >>> name.startswith("SAC_HalfCheetah_"), len(name.split("_"))
        (True, 8)
    """
    for argument, value in (("model_name", model_name), ("experiment_name", experiment_name)):
        if not isinstance(value, str):
            raise TypeError(
                f"generate_exp_name: {argument} must be a string, got {type(value).__name__}."
            )
    stamp = datetime.now().strftime("%y_%m_%d-%H_%M_%S")
    return f"{model_name}_{experiment_name}_{uuid.uuid4().hex[:8]}_{stamp}"


__all__ = ["generate_exp_name"]
