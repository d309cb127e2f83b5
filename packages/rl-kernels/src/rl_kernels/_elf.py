"""Reads what the loader must know about a shared library before ``dlopen`` touches it.

Two faults crash the interpreter instead of raising, so they are checked from the file's
headers first (standard library only: ``setup.py`` loads this module by path at build time):

- A truncated library: the dynamic loader maps the segments that the program headers name,
  and touching a page past the end of the file raises SIGBUS (on import, while relocating,
  or at the first op). :func:`inspect` checks that every header, table and loaded segment
  lies inside the file.
- A library that carries its own static copy of the C++ runtime while torch's libraries use
  the shared ``libstdc++.so``: a C++ exception thrown by a kernel (every argument check) and
  caught by torch crosses two runtimes and ends in SIGSEGV. :func:`cxx_runtimes` lists the
  C++ runtime libraries a library needs (its ``DT_NEEDED`` entries), and
  :func:`foreign_cxx_runtime` compares them with torch's.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

_PT_LOAD = 1
_PT_DYNAMIC = 2
_DT_NULL = 0
_DT_NEEDED = 1
_DT_STRTAB = 5
_DT_STRSZ = 10
# Shared C++ runtimes a torch build may link against (GCC's and LLVM's).
_CXX_RUNTIMES = ("libstdc++.so", "libc++.so")


class ElfError(ValueError):
    """The file is not a whole ELF shared library."""


@dataclass(frozen=True)
class ElfInfo:
    """What :func:`inspect` read: the file size and the ``DT_NEEDED`` library names."""

    size: int
    needed: tuple[str, ...]


@dataclass(frozen=True)
class _Segment:
    kind: int
    offset: int
    vaddr: int
    filesz: int


def _read(f, size: int, offset: int, length: int, what: str) -> bytes:
    if offset < 0 or length < 0 or offset + length > size:
        raise ElfError(
            f"its {what} (bytes {offset}..{offset + length}) lies past the end of the file "
            f"({size} bytes): the file is truncated"
        )
    f.seek(offset)
    data = f.read(length)
    if len(data) != length:
        raise ElfError(f"reading its {what} returned {len(data)} of {length} bytes")
    return data


def inspect(path: str | os.PathLike[str]) -> ElfInfo:
    """Checks that ``path`` is a whole ELF library and returns its needed libraries.

    Only the headers, the program and section header tables and the dynamic section are
    read, so this is cheap even for torch's largest libraries.

    Args:
        path: the shared library.

    Returns:
        Its size and its ``DT_NEEDED`` entries, in order.

    Raises:
        ElfError: not an ELF file, or a header, table or loaded segment lies past its end.
        OSError: the file cannot be read.

    Examples:
        >>> import sys, pathlib
        >>> from rl_kernels._elf import inspect
        >>> lib = pathlib.Path(sys.executable).resolve()
        >>> isinstance(inspect(lib).needed, tuple)
        True
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        ident = _read(f, size, 0, 16, "ELF identification")
        if ident[:4] != b"\x7fELF":
            raise ElfError("it does not start with the ELF magic number")
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ElfError(f"unknown ELF class {ident[4]} or byte order {ident[5]}")
        wide = ident[4] == 2
        end = "<" if ident[5] == 1 else ">"
        if wide:
            header = struct.unpack(end + "HHIQQQIHHHHHH", _read(f, size, 16, 48, "ELF header"))
        else:
            header = struct.unpack(end + "HHIIIIIHHHHHH", _read(f, size, 16, 36, "ELF header"))
        phoff, shoff = header[4], header[5]
        phentsize, phnum, shentsize, shnum = header[8], header[9], header[10], header[11]
        if shoff:
            _read(f, size, shoff, shentsize * shnum, "section header table")
        table = _read(f, size, phoff, phentsize * phnum, "program header table")
        segments = []
        for i in range(phnum):
            raw = table[i * phentsize : (i + 1) * phentsize]
            if wide:
                kind, _, offset, vaddr, _, filesz, _, _ = struct.unpack(end + "IIQQQQQQ", raw[:56])
            else:
                kind, offset, vaddr, _, filesz, _, _, _ = struct.unpack(end + "IIIIIIII", raw[:32])
            segments.append(_Segment(kind, offset, vaddr, filesz))
        for seg in segments:
            if seg.kind in (_PT_LOAD, _PT_DYNAMIC) and seg.offset + seg.filesz > size:
                raise ElfError(
                    f"a loaded segment (bytes {seg.offset}..{seg.offset + seg.filesz}) lies past "
                    f"the end of the file ({size} bytes): the file is truncated"
                )
        return ElfInfo(size, _needed(f, size, segments, wide, end))


