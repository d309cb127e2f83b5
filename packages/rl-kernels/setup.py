"""Builds rl_kernels._C against the torch installed in the build environment.

The CPU kernels always build. The CUDA kernels build when ``CUDA_HOME`` is set to a CUDA
toolkit (set it explicitly: a toolkit found on the PATH is not used, so that a machine with
nvcc but no wish for a long CUDA build gets the CPU build) and ``RL_KERNELS_BUILD_CUDA`` is
not ``0``. ``TORCH_CUDA_ARCH_LIST`` picks the architectures, as for any torch extension.

Next to the extension the build writes ``_build_info.json`` (the torch version it was built
against and whether CUDA kernels are in it); ``import rl_kernels`` reads it before loading
the binary, so a binary built for another torch is never loaded.

The extension is optional, so that installing rl-kernels never fails: without a C++
compiler it is not built, and a compile error is reported and skipped (setuptools'
``optional`` extensions). The package then installs without a binary, and ``import
rl_kernels`` warns once and leaves rl_core's reference kernels in place.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
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


def _compiler() -> str | None:
    command = shlex.split(os.environ.get("CXX", "c++")) or ["c++"]
    return shutil.which(command[0])


def _extensions():
    import torch

    cpu = [str(p.relative_to(HERE)) for p in sorted((CSRC / "cpu").glob("*.cpp"))]
    flags = {"cxx": ["-O3", "-g0"]}
    with_cuda = _with_cuda()
    INFO.write_text(
        json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda if with_cuda else None})
        + "\n"
    )
    if _compiler() is None:
        print("rl-kernels: no C++ compiler found; installing without the kernels.", file=sys.stderr)
        return []
    if with_cuda:
        cuda = [str(p.relative_to(HERE)) for p in sorted((CSRC / "cuda").glob("*.cu"))]
        flags["nvcc"] = ["-O3"]
        return [
            cpp_extension.CUDAExtension(
                "rl_kernels._C", cpu + cuda, extra_compile_args=flags, optional=True
            )
        ]
    return [
        cpp_extension.CppExtension("rl_kernels._C", cpu, extra_compile_args=flags, optional=True)
    ]


class _BuildExt(cpp_extension.BuildExtension):
    """torch's build_ext, without ninja when it is missing, and a failed build skipped."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("use_ninja", cpp_extension.is_ninja_available())
        super().__init__(*args, **kwargs)

    def build_extension(self, ext):
        # setuptools skips an optional extension on distutils' compile errors only; the
        # ninja build raises others. Either way: report, and install without the kernels.
        try:
            super().build_extension(ext)
        except Exception as exc:
            if not getattr(ext, "_optional", getattr(ext, "optional", False)):
                raise
            print(
                f"rl-kernels: building {ext.name} failed ({exc}); installing without the kernels.",
                file=sys.stderr,
            )


setup(
    ext_modules=_extensions(),
    cmdclass={"build_ext": _BuildExt},
    package_data={"rl_kernels": ["py.typed", "_build_info.json"]},
)
