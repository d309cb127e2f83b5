"""Checkpoints of several components in one directory, verified on load: :class:`Checkpoint`,
:class:`CheckpointOptions`, :class:`GlobalRNGState` and :class:`CheckpointError`."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

#: The ``format`` entry of every manifest this module writes.
FORMAT = "rl-objectives-checkpoint"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: incomplete, damaged or not one; the message names
    the file."""


@dataclass(frozen=True)
class CheckpointOptions:
    """How one component of a :class:`Checkpoint` is loaded.

    Args:
        optional: a checkpoint without this component loads anyway (the component keeps its
            state). Defaults to ``False``: a missing component is an error.
        strict: passed to ``load_state_dict(strict=...)`` of ``nn.Module`` components.
            Defaults to ``True``.
    """

    optional: bool = False
    strict: bool = True


class GlobalRNGState:
    """The process's global random generators as a checkpoint component: torch's CPU generator,
    CUDA's (when initialised), NumPy's legacy global one and Python's ``random``.

    Examples:
        >>> import torch
        >>> from rl_objectives.trainers import GlobalRNGState
        >>> rng = GlobalRNGState()
        >>> state = rng.state_dict()
        >>> a = torch.rand(2)
        >>> rng.load_state_dict(state)
        >>> print(torch.equal(a, torch.rand(2)))
        True
    """

    def state_dict(self) -> dict[str, Any]:
        """The generators' states."""
        state: dict[str, Any] = {
            "torch": torch.get_rng_state(),
            "numpy": np.random.get_state(),  # noqa: NPY002 (the global generator is the state)
            "python": random.getstate(),
        }
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores the generators (CUDA's only when saved and available)."""
        for key in ("torch", "numpy", "python"):
            if key not in state_dict:
                raise KeyError(
                    f"GlobalRNGState.load_state_dict: the state lacks {key!r}; it holds "
                    f"{sorted(state_dict)}."
                )
        torch.set_rng_state(state_dict["torch"])
        np.random.set_state(state_dict["numpy"])  # noqa: NPY002
        random.setstate(state_dict["python"])
        if "cuda" in state_dict and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state_dict["cuda"])


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _is_dumpable(component: Any) -> bool:
    return callable(getattr(component, "dumps", None)) and callable(
        getattr(component, "loads", None)
    )


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """Reads and checks the manifest of the checkpoint directory ``path``.

    Raises:
        CheckpointError: no manifest (an incomplete or foreign directory), or one that is not
            a manifest of this format.
    """
    path = Path(path)
    file = path / MANIFEST
    if not file.is_file():
        raise CheckpointError(
            f"Checkpoint: {file} is missing: {path} is not a complete checkpoint (a save that "
            f"was interrupted leaves no manifest). Load another checkpoint."
        )
    try:
        manifest = json.loads(file.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"Checkpoint: {file} is damaged (not JSON: {err}).") from err
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(
            f"Checkpoint: {file} is not a manifest of an {FORMAT} (format "
            f"{manifest.get('format') if isinstance(manifest, dict) else None!r})."
        )
    if manifest.get("version") != FORMAT_VERSION:
        raise CheckpointError(
            f"Checkpoint: {file} has format version {manifest.get('version')!r}; this version "
            f"reads {FORMAT_VERSION}."
        )
    return manifest


