"""Sphinx cross-reference roles (``:class:`~rl_objectives.ClipPPOLoss```) rendered as links.

The docstrings of the packages use Sphinx's roles; Markdown shows them literally. Two entry
points rewrite each role into an optional mkdocs-autorefs reference, which becomes a link to
the object's section of the API reference when the site documents it, and plain code when it
does not (a private helper, torch's ``Tensor``), without a warning:

- :class:`SphinxRoles`, a griffe extension (``mkdocs.yml``: the python handler's
  ``extensions``), rewrites the docstrings before mkdocstrings renders them, resolving a
  relative name (``:meth:`write_at```) in the scope of the object that carries the docstring;
- :func:`on_page_markdown`, an MkDocs hook, rewrites the pages (the package pages carry the
  packages' READMEs), where a name is taken as written.

``~`` shows the last component only, as in Sphinx; a leading ``.`` is dropped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import griffe

ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|mod|obj|data|exc|const|type):`(?P<tilde>~?)\.?(?P<target>[\w.]+)`"
)


def rewrite_roles(text: str, resolve: Callable[[str], str]) -> str:
    """Replaces each Sphinx role of ``text`` by an optional autorefs reference to
    ``resolve(target)``, titled like Sphinx (``~`` keeps the last component)."""

    def replace(match: re.Match) -> str:
        target = match["target"]
        title = target.rsplit(".", 1)[-1] if match["tilde"] else target
        identifier = html.escape(resolve(target), quote=True)
        return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'

    return ROLE.sub(replace, text)


def resolve_in_scope(obj: griffe.Object, target: str) -> str:
    """The full path ``target`` names as seen from ``obj``: its first component looked up among
    the members and imports of ``obj`` and then of each enclosing object; ``target`` itself
    when nothing there holds it (already a full path, or an object the site does not have)."""
    head, _, rest = target.partition(".")
    scope: griffe.Object | None = obj
    while scope is not None:
        found = None
        if head in scope.members:
            member = scope.members[head]  # an imported name is an alias: name its target
            found = member.target_path if member.is_alias else member.path
        elif head in scope.imports:
            found = scope.imports[head]
        if found is not None:
            return f"{found}.{rest}" if rest else found
        scope = scope.parent
    return target


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring into optional autorefs references."""

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.is_alias or obj.docstring is None:
            return
        docstring = obj.docstring
        if ":`" in docstring.value:
            docstring.value = rewrite_roles(
                docstring.value, lambda target: resolve_in_scope(obj, target)
            )


def on_page_markdown(markdown: str, **kwargs) -> str:
    return rewrite_roles(markdown, lambda target: target)
