"""Smoke run of the stack: import every package and report what is installed.

This is the main job until the training examples land; it grows with the packages.
Run it with ``uv run python examples/smoke.py``.
"""

import importlib

PACKAGES = [
    "rl_core",
    "rl_envs",
    "rl_buffers",
    "rl_collectors",
    "rl_objectives",
    "rl_llm",
    "rl_kernels",
]


def main() -> None:
    for name in PACKAGES:
        module = importlib.import_module(name)
        print(f"{name:<14} {module.__version__}")


if __name__ == "__main__":
    main()
