"""Version guards: an installed package checks the versions of what it depends on at import.

Each package of the stack is released and pinned on its own, so a user can end up with an
``rl-buffers`` built for one ``rl-core`` and another ``rl-core`` installed. The guard turns
that into one clear message at import instead of an ``AttributeError`` deep in a training
run. The ranges are read from the installed package metadata (the ``dependencies`` of each
``pyproject.toml``), so the declared range is the single source of truth.

Rules, for a dependency ``dep`` that package ``dist`` declares with a version range:

- the installed ``dep`` is outside the range: :class:`IncompatibleVersionError` (an
  ``ImportError``) naming both versions and the two ways to fix it;
- the installed ``dep`` is inside the range, but on a ``0.x`` minor newer than the range's
  lower bound: a :class:`CompatibilityWarning`, because ``0.x`` minors may break (semantic
  versioning) and ``dist`` was written against the older one;
- ``dist`` is not installed with metadata (a source checkout on ``sys.path``) or does not
  declare ``dep``: nothing is checked.

Siblings call :func:`check_rl_core` in their ``__init__``; ``rl_core`` itself checks torch and
tensordict with :func:`check_installed` before it imports them.

Examples:
    >>> from rl_core.compat import check_version
    >>> check_version("rl-buffers", "rl-core", "0.1.3", ">=0.1,<0.2")
    >>> try:
    ...     check_version("rl-buffers", "rl-core", "0.2.0", ">=0.1,<0.2")
    ... except ImportError as err:
    ...     print(str(err).splitlines()[0])
    rl-buffers needs rl-core>=0.1,<0.2, but rl-core 0.2.0 is installed.
"""

from __future__ import annotations

import importlib.metadata
import warnings

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


class IncompatibleVersionError(ImportError):
    """An installed dependency is outside the version range a package declares."""


class CompatibilityWarning(UserWarning):
    """An installed dependency is inside the declared range but on an untested 0.x minor."""


def declared_range(dist: str, dependency: str) -> SpecifierSet | None:
    """The version range installed package ``dist`` declares for ``dependency``.

    Args:
        dist: the distribution name of the installed package (``"rl-buffers"``).
        dependency: the distribution it depends on (``"rl-core"``).

    Returns:
        The specifier set of the first unconditional requirement on ``dependency``; ``None``
        when ``dist`` has no installed metadata or declares no such requirement.

    Examples:
        >>> str(declared_range("rl-core", "tensordict"))
        '<0.16,>=0.15.3'
        >>> declared_range("rl-core", "gymnasium") is None
        True
    """
    try:
        lines = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    wanted = canonicalize_name(dependency)
    for line in lines:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) != wanted:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an optional (extra) or platform-specific requirement
        return requirement.specifier
    return None


def check_version(dist: str, dependency: str, installed: str, declared: str | SpecifierSet) -> None:
    """Checks one installed version against one declared range (see the module rules).

    Args:
        dist: the package that declares the range, for the message.
        dependency: the package whose version is checked.
        installed: its installed version (``"2.13.0+cu130"`` and dev builds are accepted).
        declared: the range, as a specifier string or set.

    Raises:
        IncompatibleVersionError: ``installed`` is outside ``declared``.
    """
    spec = SpecifierSet(str(declared))
    try:
        version = Version(installed)
    except InvalidVersion:
        return  # a custom build with a non-PEP 440 version: nothing sound to compare
    # lower bounds first, as people write them: "rl-core>=0.1,<0.2"
    ordered = sorted((str(s) for s in spec), key=lambda s: (not s.startswith(">"), s))
    requirement = f"{dependency}{','.join(ordered)}"
    if not spec.contains(version, prereleases=True):
        raise IncompatibleVersionError(
            f"{dist} needs {requirement}, but {dependency} {installed} is installed.\n"
            f"Fix: install a matching {dependency} (pip install '{requirement}'), or upgrade "
            f"{dist} to a release that supports {dependency} {version.base_version} "
            f"(pip install -U {dist})."
        )
    floor = _lower_bound(spec)
    if (
        floor is not None
        and version.major == 0
        and floor.major == 0
        and version.minor > floor.minor
    ):
        warnings.warn(
            f"{dist} was written against {dependency} 0.{floor.minor} and declares {requirement}; "
            f"{dependency} {installed} is a newer 0.x minor, which may change behaviour. "
            f"Upgrade {dist} (pip install -U {dist}) if something breaks.",
            CompatibilityWarning,
            stacklevel=3,
        )


def check_dependency(dist: str, dependency: str, installed: str) -> None:
    """Checks ``installed`` against the range installed ``dist`` declares for ``dependency``.

    Nothing is checked when ``dist`` has no metadata or declares no range for ``dependency``.

    Raises:
        IncompatibleVersionError: the installed version is outside the declared range.

    Examples:
        >>> import torch
        >>> check_dependency("rl-core", "torch", torch.__version__)
    """
    declared = declared_range(dist, dependency)
    if declared is not None:
        check_version(dist, dependency, installed, declared)


def check_installed(dist: str, *dependencies: str) -> None:
    """Checks the installed versions of ``dependencies`` (read from their metadata).

    A dependency that is not installed as a distribution (a source build on ``sys.path``) is
    skipped; importing it is what fails then.

    Raises:
        IncompatibleVersionError: an installed version is outside the range ``dist`` declares.

    Examples:
        >>> check_installed("rl-core", "torch", "tensordict", "numpy")
    """
    for dependency in dependencies:
        try:
            installed = importlib.metadata.version(dependency)
        except importlib.metadata.PackageNotFoundError:
            continue
        check_dependency(dist, dependency, installed)


def check_rl_core(dist: str) -> None:
    """Checks the installed rl-core against the range sibling ``dist`` declares.

    A sibling package calls this first thing in its ``__init__``.

    Raises:
        IncompatibleVersionError: the installed rl-core is outside the declared range.

    Examples:
        >>> check_rl_core("rl-envs")
    """
    # rl_core.__version__, read without importing the package that imports this module
    check_dependency(dist, "rl-core", importlib.metadata.version("rl-core"))


def _lower_bound(spec: SpecifierSet) -> Version | None:
    floors = [
        Version(s.version)
        for s in spec
        if s.operator in (">=", "==", "~=", ">") and not s.version.endswith("*")
    ]
    return max(floors) if floors else None


__all__ = [
    "CompatibilityWarning",
    "IncompatibleVersionError",
    "check_dependency",
    "check_installed",
    "check_rl_core",
    "check_version",
    "declared_range",
]