def _needed(f, size: int, segments: list[_Segment], wide: bool, end: str) -> tuple[str, ...]:
    dynamic = next((s for s in segments if s.kind == _PT_DYNAMIC), None)
    if dynamic is None:
        return ()
    entry = 16 if wide else 8
    raw = _read(f, size, dynamic.offset, dynamic.filesz, "dynamic section")
    tags: list[tuple[int, int]] = []
    for i in range(len(raw) // entry):
        tag, value = struct.unpack(end + ("qQ" if wide else "iI"), raw[i * entry : (i + 1) * entry])
        if tag == _DT_NULL:
            break
        tags.append((tag, value))
    strtab = next((v for t, v in tags if t == _DT_STRTAB), None)
    strsz = next((v for t, v in tags if t == _DT_STRSZ), None)
    if strtab is None or strsz is None:
        return ()
    # DT_STRTAB is an address: find the loaded segment that holds it.
    for seg in segments:
        if seg.kind == _PT_LOAD and seg.vaddr <= strtab < seg.vaddr + seg.filesz:
            strings = _read(f, size, seg.offset + strtab - seg.vaddr, strsz, "string table")
            break
    else:
        raise ElfError("its dynamic string table is outside every loaded segment")
    names = []
    for tag, value in tags:
        if tag == _DT_NEEDED:
            stop = strings.find(b"\0", value)
            names.append(strings[value : stop if stop >= 0 else None].decode("utf-8", "replace"))
    return tuple(names)


def cxx_runtimes(needed: tuple[str, ...]) -> frozenset[str]:
    """The shared C++ runtime libraries among ``needed``, without version suffixes.

    Examples:
        >>> from rl_kernels._elf import cxx_runtimes
        >>> sorted(cxx_runtimes(("libc10.so", "libstdc++.so.6", "libc.so.6")))
        ['libstdc++.so']
    """
    return frozenset(
        runtime for name in needed for runtime in _CXX_RUNTIMES if name.startswith(runtime)
    )


def foreign_cxx_runtime(
    library: str | os.PathLike[str], torch_library: str | os.PathLike[str]
) -> str | None:
    """Why ``library`` does not share ``torch_library``'s C++ runtime, or None when it does.

    A library built by a compiler that links its own static ``libstdc++`` needs no shared C++
    runtime, while torch's libraries need ``libstdc++.so``: the two then hold separate copies
    of the runtime, and an exception that crosses them crashes the process.

    Args:
        library: the compiled extension.
        torch_library: one of torch's C++ libraries (``libc10.so``).

    Returns:
        A sentence naming both sets of runtimes, or None.

    Raises:
        ElfError, OSError: as :func:`inspect`.

    Examples:
        >>> import pathlib, torch
        >>> from rl_kernels._elf import foreign_cxx_runtime
        >>> c10 = next((pathlib.Path(torch.__file__).parent / "lib").glob("libc10.*"))
        >>> foreign_cxx_runtime(c10, c10) is None
        True
    """
    theirs = cxx_runtimes(inspect(torch_library).needed)
    ours = cxx_runtimes(inspect(library).needed)
    missing = theirs - ours
    if not missing:
        return None
    return (
        f"{Path(library).name} needs the C++ runtime {sorted(ours) or 'none (linked statically)'} "
        f"but torch's {Path(torch_library).name} needs {sorted(theirs)}: it was built by a "
        f"compiler whose C++ runtime is not torch's, and a C++ exception raised by a kernel "
        f"(every argument check) would crash the interpreter"
    )
