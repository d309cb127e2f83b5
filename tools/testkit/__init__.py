"""Helpers the workspace's own test suites share (not shipped in any package).

Every package's tests check the same things about the package itself (its version metadata,
that its import loads no sibling, that its README example prints what it says) and several
start a local Ray instance. These helpers are repository tooling, not library code: the root
``pyproject.toml`` puts ``tools/`` on pytest's ``pythonpath``, so a test imports them as
``from testkit.package import ...`` in the workspace and in the isolated per-package
environments alike.
"""
