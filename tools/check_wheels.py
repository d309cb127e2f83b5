"""Builds every package's wheel and installs each one alone into a fresh virtual environment.

What a user gets from ``pip install rl-buffers`` is the wheel, not the workspace: a module
left out of the wheel, a dependency missing from its metadata, or an import of a sibling
passes every workspace test and fails there. For each package this script:

1. builds the wheels of all packages (``uv build --all-packages``) into one folder;
2. creates a fresh virtual environment and installs that package's wheel with the rl-core
   wheel (siblings need it) and their third-party dependencies from the index, nothing else;
3. runs the package's smoke check there (:data:`SMOKE`): import, version, no sibling loaded,
   and one call of its public API.

Usage::

    uv run python tools/check_wheels.py                 # every package (what CI runs)
    uv run python tools/check_wheels.py rl-core rl-envs --dist dist
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _workspace as workspace  # a sibling module of this script

SIBLINGS = ("rl_envs", "rl_buffers", "rl_collectors", "rl_objectives", "rl_llm", "rl_kernels")

# One smoke check per package, run in its own environment. Each prints one line. The common
# prologue (import, version, no sibling loaded) is added by `smoke_code`.
SMOKE = {
    "rl-core": (
        "from rl_core import Bounded, step_mdp\n"
        "from tensordict import TensorDict\n"
        "spec = Bounded(-1.0, 1.0, shape=(3,))\n"
        "x = spec.rand()\n"
        "assert spec.is_in(x)\n"
        "td = TensorDict({'next': {'observation': x}}, batch_size=[])\n"
        "print('rl_core ok', tuple(step_mdp(td)['observation'].shape))\n"
    ),
    "rl-envs": (
        "from rl_envs import CartPoleEnv\n"
        "td = CartPoleEnv(batch_size=[4]).rollout(5, break_when_any_done=False)\n"
        "print('rl_envs ok', tuple(td.batch_size))\n"
    ),
    "rl-buffers": (
        "import torch\n"
        "from tensordict import TensorDict\n"
        "from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer\n"
        "buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=8)\n"
        "buffer.extend(TensorDict({'observation': torch.randn(50, 3)}, batch_size=[50]))\n"
        "print('rl_buffers ok', len(buffer), tuple(buffer.sample()['observation'].shape))\n"
    ),
    "rl-collectors": (
        "import torch\n"
        "from tensordict.nn import TensorDictModule\n"
        "from rl_collectors import SyncDataCollector\n"
        "from rl_core.testing import CountingEnv\n"
        "policy = TensorDictModule(lambda o: torch.ones_like(o, dtype=torch.int64), "
        "in_keys=['observation'], out_keys=['action'])\n"
        "collector = SyncDataCollector(lambda: CountingEnv(batch_size=[2]), policy, "
        "frames_per_batch=8, total_frames=16)\n"
        "print('rl_collectors ok', [tuple(b.batch_size) for b in collector])\n"
        "collector.shutdown()\n"
    ),
    "rl-objectives": (
        "from rl_objectives import ClipPPOLoss, DQNLoss, SACLoss  # noqa: F401\n"
        "from rl_objectives.loggers import CSVLogger\n"
        "import tempfile\n"
        "logger = CSVLogger('smoke', log_dir=tempfile.mkdtemp())\n"
        "logger.log_scalar('loss', 1.0, step=0)\n"
        "print('rl_objectives ok')\n"
    ),
    "rl-llm": (
        "from rl_llm import History\n"
        "chat = [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': 'hello'}]\n"
        "print('rl_llm ok', tuple(History.from_chats([chat]).batch_size))\n"
    ),
    "rl-kernels": (
        "import torch\n"
        "import rl_core.ops as ops\n"
        "assert rl_kernels.loaded(), rl_kernels.load_error()\n"
        "v = torch.zeros(2, 5, 1)\n"
        "done = torch.zeros(2, 5, 1, dtype=torch.bool)\n"
        "adv, _ = ops.generalized_advantage_estimate(0.9, 0.95, v, v, torch.ones(2, 5, 1), done)\n"
        "print('rl_kernels ok', rl_kernels.devices(), tuple(adv.shape))\n"
    ),
}


# rl-kernels' wheel on a torch it was not built for: the wheel's build record is rewritten to
# name another torch, as a wheel built elsewhere would; the import must warn once, name both
# versions, and leave the reference kernels working.
KERNELS_FALLBACK = (
    "import json, pathlib, warnings, importlib.util\n"
    "root = pathlib.Path(importlib.util.find_spec('rl_kernels').origin).parent\n"
    "record = root / '_build_info.json'\n"
    "info = json.loads(record.read_text())\n"
    "info['torch'] = '2.0.0'\n"
    "record.write_text(json.dumps(info))\n"
    "import torch\n"
    "with warnings.catch_warnings(record=True) as caught:\n"
    "    warnings.simplefilter('always')\n"
    "    import rl_kernels\n"
    "    import rl_core.ops as ops\n"
    "    v = torch.zeros(2, 5, 1)\n"
    "    done = torch.zeros(2, 5, 1, dtype=torch.bool)\n"
    "    adv, _ = ops.generalized_advantage_estimate(0.9, 0.95, v, v, torch.ones(2, 5, 1), done)\n"
    "messages = [str(w.message) for w in caught if type(w.message).__name__ == 'KernelLoadWarning']\n"
    "assert len(messages) == 1, messages\n"
    "assert 'built against torch 2.0.0' in messages[0] and torch.__version__ in messages[0], messages\n"
    "assert not rl_kernels.loaded()\n"
    "print('rl_kernels falls back on another torch', tuple(adv.shape))\n"
)
EXTRA = {"rl-kernels": KERNELS_FALLBACK}


def smoke_code(package: workspace.Package) -> str:
    """The code run in ``package``'s environment: the common checks, then its own snippet."""
    prologue = (
        "import sys\n"
        f"import {package.import_name}\n"
        f"assert {package.import_name}.__version__ == {package.version!r}, {package.import_name}.__version__\n"
        f"loaded = {{m.split('.')[0] for m in sys.modules}} & set({SIBLINGS!r})\n"
        f"assert loaded <= {{{package.import_name!r}}}, f'sibling packages loaded: {{loaded}}'\n"
    )
    return prologue + SMOKE.get(package.dist, f"print({package.import_name!r}, 'ok')\n")


