"""Runs the install commands of docs/install.md the way a user types them, with plain pip.

Two fresh virtual environments, each given the locked torch, tensordict and numpy first (from
uv's cache, so CI downloads no CUDA wheels again), then:

1. from a clone: ``pip install ./packages/rl-core ./packages/rl-buffers ...``;
2. from a git URL: ``pip install "rl-core @ git+file://<repo>#subdirectory=packages/rl-core"
   "rl-buffers @ git+...#subdirectory=packages/rl-buffers" ...`` (the committed HEAD);

each with every package that builds without a compiler (all but rl-kernels, whose build needs
torch in the build environment: its wheel route is the one documented), then imports each and
fills and samples a buffer. The wheel route of the same page is run by
``tools/check_wheels.py`` for every package.

Usage::

    uv run python tools/check_installs.py
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT

PINNED = ("torch", "tensordict", "numpy")
PACKAGES = ("rl-core", "rl-envs", "rl-buffers", "rl-collectors", "rl-objectives", "rl-llm")
SMOKE = """
import torch, rl_core, rl_envs, rl_collectors, rl_objectives, rl_llm, rl_buffers
from tensordict import TensorDict
buffer = rl_buffers.TensorDictReplayBuffer(storage=rl_buffers.LazyTensorStorage(8), batch_size=4)
buffer.extend(TensorDict({"x": torch.arange(8.0)}, [8]))
print("rl_buffers", rl_buffers.__version__, tuple(buffer.sample()["x"].shape))
"""


def routes(root: Path) -> dict[str, list[str]]:
    url = f"git+{root.as_uri()}"
    return {
        "from a clone": [str(root / "packages" / name) for name in PACKAGES],
        "from a git URL": [f"{name} @ {url}#subdirectory=packages/{name}" for name in PACKAGES],
    }


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed with exit {result.returncode}:\n"
            f"{(result.stdout + result.stderr)[-3000:]}"
        )
    return result


def check_route(name: str, requirements: list[str], work: Path) -> str:
    venv = work / name.replace(" ", "-")
    python = venv / "bin" / "python"
    run(["uv", "venv", "-q", "--seed", "--python", sys.executable, str(venv)])
    pins = [f"{dist}=={importlib.metadata.version(dist)}" for dist in PINNED]
    run(["uv", "pip", "install", "-q", "--python", str(python), *pins])
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    run([str(python), "-m", "pip", "install", "-q", *requirements], env=env)
    return run([str(python), "-c", SMOKE], cwd=work, env=env).stdout.strip()


def main() -> int:
    failures = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rl-installs-") as tmp, ThreadPoolExecutor(2) as pool:
        futures = {
            name: pool.submit(check_route, name, requirements, Path(tmp))
            for name, requirements in routes(ROOT).items()
        }
        for name, future in futures.items():
            try:
                print(f"{name}: {future.result()}")
            except RuntimeError as err:
                failures.append(f"{name}: {err}")
    print(
        f"installs: {len(futures) - len(failures)}/{len(futures)} routes passed in "
        f"{time.perf_counter() - start:.0f} s"
    )
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
