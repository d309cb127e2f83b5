"""Builds rl_kernels._C against the torch installed in the build environment.

The CPU kernels always build. The CUDA kernels build when ``CUDA_HOME`` is set to a CUDA
toolkit (set it explicitly: a toolkit found on the PATH is not used, so that a machine with
nvcc but no wish for a long CUDA build gets the CPU build) and ``RL_KERNELS_BUILD_CUDA`` is
not ``0``. ``TORCH_CUDA_ARCH_LIST`` picks the architectures, as for any torch extension.

Next to the extension the build writes ``_build_info.json`` (the torch version it was built
against and whether CUDA kernels are in it); ``import rl_kernels`` reads it before loading
the binary, so a binary built for another torch is never loaded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from setuptools import setup
from torch.utils import cpp_extension

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"
INFO = HERE / "src" / "rl_kernels" / "_build_info.json"


def _with_cuda() -> bool:
    if os.environ.get("RL_KERNELS_BUILD_CUDA", "") == "0":
        return False
    return bool(os.environ.get("CUDA_HOME"))


def _extension():
    import torch

    cpu = [str(p.relative_to(HERE)) for p in sorted((CSRC / "cpu").glob("*.cpp"))]
    flags = {"cxx": ["-O3", "-g0"]}
    with_cuda = _with_cuda()
    INFO.write_text(
        json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda if with_cuda else None})
        + "\n"
    )
    if with_cuda:
        cuda = [str(p.relative_to(HERE)) for p in sorted((CSRC / "cuda").glob("*.cu"))]
        flags["nvcc"] = ["-O3"]
        return cpp_extension.CUDAExtension("rl_kernels._C", cpu + cuda, extra_compile_args=flags)
    return cpp_extension.CppExtension("rl_kernels._C", cpu, extra_compile_args=flags)


class _BuildExt(cpp_extension.BuildExtension):
    """torch's build_ext, without ninja when it is missing (no warning, same result)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("use_ninja", cpp_extension.is_ninja_available())
        super().__init__(*args, **kwargs)


setup(
    ext_modules=[_extension()],
    cmdclass={"build_ext": _BuildExt},
    package_data={"rl_kernels": ["py.typed", "_build_info.json"]},
)
