"""Rewrites TorchRL imports in a user's code to this stack's packages.

Public names here follow TorchRL's, so most code moves by changing imports alone::

    from torchrl.envs import GymEnv, StepCounter, TransformedEnv
    # becomes
    from rl_core import StepCounter, TransformedEnv
    from rl_envs import GymEnv

The import map is data, ``tools/torchrl_map.toml``, shared with the test that checks every
public name of every package is placed in it and with MIGRATING.md's table. What the
rewrite does:

- ``from torchrl... import Name``: a name in ``[moved]`` is imported from its module here
  under the same name; a name in ``[renamed]`` under its new name, aliased to the name the
  code uses (``from rl_envs import EnvMetadata as EnvMetaData``), so the rest of the file runs.
- A TorchRL name the map does not know (nothing here implements it) is bound to a
  placeholder, ``Name = _torchrl_missing("torchrl.x.Name")``, and the small
  ``_torchrl_missing`` helper is written once near the top of the file: the file still
  imports (a test module still collects), and calling or instantiating the name raises
  ``NotImplementedError`` naming it, so only the code that uses it fails. Each is reported.
  ``--keep-missing`` leaves such names in a ``from torchrl... import`` line instead.
  Reading an attribute of the placeholder raises ``AttributeError``, except
  ``available_envs``, an empty list: what TorchRL's env classes give when their library is
  not installed, so a test parametrized over ``SomeEnv.available_envs`` collects none.
- A TorchRL module imported as a namespace (``from torchrl.data.replay_buffers import
  samplers``, ``import torchrl.envs.utils as u``, ``from torchrl.objectives.value import
  functional``) becomes the module here that holds every attribute the file uses on it
  (``import rl_buffers as samplers``) or, when those attributes live in several modules
  here, a ``SimpleNamespace`` of exactly those attributes.
- Code in a string literal (``subprocess.run([sys.executable, "-c", CODE])``) is rewritten
  the same way when the literal is one plain string (not an f-string, not implicitly
  concatenated); code in a string keeps unknown names in their ``from torchrl`` line (no
  helper is written into a string). A TorchRL import in an f-string or in a concatenated
  literal is reported with its line.
- ``import torchrl...`` without ``as``: each ``torchrl.a.b.Name`` chain the file reads becomes
  the name here (``torchrl.envs.GymEnv`` is ``rl_envs.GymEnv``, ``torchrl._utils.RL_WARNINGS``
  is ``False``), an absent name a placeholder; the statement becomes the imports those need.
  Chains naming nothing here (a private module) stay, and ``torchrl`` is bound to a
  placeholder, so only those uses fail. A file that reads no chain keeps the statement and
  it is reported (``--keep-missing`` keeps it too whenever a chain stays).
- ``[replaced]`` names (``logger``, ``rl_warnings``) are bound to the map's expression.
- ``from torchrl... import *`` is reported with its line, not rewritten: it needs a person.
- Attributes TorchRL code reads that this stack's objects do not have are reported with
  their line and the code to write instead (:data:`ATTRIBUTE_FIXES`): a spec's ``.space``
  (``env.action_spec.space.low`` is ``env.action_spec.low`` here) and an env's
  ``*_spec_unbatched`` other than the action's two (``env.observation_spec_unbatched`` is the
  spec indexed at one env, ``env.observation_spec[(0,) * len(env.batch_size)]``). They need a person too: the rewrite
  cannot know that the object is a spec or an env.

Usage::

    python tools/migrate_torchrl.py path/to/code [more paths]   # rewrites in place
    python tools/migrate_torchrl.py --check path/to/code        # exit 1 if a file would change
    python tools/migrate_torchrl.py --update-migrating          # MIGRATING.md's table from the map
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

MAP_PATH = Path(__file__).resolve().with_name("torchrl_map.toml")
MIGRATING_PATH = Path(__file__).resolve().parents[1] / "MIGRATING.md"
TABLE_MARKERS = ("<!-- import-map:start -->\n", "\n<!-- import-map:end -->")

MISSING_HELPER_NAME = "_torchrl_missing"
ABSENT_TABLE_NAME = "_TORCHRL_ABSENT"
MISSING_HELPER = '''\
# Written by tools/migrate_torchrl.py: TorchRL names with no counterpart in the rl stack are
# bound to _torchrl_missing(...) below; using one raises, naming it and, where the import map
# says, why it is absent (_TORCHRL_ABSENT; see MIGRATING.md).
def _torchrl_missing(name):
    """A placeholder class for a TorchRL name the rl stack does not have; using it raises."""
    message = (
        f"{name} has no counterpart in the rl stack: tools/migrate_torchrl.py bound it to a "
        "placeholder that raises when used (see MIGRATING.md)"
    )
    why = globals().get("_TORCHRL_ABSENT", {}).get(name)
    if why:
        message = f"{message}. Why: {why}"

    class _Meta(type):
        def __getattr__(cls, attr):
            if attr == "available_envs":
                return []  # (TorchRL's env classes list none when their library is missing)
            raise AttributeError(f"{name}.{attr}: {message}")

    class Missing(metaclass=_Meta):
        def __new__(cls, *args, **kwargs):
            raise NotImplementedError(message)

    Missing.__name__ = Missing.__qualname__ = name.rpartition(".")[2]
    return Missing
'''
ABSENT_MARKERS = ("<!-- absent:start -->\n", "\n<!-- absent:end -->")

SPEC_ATTRIBUTE = re.compile(r"(?:^|_)spec$")
"""A name that reads as a spec (``spec``, ``action_spec``, ``full_observation_spec``)."""

ATTRIBUTE_FIXES = {
    "space": "rl-core's specs have no `.space`: a Bounded spec holds `low` and `high`, a "
    "Categorical or OneHot spec `n`, on the spec itself",
    "spec_unbatched": "rl-core's envs have only `action_spec_unbatched` and "
    "`full_action_spec_unbatched`: index the spec's batch dims at one env",
}
"""What each TorchRL attribute the rewrite reports becomes here (see :func:`attribute_fix`)."""

_TORCHRL_IMPORT_LINE = re.compile(r"(?m)^[ \t]*(from[ \t]+torchrl\b|import[ \t]+torchrl\b)")


@dataclass(frozen=True)
class Target:
    """Where a TorchRL name lives here."""

    torchrl_module: str
    module: str
    name: str
    note: str = ""


@dataclass(frozen=True)
class Replacement:
    """A TorchRL name that becomes an expression here (``logger`` is the standard library's
    ``logging.getLogger("torchrl")``): ``module`` is imported (``""``: nothing) and the
    name is bound to ``expression``."""

    torchrl_module: str
    module: str
    expression: str
    note: str = ""


@dataclass
class ImportMap:
    """The parsed ``torchrl_map.toml``: TorchRL names to targets, names new here, the TorchRL
    modules whose names here all live in one module, TorchRL names bound to an expression
    here (``[replaced]``) and TorchRL names absent here with why (``[absent]``)."""

    targets: dict[str, Target]
    new: dict[str, tuple[str, str]]
    modules: dict[str, str] = field(default_factory=dict)
    replaced: dict[str, Replacement] = field(default_factory=dict)
    absent: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path = MAP_PATH) -> ImportMap:
        data = tomllib.loads(path.read_text())
        targets = {
            name: Target(tr, here, name) for name, (tr, here) in data.get("moved", {}).items()
        }
        for name, (tr, here, new_name, why) in data.get("renamed", {}).items():
            targets[name] = Target(tr, here, new_name, why)
        new = {name: (module, what) for name, (module, what) in data.get("new", {}).items()}
        replaced = {name: Replacement(*entry) for name, entry in data.get("replaced", {}).items()}
        absent = {name: (tr, why) for name, (tr, why) in data.get("absent", {}).items()}
        return cls(targets, new, dict(data.get("modules", {})), replaced, absent)

    def placed_names(self) -> set[str]:
        """Every name here the map places: targets of moved/renamed entries and new names."""
        return {t.name for t in self.targets.values()} | set(self.new)

    def why_absent(self, torchrl_name: str) -> str | None:
        """Why the TorchRL name (``torchrl.envs.IsaacGymEnv`` or ``IsaacGymEnv``) is absent
        here, from ``[absent]``; ``None`` when the map places it or says nothing."""
        name = torchrl_name.rpartition(".")[2]
        if name in self.targets or name in self.replaced:
            return None
        entry = self.absent.get(name)
        return None if entry is None else entry[1]

    def unaccounted(self, census: dict[str, list[str]]) -> list[str]:
        """``module.name`` of each TorchRL name of ``census`` (``{module: names}``, as in
        ``tools/torchrl_names.toml``) that the map neither places nor lists absent with a
        reason."""
        accounted = set(self.targets) | set(self.new) | set(self.replaced)
        accounted |= {name for name, (_, why) in self.absent.items() if why.strip()}
        return sorted(
            f"{module}.{name}"
            for module, names in census.items()
            for name in names
            if name not in accounted and f"{module}.{name}" not in self.modules
        )

    @cached_property
    def torchrl_modules(self) -> frozenset[str]:
        """Every TorchRL module the map knows: its entries' modules, their parents, [modules]."""
        known = set(self.modules) | {t.torchrl_module for t in self.targets.values()}
        known |= {r.torchrl_module for r in self.replaced.values()}
        for module in list(known):
            parts = module.split(".")
            known.update(".".join(parts[:i]) for i in range(1, len(parts)))
        return frozenset(known)

    def markdown_table(self) -> str:
        """The import table of MIGRATING.md, sorted by TorchRL module then name; then the
        TorchRL names bound to an expression here; then the TorchRL modules that move as a
        whole."""
        rows = ["| TorchRL | here | note |", "|---|---|---|"]
        for torchrl_name, t in sorted(
            self.targets.items(), key=lambda kv: (kv[1].torchrl_module, kv[0])
        ):
            rows.append(
                f"| `{t.torchrl_module}.{torchrl_name}` | `{t.module}.{t.name}` | {t.note} |"
            )
        for torchrl_name, r in sorted(
            self.replaced.items(), key=lambda kv: (kv[1].torchrl_module, kv[0])
        ):
            rows.append(f"| `{r.torchrl_module}.{torchrl_name}` | `{r.expression}` | {r.note} |")
        for torchrl_module, here in sorted(self.modules.items()):
            rows.append(f"| `{torchrl_module}` (module) | `{here}` | module import |")
        return "\n".join(rows)

    def absent_markdown(self) -> str:
        """MIGRATING.md's list of the TorchRL names absent here, grouped by TorchRL module (a
        name the map also places is left out: it is no longer absent)."""
        groups: dict[str, list[str]] = defaultdict(list)
        for name, (torchrl_module, why) in self.absent.items():
            if self.why_absent(name) is not None:
                groups[torchrl_module].append(f"- `{name}`: {why}")
        out = [
            "From `[absent]` in `tools/torchrl_map.toml`, by TorchRL module. The codemod binds "
            "each name to a placeholder that raises where it is used and quotes the reason."
        ]
        for torchrl_module in sorted(groups):
            out += ["", f"### `{torchrl_module}`", "", *sorted(groups[torchrl_module])]
        return "\n".join(out)