class Checkpoint:
    """Saves and restores named components together, in one directory.

    A component is anything with ``state_dict()``/``load_state_dict()`` (modules, optimizers,
    schedulers, collectors, a :class:`~rl_objectives.trainers.Trainer`,
    :class:`GlobalRNGState`) or with ``dumps(dir)``/``loads(dir)`` (replay buffers, saved
    through their storage checkpointers). :meth:`save` writes::

        <path>/
            <name>.pt          torch.save(component.state_dict())
            <name>/            component.dumps(<path>/<name>)
            manifest.json      written last: format, metadata, every file's SHA-256

    into a temporary directory beside ``path`` that is renamed into place once complete, so a
    process killed mid-save leaves the previous checkpoint untouched and no half-written one
    under ``path``. :meth:`load` checks the manifest and every file's digest before touching
    any component: a damaged or truncated checkpoint is refused with a
    :class:`CheckpointError` naming the file. The ``.pt`` files are unpickled (states may
    hold TensorDicts): load only checkpoints you wrote.

    Args:
        **components: the components by name (letters, digits, ``_``, ``-``).

    Keyword Args:
        options: a :class:`CheckpointOptions` per component name (default: required, strict).

    Raises:
        TypeError: a component with neither interface.
        ValueError: no component, a bad name, or options for an unknown component.

    Examples:
        >>> import tempfile, torch
        >>> from rl_objectives.trainers import Checkpoint
        >>> net = torch.nn.Linear(2, 1)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Checkpoint(net=net).save(f"{tmp}/ckpt", metadata={"step": 3})
        ...     other = torch.nn.Linear(2, 1)
        ...     meta = Checkpoint(net=other).load(path)
        >>> print(meta, torch.equal(net.weight, other.weight))
        {'step': 3} True
    """

    def __init__(
        self, *, options: Mapping[str, CheckpointOptions] | None = None, **components: Any
    ) -> None:
        if not components:
            raise ValueError("Checkpoint: give at least one component (Checkpoint(model=net)).")
        for name, component in components.items():
            if not name.replace("_", "").replace("-", "").isalnum():
                raise ValueError(
                    f"Checkpoint: component name {name!r} must be letters, digits, '_' or '-'."
                )
            has_state = callable(getattr(component, "state_dict", None)) and callable(
                getattr(component, "load_state_dict", None)
            )
            if not (has_state or _is_dumpable(component)):
                raise TypeError(
                    f"Checkpoint: component {name!r} ({type(component).__name__}) has neither "
                    f"state_dict()/load_state_dict() nor dumps()/loads()."
                )
        options = dict(options or {})
        unknown = sorted(set(options) - set(components))
        if unknown:
            raise ValueError(
                f"Checkpoint: options for unknown components {unknown}; components are "
                f"{sorted(components)}."
            )
        self.components = dict(components)
        self.options = {name: options.get(name, CheckpointOptions()) for name in components}

    def save(self, path: str | os.PathLike, *, metadata: Mapping[str, Any] | None = None) -> Path:
        """Writes every component under the directory ``path`` (replacing a checkpoint there).

        Args:
            path: the checkpoint directory.
            metadata: JSON-serialisable facts stored in the manifest (step, metrics).

        Returns:
            ``path``.
        """
        path = Path(path)
        metadata = dict(metadata or {})
        try:
            json.dumps(metadata)
        except TypeError as err:
            raise TypeError(f"Checkpoint.save: metadata must be JSON-serialisable: {err}.") from err
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        entries: dict[str, dict[str, Any]] = {}
        for name, component in self.components.items():
            if _is_dumpable(component):
                component.dumps(tmp / name)
                files = sorted(p for p in (tmp / name).rglob("*") if p.is_file())
                kind = "dump"
            else:
                torch.save(component.state_dict(), tmp / f"{name}.pt")
                files = [tmp / f"{name}.pt"]
                kind = "state"
            entries[name] = {
                "kind": kind,
                "files": {str(f.relative_to(tmp)): _sha256(f) for f in files},
            }
        manifest = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "metadata": metadata,
            "components": entries,
        }
        with open(tmp / MANIFEST, "w") as f:
            json.dump(manifest, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
        return path

    @staticmethod
    def verify(path: str | os.PathLike) -> dict[str, Any]:
        """Checks the checkpoint at ``path`` (manifest and every file's digest); returns the
        manifest.

        Raises:
            CheckpointError: the first missing or damaged file, by name.
        """
        path = Path(path)
        manifest = read_manifest(path)
        for entry in manifest["components"].values():
            for rel, digest in entry["files"].items():
                file = path / rel
                if not file.is_file():
                    raise CheckpointError(
                        f"Checkpoint: {file} is missing from the checkpoint {path}."
                    )
                if _sha256(file) != digest:
                    raise CheckpointError(
                        f"Checkpoint: {file} is damaged (its SHA-256 differs from the "
                        f"manifest's); load another checkpoint."
                    )
        return manifest

    def load(
        self, path: str | os.PathLike, *, components: Collection[str] | None = None
    ) -> dict[str, Any]:
        """Verifies the checkpoint at ``path``, then restores the components into this one's.

        Args:
            path: a directory written by :meth:`save`.
            components: the names to restore; ``None`` restores every component of this
                :class:`Checkpoint`.

        Returns:
            The metadata saved with it.

        Raises:
            CheckpointError: the checkpoint is incomplete or damaged (the file is named), or
                lacks a required component.
            KeyError: ``components`` names a component this checkpoint does not have.
        """
        path = Path(path)
        names = list(self.components) if components is None else list(components)
        unknown = [n for n in names if n not in self.components]
        if unknown:
            raise KeyError(
                f"Checkpoint.load: unknown components {unknown}; this checkpoint has "
                f"{sorted(self.components)}."
            )
        manifest = self.verify(path)
        saved = manifest["components"]
        missing = [n for n in names if n not in saved and not self.options[n].optional]
        if missing:
            raise CheckpointError(
                f"Checkpoint: {path / MANIFEST} lists no component {missing} (it holds "
                f"{sorted(saved)}); mark them CheckpointOptions(optional=True) to skip them."
            )
        states: dict[str, Any] = {}
        for name in names:
            if name in saved and saved[name]["kind"] == "state":
                file = path / f"{name}.pt"
                try:
                    states[name] = torch.load(file, weights_only=False, map_location="cpu")
                except Exception as err:  # a corrupt pickle whose digest was forged
                    raise CheckpointError(f"Checkpoint: {file} cannot be read: {err}.") from err
        for name in names:
            if name not in saved:
                continue
            component = self.components[name]
            if saved[name]["kind"] == "dump":
                component.loads(path / name)
            elif isinstance(component, torch.nn.Module):
                component.load_state_dict(states[name], strict=self.options[name].strict)
            else:
                component.load_state_dict(states[name])
        return dict(manifest["metadata"])
