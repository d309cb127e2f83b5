"""Builds rl_kernels._C against the torch installed in the build environment.

The CPU kernels always build. The CUDA kernels build when ``CUDA_HOME`` is set to a CUDA
toolkit (set it explicitly: a toolkit found on the PATH is not used, so that a machine with
nvcc but no wish for a long CUDA build gets the CPU build) and ``RL_KERNELS_BUILD_CUDA`` is
not ``0``. ``TORCH_CUDA_ARCH_LIST`` picks the architectures, as for any torch extension.

Next to the extension the build writes ``_build_info.json`` (the torch version it was built
against, whether CUDA kernels are in it, and the built binary's size and SHA-256);
``import rl_kernels`` reads it before loading the binary, so a binary built for another
torch, or one damaged since (a truncated library crashes ``dlopen`` with SIGBUS), is never
loaded.

A compiler whose C++ runtime is not torch's (one that links its own static ``libstdc++``
into what it builds, while torch's libraries use the shared ``libstdc++.so``) makes a binary
in which any C++ exception crashes the interpreter. The build reports it (the binary does
not need ``libstdc++.so`` while torch's ``libc10`` does) and ``import rl_kernels`` refuses
such a binary with one warning; rebuild with the system compiler
(``CXX=/usr/bin/g++ CC=/usr/bin/gcc``).

The extension is optional, so that installing rl-kernels never fails: without a C++
compiler it is not built, and a compile error is reported and skipped (setuptools'
``optional`` extensions). The package then installs without a binary, and ``import
rl_kernels`` warns once and leaves rl_core's reference kernels in place.
"""

from __future__ import annotations

import hashlib
import importlib.util
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


def _elf_module():
    # The package's own ELF reader, loaded by path: the package is not importable yet.
    spec = importlib.util.spec_from_file_location(
        "_rl_kernels_elf", HERE / "src" / "rl_kernels" / "_elf.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _add_to_record(record: Path, fields: dict) -> None:
    info = json.loads(record.read_text()) if record.is_file() else {}
    info.update(fields)
    record.write_text(json.dumps(info) + "\n")


def _record_binary(binary: Path) -> dict:
    """Adds the built binary's size and SHA-256 to the build record beside it and returns
    them; reports a C++ runtime that is not torch's."""
    import torch

    data = binary.read_bytes()
    fields = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    _add_to_record(binary.parent / INFO.name, fields)
    elf = _elf_module()
    c10 = next(iter(sorted((Path(torch.__file__).parent / "lib").glob("libc10.so*"))), None)
    reason = elf.foreign_cxx_runtime(binary, c10) if c10 is not None else None
    if reason is not None:
        print(
            f"rl-kernels: WARNING: {reason}. import rl_kernels will refuse this binary and use "
            f"the reference kernels; rebuild with the system compiler: CXX=/usr/bin/g++ "
            f"CC=/usr/bin/gcc.",
            file=sys.stderr,
        )
    return fields


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
            return
        binary = Path(self.get_ext_fullpath(ext.name))
        if binary.is_file():
            try:
                self._recorded = _record_binary(binary)
            except Exception as exc:  # the record is a safeguard: never fail the install
                print(f"rl-kernels: could not record the built binary ({exc}).", file=sys.stderr)

    def copy_extensions_to_source(self):
        # In-place and editable builds copy the binary into the source tree: its record there
        # gets the same size and SHA-256.
        super().copy_extensions_to_source()
        fields = getattr(self, "_recorded", None)
        if fields:
            _add_to_record(INFO, fields)


setup(
    ext_modules=_extensions(),
    cmdclass={"build_ext": _BuildExt},
    package_data={"rl_kernels": ["py.typed", "_build_info.json"]},
)