@dataclass
class Report:
    """What a rewrite of one file did and could not do."""

    path: str
    rewritten: int = 0
    placeholders: bool = True
    unknown: list[tuple[int, str]] = field(default_factory=list)
    unhandled: list[tuple[int, str]] = field(default_factory=list)
    strings: list[tuple[int, str]] = field(default_factory=list)
    attributes: list[tuple[int, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        fate = "bound to a placeholder that raises when used" if self.placeholders else "left as is"
        out = [
            (line, f"no rl-stack name for torchrl's {name}; {fate}") for line, name in self.unknown
        ]
        for line, text in self.unhandled:
            why = "a star import" if text.endswith("*") else "attribute access"
            out.append((line, f"`{text}` needs a person ({why} is not rewritten)"))
        out += self.strings
        out += self.attributes
        return [f"{self.path}:{line}: {text}" for line, text in sorted(out, key=lambda e: e[0])]


def _reads_as_spec(expr: ast.expr) -> bool:
    """``expr`` names a spec: ``action_spec``, ``env.action_spec``, ``spec["action"]``."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    name = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")
    return SPEC_ATTRIBUTE.search(name) is not None


def attribute_fix(node: ast.Attribute, parent: ast.AST | None) -> str | None:
    """The report of a TorchRL attribute this stack lacks, read at ``node`` (``parent`` is the
    node holding it), with the code to write instead; ``None`` for any other attribute."""
    owner = ast.unparse(node.value)
    if node.attr == "space" and _reads_as_spec(node.value):
        read = f"{owner}.space"
        fix = f"`{owner}.low`, `{owner}.high` or `{owner}.n`"
        if isinstance(parent, ast.Attribute) and parent.value is node:
            read, fix = f"{read}.{parent.attr}", f"`{owner}.{parent.attr}`"
        return f"`{read}` needs a person: {ATTRIBUTE_FIXES['space']}; write {fix}"
    if node.attr.endswith("_spec_unbatched") and "action" not in node.attr:
        spec = node.attr.removesuffix("_unbatched")
        fix = f"{owner}.{spec}[(0,) * len({owner}.batch_size)]"
        return (
            f"`{owner}.{node.attr}` needs a person: {ATTRIBUTE_FIXES['spec_unbatched']}; "
            f"write `{fix}`"
        )
    return None


def _is_torchrl(module: str | None) -> bool:
    return module is not None and (module == "torchrl" or module.startswith("torchrl."))


def _imports_torchrl(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(_is_torchrl(alias.name) for alias in node.names)
    return isinstance(node, ast.ImportFrom) and not node.level and _is_torchrl(node.module)


def _import_line(indent: str, module: str, names: list[str]) -> str:
    joined = ", ".join(names)
    line = f"{indent}from {module} import {joined}"
    if len(line) <= 100:
        return line
    body = "".join(f"{indent}    {n},\n" for n in names)
    return f"{indent}from {module} import (\n{body}{indent})"


def _call_line(indent: str, head: str, args: list[str]) -> str:
    line = f"{indent}{head}({', '.join(args)})"
    if len(line) <= 100:
        return line
    body = "".join(f"{indent}    {a},\n" for a in args)
    return f"{indent}{head}(\n{body}{indent})"


def _attribute_uses(tree: ast.AST) -> dict[str, set[str]]:
    """``{name: attributes}`` for every ``name.attribute`` expression in ``tree``."""
    uses: dict[str, set[str]] = defaultdict(set)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            uses[node.value.id].add(node.attr)
    return uses


def _code_in_string(value: str) -> tuple[str, bool] | None:
    """``(code, wrapped)`` when ``value`` is Python with a TorchRL import, else ``None``.

    Indented code (a literal written inside a function) is parsed under ``if True:``;
    ``wrapped`` says so, and the first line of ``code`` is that wrapper.
    """
    if "torchrl" not in value:
        return None
    for wrapped, code in ((False, value), (True, "if True:\n" + value)):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        return (code, wrapped) if any(_imports_torchrl(n) for n in ast.walk(tree)) else None
    return None


def _escape(text: str, quote: str) -> str:
    triple = len(quote) == 3
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote[0]:
            out.append("\\" + ch)
        elif ch in "\n\t" and triple:
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def _string_literal(segment: str, old: str, new: str) -> str | None:
    """The literal for ``new`` written like ``segment`` (the source of ``old``), or ``None``
    when ``segment`` is not one plain string literal (an implicit concatenation, bytes)."""
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(segment).readline)
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)
        ]
    except (tokenize.TokenError, SyntaxError):
        return None
    if len(tokens) != 1 or tokens[0].type != tokenize.STRING:
        return None
    match = re.fullmatch(r"([rRuU]?)('''|\"\"\"|'|\")(.*)\2", segment, re.DOTALL)
    if match is None:
        return None
    prefix, quote, body = match.groups()
    candidates = []
    if body == old:  # no escape sequences: write the new code the same way
        candidates.append(f"{prefix}{quote}{new}{quote}")
    if prefix.lower() != "r":
        candidates.append(f"{prefix}{quote}{_escape(new, quote)}{quote}")
    for candidate in candidates:
        try:
            if ast.literal_eval(candidate) == new:
                return candidate
        except (SyntaxError, ValueError):
            continue
    return None


class _Rewriter:
    """One file's rewrite: collects text edits and the report."""

    def __init__(self, source: str, import_map: ImportMap, report: Report) -> None:
        self.source = source
        self.map = import_map
        self.report = report
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.tree = ast.parse(source)
        self.uses = _attribute_uses(self.tree)
        self.edits: list[tuple[int, int, str]] = []
        self.needs_helper = False
        self.reasons: dict[str, str] = {}  # placeholder name -> why it is absent (the map's)
        self.in_chain: set[int] = set()  # inner nodes of torchrl.a.b chains (see torchrl_chains)
        self.chain_lines: tuple[list[str], bool] | None = None  # what `import torchrl.x` becomes

    def offset(self, lineno: int, col: int) -> int:
        """The character offset of an ast position (``col`` counts UTF-8 bytes)."""
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        return self.starts[lineno - 1] + len(line.encode()[:col].decode(errors="ignore"))

    def replace(self, node: ast.AST, text: str) -> None:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        self.edits.append((start, end, text))

    def replace_statement(self, node: ast.stmt, new_lines: list[str], indent: str) -> None:
        """Replaces a statement by ``new_lines`` (each starting with ``indent``); after other
        code on its line (``x = 1; from torchrl...``) they are joined with ``;``."""
        prefix = self.lines[node.lineno - 1].encode()[: node.col_offset]
        if prefix.strip():
            text = "; ".join(line[len(indent) :] for line in new_lines)
        else:  # the first line's indentation stays in place (it is before col_offset)
            text = "\n".join(new_lines)[len(indent) :]
        self.replace(node, text)

    def indent_of(self, node: ast.stmt) -> str:
        prefix = self.lines[node.lineno - 1][: node.col_offset]
        return prefix if prefix.isspace() or not prefix else " " * node.col_offset

    def missing(self, torchrl_name: str) -> str:
        """The placeholder call for a TorchRL name; its reason, if the map gives one, goes
        into the file's ``_TORCHRL_ABSENT`` table."""
        self.needs_helper = True
        why = self.map.why_absent(torchrl_name)
        if why is not None:
            self.reasons[torchrl_name] = why
        return f'{MISSING_HELPER_NAME}("{torchrl_name}")'

    def placeholder(self, indent: str, bound: str, torchrl_name: str) -> str:
        return f"{indent}{bound} = {self.missing(torchrl_name)}"

    def module_binding(
        self, torchrl_module: str, bound: str, indent: str, lineno: int
    ) -> list[str] | None:
        """Lines binding ``bound`` to what stands for ``torchrl_module`` here, or ``None``
        (leave the import) when nothing can stand for it."""
        resolved: dict[str, str | None] = {}  # attribute -> expression here (None: unknown)
        homes: set[str] = set()  # modules to import
        alias_of: set[str] = set()  # modules that could stand for the whole TorchRL module
        for attr in sorted(self.uses.get(bound, ())):
            sub = f"{torchrl_module}.{attr}"
            if sub in self.map.modules:  # a submodule used as an attribute
                resolved[attr] = self.map.modules[sub]
                homes.add(self.map.modules[sub])
                alias_of.add("")  # no module here has it as an attribute: a namespace
            elif attr in self.map.targets:
                target = self.map.targets[attr]
                resolved[attr] = f"{target.module}.{target.name}"
                homes.add(target.module)
                alias_of.add(target.module if target.name == attr else "")
            elif attr in self.map.replaced:
                replacement = self.map.replaced[attr]
                resolved[attr] = replacement.expression
                homes.update([replacement.module] if replacement.module else [])
                alias_of.add("")
            else:
                resolved[attr] = None
                self.report.unknown.append((lineno, sub))
        if not resolved:  # the module is not used as `name.attribute`: move it whole if known
            here = self.map.modules.get(torchrl_module)
            if here is not None:
                return [f"{indent}import {here}" + ("" if here == bound else f" as {bound}")]
            self.report.unknown.append((lineno, torchrl_module))
            if not self.report.placeholders:
                return None
            return [self.placeholder(indent, bound, torchrl_module)]
        if len(alias_of) == 1 and "" not in alias_of and None not in resolved.values():
            (here,) = alias_of
            return [f"{indent}import {here}" + ("" if here == bound else f" as {bound}")]
        lines = [f"{indent}import {module}" for module in sorted(homes)]
        lines.append(f"{indent}from types import SimpleNamespace as _SimpleNamespace")
        args = []
        for attr, expr in resolved.items():
            if expr is not None:
                args.append(f"{attr}={expr}")
            elif self.report.placeholders:
                args.append(f"{attr}={self.missing(f'{torchrl_module}.{attr}')}")
        lines.append(_call_line(indent, f"{bound} = _SimpleNamespace", args))
        return lines

    def rewrite_import(self, node: ast.Import) -> None:
        if not any(_is_torchrl(alias.name) for alias in node.names):
            return
        indent = self.indent_of(node)
        kept: list[str] = []
        new_lines: list[str] = []
        consumed = False  # a plain `import torchrl.x` whose every use was rewritten
        for alias in node.names:
            text = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
            if not _is_torchrl(alias.name):
                kept.append(text)
                continue
            if alias.asname is None:
                lines, keep = self.chain_imports(indent)
                if keep:
                    self.report.unhandled.append((node.lineno, f"import {alias.name}"))
                    kept.append(text)
                else:
                    consumed = True
                new_lines.extend(line for line in lines if line not in new_lines)
                continue
            binding = self.module_binding(alias.name, alias.asname, indent, node.lineno)
            if binding is None:
                kept.append(text)
            else:
                new_lines.extend(binding)
        if not new_lines and not consumed:
            return
        if kept:
            new_lines.insert(0, f"{indent}import {', '.join(kept)}")
        self.report.rewritten += 1
        if not new_lines:  # nothing left to import: the statement goes (`pass` in a block)
            self.replace(node, "pass" if indent else "")
            return
        self.replace_statement(node, new_lines, indent)

    def torchrl_chains(self) -> list[tuple[ast.Attribute, list[str]]]:
        """Each outermost ``torchrl.a.b...`` attribute chain of the file (outside f-strings),
        with its dotted parts."""
        found = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Attribute) or id(node) in self.in_chain:
                continue
            parts, inner = [], node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "torchrl":
                walk = node
                while isinstance(walk, ast.Attribute):  # its inner chains are not outermost
                    self.in_chain.add(id(walk.value))
                    walk = walk.value
                found.append((node, ["torchrl", *reversed(parts)]))
        return found

    def resolve_chain(self, parts: list[str]) -> tuple[int, str, str | None] | None:
        """``(k, expression, module to import)`` for the first ``k`` parts of a
        ``torchrl.a.b.Name...`` chain that stand for a name here, or ``None``."""
        for k in range(2, len(parts) + 1):
            module, attr = ".".join(parts[: k - 1]), parts[k - 1]
            if ".".join(parts[:k]) in self.map.torchrl_modules:
                continue
            target = self.map.targets.get(attr)
            if target is not None:
                return k, f"{target.module}.{target.name}", target.module
            replacement = self.map.replaced.get(attr)
            if replacement is not None:
                return k, replacement.expression, replacement.module or None
            here = self.map.modules.get(module)
            if here is not None and not attr.startswith("_"):  # not a private submodule
                return k, f"{here}.{attr}", here
            return None
        return None

    def chain_imports(self, indent: str) -> tuple[list[str], bool]:
        """For ``import torchrl.x`` (no ``as``): rewrites every ``torchrl.x.Name`` chain of the
        file to the name here (once per file) and returns the statement's new lines: the
        modules the chains need and, when some chains stay (a name nothing here has, a
        private module), ``torchrl`` bound to a placeholder, so the file imports and only
        those uses fail. The flag says to keep the statement too: the file reads no chain,
        or some stay and placeholders are off."""
        if self.chain_lines is not None:
            return self.chain_lines
        chains = self.torchrl_chains()
        if not chains:
            self.chain_lines = ([], True)
            return self.chain_lines
        homes: list[str] = []
        left = False
        for node, parts in chains:
            resolved = self.resolve_chain(parts)
            if resolved is None and isinstance(node.ctx, ast.Load) and self.report.placeholders:
                absent = next(
                    (k for k in range(2, len(parts) + 1) if self.map.why_absent(parts[k - 1])),
                    None,
                )
                if absent is not None:
                    resolved = (absent, self.missing(".".join(parts[:absent])), None)
                    self.report.unknown.append((node.lineno, ".".join(parts[:absent])))
            if resolved is None:
                left = True
                self.report.unknown.append((node.lineno, ".".join(parts)))
                continue
            k, expression, module = resolved
            sub = node
            for _ in range(len(parts) - k):
                sub = sub.value  # type: ignore[assignment]
            if not re.fullmatch(r"[\w.]+(\([^()]*\))?", expression):
                expression = f"({expression})"  # `lambda: False` read as `...()` or `.x`
            self.replace(sub, expression)
            if module is not None and module not in homes:
                homes.append(module)
        lines = [f"{indent}import {module}" for module in homes]
        keep = left and not self.report.placeholders
        if left and not keep:
            lines.append(self.placeholder(indent, "torchrl", "torchrl"))
        self.chain_lines = (lines, keep)
        return self.chain_lines

    def rewrite_import_from(self, node: ast.ImportFrom) -> None:
        module = node.module or "torchrl"
        if any(alias.name == "*" for alias in node.names):
            self.report.unhandled.append((node.lineno, f"from {module} import *"))
            return
        indent = self.indent_of(node)
        grouped: dict[str, list[str]] = defaultdict(list)
        kept: list[str] = []
        extra: list[str] = []
        plain: list[str] = []  # modules imported whole for [replaced] expressions
        for alias in node.names:
            bound = alias.asname or alias.name
            as_written = alias.name if alias.asname is None else f"{alias.name} as {bound}"
            sub = f"{module}.{alias.name}"
            target = self.map.targets.get(alias.name)
            replacement = self.map.replaced.get(alias.name)
            if target is None and replacement is not None:
                if replacement.module and replacement.module not in plain:
                    plain.append(replacement.module)
                extra.append(f"{indent}{bound} = {replacement.expression}")
                continue
            if target is None and sub in self.map.torchrl_modules:
                binding = self.module_binding(sub, bound, indent, node.lineno)
                if binding is None:
                    kept.append(as_written)
                else:
                    extra.extend(binding)
                continue
            if target is None:
                self.report.unknown.append((node.lineno, sub))
                if self.report.placeholders:
                    extra.append(self.placeholder(indent, bound, sub))
                else:
                    kept.append(as_written)
                continue
            grouped[target.module].append(
                target.name if bound == target.name else f"{target.name} as {bound}"
            )
        if not grouped and not extra:
            return
        new_lines = [f"{indent}import {module}" for module in plain]
        new_lines += [_import_line(indent, m, names) for m, names in sorted(grouped.items())]
        if kept:
            new_lines.append(_import_line(indent, module, kept))
        new_lines += extra
        self.replace_statement(node, new_lines, indent)
        self.report.rewritten += 1

    def rewrite_string(self, node: ast.Constant) -> None:
        value = node.value
        found = _code_in_string(value)
        if found is None:
            if _TORCHRL_IMPORT_LINE.search(value):
                self.report.strings.append(
                    (node.lineno, "a TorchRL import in a string that is not Python; not rewritten")
                )
            return
        code, wrapped = found
        inner = Report(self.report.path, placeholders=False)
        new_code = _Rewriter(code, self.map, inner).run()
        base = node.lineno - 1 - int(wrapped)  # an inner line number plus base: a file line
        for line, name in inner.unknown:
            self.report.strings.append(
                (base + line, f"no rl-stack name for torchrl's {name} in a code string; left as is")
            )
        for line, text in inner.unhandled:
            self.report.strings.append((base + line, f"`{text}` in a code string needs a person"))
        self.report.strings += [(base + line, text) for line, text in inner.strings]
        if new_code == code:
            return
        new_value = new_code.split("\n", 1)[1] if wrapped else new_code
        segment = ast.get_source_segment(self.source, node) or ""
        literal = _string_literal(segment, value, new_value)
        if literal is None:
            self.report.strings.append(
                (
                    node.lineno,
                    "TorchRL imports in a string that is not one plain literal; "
                    "not rewritten, needs a person",
                )
            )
            return
        self.replace(node, literal)
        self.report.rewritten += inner.rewritten
        self.report.strings.append(
            (node.lineno, f"rewrote {inner.rewritten} TorchRL import(s) in a code string")
        )

    def rewrite_fstring(self, node: ast.JoinedStr) -> None:
        text = "".join(
            v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
        if _TORCHRL_IMPORT_LINE.search(text):
            self.report.strings.append(
                (node.lineno, "a TorchRL import in an f-string; not rewritten, needs a person")
            )

    def helper_edit(self) -> tuple[int, int, str]:
        """Inserts the placeholder helper after the docstring and ``__future__`` imports."""
        after = 0
        for i, stmt in enumerate(self.tree.body):
            docstring = (
                i == 0
                and isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            )
            future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
            if not (docstring or future):
                break
            after = stmt.end_lineno or stmt.lineno
        at = self.starts[min(after, len(self.lines))]
        text = ("\n" if after else "") + MISSING_HELPER + "\n\n"
        if self.reasons:
            entries = "".join(f"    {k!r}: {v!r},\n" for k, v in sorted(self.reasons.items()))
            text += f"{ABSENT_TABLE_NAME} = {{\n{entries}}}\n\n\n"
        if at == len(self.source) and self.source and not self.source.endswith("\n"):
            text = "\n" + text
        return (at, at, text)

    def run(self) -> str:
        in_fstring = {
            id(part)
            for node in ast.walk(self.tree)
            if isinstance(node, ast.JoinedStr)
            for part in ast.walk(node)
            if part is not node
        }
        parents = {
            id(child): node for node in ast.walk(self.tree) for child in ast.iter_child_nodes(node)
        }
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute):
                fix = attribute_fix(node, parents.get(id(node)))
                if fix is not None:
                    self.report.attributes.append((node.lineno, fix))
            if isinstance(node, ast.Import):
                self.rewrite_import(node)
            elif isinstance(node, ast.ImportFrom):
                if not node.level and _is_torchrl(node.module):
                    self.rewrite_import_from(node)
            elif isinstance(node, ast.JoinedStr) and id(node) not in in_fstring:
                self.rewrite_fstring(node)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in in_fstring
            ):
                self.rewrite_string(node)
        if self.needs_helper and f"def {MISSING_HELPER_NAME}(" not in self.source:
            self.edits.append(self.helper_edit())
        out = self.source
        for start, end, text in sorted(self.edits, key=lambda e: (e[0], e[1]), reverse=True):
            out = out[:start] + text + out[end:]
        return out