def build_all(root: Path, dist: Path) -> None:
    """Builds every workspace package's wheel (and sdist) into ``dist``."""
    for package in workspace.workspace_packages(root):
        # The build's own output (rl-kernels' compiler lines and CUDA warnings on a CPU
        # machine) is shown only when the build fails.
        result = subprocess.run(
            package.build_command(dist), cwd=root, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
            raise SystemExit(
                f"check_wheels: building {package.dist} failed (exit {result.returncode}); "
                "its output is above."
            )
        print(f"built {package.dist}")


def wheel_of(package: workspace.Package, dist: Path) -> Path:
    name = f"{package.import_name}-{package.version}-"
    wheels = [p for p in dist.glob("*.whl") if p.name.startswith(name)]
    if len(wheels) != 1:
        raise SystemExit(
            f"check_wheels: expected one {name}*.whl in {dist}, found {[w.name for w in wheels]}."
        )
    return wheels[0]


def check_one(package: workspace.Package, wheels: set[Path], work: Path) -> str:
    """Installs ``wheels`` alone in a fresh venv, runs ``package``'s smoke check; returns its output.

    Raises:
        RuntimeError: the smoke check failed (its traceback is in the message).
        subprocess.CalledProcessError: the environment could not be created or installed.
    """
    venv = work / f"venv-{package.dist}"
    python = venv / "bin" / "python"
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        ["uv", "pip", "install", "-q", "--python", str(python), *map(str, sorted(wheels))],
        check=True,
    )
    outputs = [_run_check(package, python, work, "smoke check", smoke_code(package))]
    if package.dist in EXTRA:  # last: it may change the installed package
        outputs.append(_run_check(package, python, work, "extra check", EXTRA[package.dist]))
    return "; ".join(outputs)


def _run_check(package: workspace.Package, python: Path, work: Path, what: str, code: str) -> str:
    # Outside the repository, so that nothing imports the sources instead of the wheel.
    result = subprocess.run(
        [str(python), "-c", code], cwd=work, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{package.dist}: the wheel's {what} failed:\n{result.stderr[-3000:]}")
    return result.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", help="distribution names; default: every package")
    parser.add_argument("--root", type=Path, default=workspace.ROOT)
    parser.add_argument("--dist", type=Path, help="wheels already built here (default: build them)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    root = args.root.resolve()
    packages = [
        workspace.find_package(root, d) for d in args.packages
    ] or workspace.workspace_packages(root)
    core = workspace.find_package(root, "rl-core")
    with tempfile.TemporaryDirectory(prefix="rl-wheels-") as tmp:
        work = Path(tmp)
        dist = args.dist.resolve() if args.dist else work / "dist"
        if args.dist is None:
            build_all(root, dist)
        start = time.perf_counter()
        failures = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {
                p.dist: pool.submit(check_one, p, {wheel_of(core, dist), wheel_of(p, dist)}, work)
                for p in packages
            }
            for name, future in futures.items():
                try:
                    print(f"{name}: {future.result()}")
                except (RuntimeError, subprocess.CalledProcessError) as err:
                    failures.append(f"{name}: {err}")
        print(
            f"wheels: {len(packages) - len(failures)}/{len(packages)} installed alone and passed "
            f"their smoke check in {time.perf_counter() - start:.0f} s"
        )
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
