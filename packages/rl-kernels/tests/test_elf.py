"""The checks made on the binary before it is loaded: whole ELF file, torch's C++ runtime.

The C++ runtime test builds two tiny shared objects with the system ``g++`` (under a second
each): one linked the usual way (it needs ``libstdc++.so``, as torch's libraries do) and one
with ``-static-libstdc++`` (its own copy of the runtime, what the GCC of the lent GPU
machines produced, issue 34). The detector must flag the second only, and the loader must
refuse it before ``dlopen`` with one warning.
"""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import rl_kernels
from rl_core.ops import KernelLoadWarning
from rl_kernels import _elf, _loader

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the checks read ELF files (Linux)"
)

PACKAGE = Path(rl_kernels.__file__).resolve().parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
GXX = shutil.which("g++")

# A kernel-like function: it throws and catches a C++ exception with a number in it.
_SOURCE = r"""
#include <stdexcept>
#include <string>
extern "C" int rl_probe(int x) {
  try {
    if (x > 0) throw std::invalid_argument("expected x <= 0, got " + std::to_string(x));
  } catch (const std::exception&) {
    return 1;
  }
  return 0;
}
"""


def _c10() -> Path:
    return next(iter(sorted((Path(torch.__file__).parent / "lib").glob("libc10.so*"))))


def _binary() -> Path:
    return next(
        PACKAGE / f"_C{s}"
        for s in importlib.machinery.EXTENSION_SUFFIXES
        if (PACKAGE / f"_C{s}").is_file()
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    if GXX is None:
        pytest.skip("needs the system g++ to build the probe libraries")
    root = tmp_path_factory.mktemp("cxx_runtime")
    (root / "probe.cpp").write_text(_SOURCE)
    out = {}
    for name, flags in {"shared": [], "static": ["-static-libstdc++"]}.items():
        target = root / f"{name}.so"
        subprocess.run(
            [GXX, "-shared", "-fPIC", "-O0", *flags, str(root / "probe.cpp"), "-o", str(target)],
            check=True,
            capture_output=True,
            timeout=60,
        )
        out[name] = target
    return out


def test_torch_needs_the_shared_cxx_runtime():
    assert _elf.cxx_runtimes(_elf.inspect(_c10()).needed) == {"libstdc++.so"}


def test_the_installed_kernels_share_torch_cxx_runtime():
    info = _elf.inspect(_binary())
    assert any(name.startswith("libstdc++.so") for name in info.needed)
    assert any(name.startswith("libc10") for name in info.needed)
    assert _elf.foreign_cxx_runtime(_binary(), _c10()) is None


def test_a_normal_build_passes_and_a_static_libstdcxx_build_is_flagged(built):
    assert "libstdc++.so.6" in _elf.inspect(built["shared"]).needed
    assert _elf.foreign_cxx_runtime(built["shared"], _c10()) is None
    static_needed = _elf.inspect(built["static"]).needed
    assert not any(name.startswith("libstdc++") for name in static_needed)
    reason = _elf.foreign_cxx_runtime(built["static"], _c10())
    assert reason is not None
    assert "static.so needs the C++ runtime none (linked statically)" in reason
    assert "libc10.so needs ['libstdc++.so']" in reason


def _fresh_loader(monkeypatch, directory: Path, binary: Path | None, record: dict) -> None:
    (directory / "_build_info.json").write_text(json.dumps(record))
    if binary is not None:
        shutil.copyfile(binary, directory / f"_C{SUFFIX}")
    monkeypatch.setattr(_loader, "_HERE", directory)
    monkeypatch.setattr(_loader, "_STATE", {"loaded": False, "error": None, "info": None})


def _mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


def test_the_loader_refuses_a_static_libstdcxx_build_before_loading_it(
    monkeypatch, tmp_path, built
):
    _fresh_loader(monkeypatch, tmp_path, built["static"], {"torch": torch.__version__})
    with pytest.warns(KernelLoadWarning, match=r"linked statically.*CXX=/usr/bin/g\+\+"):
        assert _loader.load() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _loader.load() is False  # tried once: no second warning
    assert "would crash the interpreter" in _loader.load_error()
    assert not _mapped(tmp_path / f"_C{SUFFIX}")


def test_a_truncated_binary_is_refused_before_loading(monkeypatch, tmp_path):
    data = _binary().read_bytes()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(_elf.ElfError, match="the file is truncated"):
        _elf.inspect(cut)
    _fresh_loader(monkeypatch, tmp_path, cut, {"torch": torch.__version__})
    with pytest.warns(KernelLoadWarning, match=r"is damaged .*truncated.*reinstall rl-kernels"):
        assert _loader.load() is False
    assert not _mapped(tmp_path / f"_C{SUFFIX}")


def test_a_binary_that_differs_from_its_build_record_is_refused(monkeypatch, tmp_path):
    record = {"torch": torch.__version__, "size": _binary().stat().st_size + 1}
    _fresh_loader(monkeypatch, tmp_path, _binary(), record)
    with pytest.warns(KernelLoadWarning, match=r"damaged \(expected \d+ bytes as built, got"):
        assert _loader.load() is False
    record = {"torch": torch.__version__, "sha256": "0" * 64}
    _fresh_loader(monkeypatch, tmp_path, _binary(), record)
    with pytest.warns(KernelLoadWarning, match=r"its SHA-256 differs from the build record"):
        assert _loader.load() is False


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"torch": "2.13.0", "cuda": nu', r"_build_info.json is damaged \(Expecting value"),
        ("[1, 2]", r"damaged \(expected a JSON object, got list\)"),
        (b"\xff\xfe\x00", r"_build_info.json is damaged"),
    ],
)
def test_a_corrupt_build_record_warns_and_falls_back(monkeypatch, tmp_path, content, match):
    _fresh_loader(monkeypatch, tmp_path, None, {})
    record = tmp_path / "_build_info.json"
    if isinstance(content, bytes):
        record.write_bytes(content)
    else:
        record.write_text(content)
    with pytest.warns(KernelLoadWarning, match=match):
        assert _loader.load() is False
    assert not _loader.loaded()
    assert _loader.built_torch_version() is None


def test_not_an_elf_file_is_reported():
    with pytest.raises(_elf.ElfError, match="ELF magic number"):
        _elf.inspect(PACKAGE / "__init__.py")