def rewrite_source(
    source: str, import_map: ImportMap, path: str = "<string>", *, placeholders: bool = True
) -> tuple[str, Report]:
    """``source`` with its TorchRL imports rewritten, and the report of what was done.

    Args:
        source: Python source code.
        import_map: the map of TorchRL names.
        path: the file name used in the report.
        placeholders: bind TorchRL names the map does not know to a placeholder that raises
            when used (``False``: leave them in a ``from torchrl... import`` line).

    Raises:
        SyntaxError: ``source`` is not valid Python (nothing is rewritten).
    """
    report = Report(path, placeholders=placeholders)
    return _Rewriter(source, import_map, report).run(), report


PACKAGES = (
    "rl_core",
    "rl_envs",
    "rl_buffers",
    "rl_collectors",
    "rl_objectives",
    "rl_llm",
    "rl_kernels",
)


def public_names(packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Every public name the installed packages export: the ``__all__`` of each public module.

    A public module is the package or any module under it with no ``_``-prefixed part in its
    dotted path (``rl_objectives.trainers``, ``rl_core.modules.mlp``), whether or not the
    package re-exports it. Module objects and ``__version__`` are not names to place.

    Returns:
        ``{module path: names}``.
    """
    import importlib
    import pkgutil
    import types

    found: dict[str, set[str]] = {}
    for package in packages:
        root = importlib.import_module(package)
        modules = [root.__name__]
        for info in pkgutil.walk_packages(root.__path__, f"{root.__name__}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                modules.append(info.name)
        for name in modules:
            module = importlib.import_module(name)
            exported = getattr(module, "__all__", ())
            found[name] = {
                n
                for n in exported
                if n != "__version__" and not isinstance(getattr(module, n), types.ModuleType)
            }
    return found


def unplaced_names(import_map: ImportMap, exported: dict[str, set[str]]) -> list[str]:
    """``module.name`` of each exported public name that the map does not place."""
    placed = import_map.placed_names()
    return sorted(
        f"{module}.{name}" for module, names in exported.items() for name in names - placed
    )


def _between(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = markers
    head, found, rest = text.partition(start)
    if not found:
        raise ValueError(f"MIGRATING.md has no {start.strip()} marker; put the two markers back")
    _, _, tail = rest.partition(end)
    return f"{head}{start}{body}{end}{tail}"


def update_migrating(import_map: ImportMap, path: Path = MIGRATING_PATH) -> bool:
    """Writes the map's table and its absent list between MIGRATING.md's markers; returns
    whether the file changed."""
    text = path.read_text()
    updated = _between(text, TABLE_MARKERS, import_map.markdown_table())
    updated = _between(updated, ABSENT_MARKERS, import_map.absent_markdown())
    path.write_text(updated)
    return updated != text


def iter_python_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.py") if ".venv" not in p.parts))
        elif path.suffix == ".py":
            files.append(path)
        else:
            raise SystemExit(f"migrate_torchrl: {path} is neither a directory nor a .py file.")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories to rewrite")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a file would change"
    )
    parser.add_argument("--table", action="store_true", help="print MIGRATING.md's import table")
    parser.add_argument(
        "--update-migrating", action="store_true", help="write the table into MIGRATING.md"
    )
    parser.add_argument(
        "--keep-missing",
        action="store_true",
        help="leave TorchRL names with no counterpart in their `from torchrl` line "
        "(default: bind each to a placeholder that raises when used)",
    )
    parser.add_argument("--map", type=Path, default=MAP_PATH, help="the import map (TOML)")
    args = parser.parse_args(argv)
    import_map = ImportMap.load(args.map)
    if args.table:
        print(import_map.markdown_table())
        return 0
    if args.update_migrating:
        print("MIGRATING.md", "updated" if update_migrating(import_map) else "already up to date")
        return 0
    would_change = missing = for_a_person = 0
    for file in iter_python_files(args.paths):
        source = file.read_text()
        try:
            new, report = rewrite_source(
                source, import_map, str(file), placeholders=not args.keep_missing
            )
        except SyntaxError as err:
            print(
                f"{file}: not valid Python ({err.msg}, line {err.lineno}); skipped", file=sys.stderr
            )
            continue
        for line in report.lines():
            print(line, file=sys.stderr)
        missing += len(report.unknown)
        for_a_person += (
            len(report.unhandled)
            + len(report.attributes)
            + sum("needs a person" in text for _, text in report.strings)
        )
        if new != source:
            would_change += 1
            if not args.check:
                file.write_text(new)
            print(
                f"{'would rewrite' if args.check else 'rewrote'} {file}: {report.rewritten} import(s)"
            )
    if args.paths:
        fate = "left in `from torchrl` lines" if args.keep_missing else "bound to placeholders"
        print(
            f"migrate_torchrl: {would_change} file(s) {'to rewrite' if args.check else 'rewritten'}, "
            f"{missing} TorchRL name(s) with no counterpart here ({fate}), "
            f"{for_a_person} statement(s) that need a person"
        )
    return 1 if args.check and would_change else 0


if __name__ == "__main__":
    sys.exit(main())
