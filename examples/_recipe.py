"""The examples' configuration: a typed dataclass per recipe, set from the command line,
saved with the run and reloadable to reproduce it.

Each example declares a ``Config`` dataclass whose fields are every knob of the run (with a
comment after each field; ``--help`` shows it). :func:`parse_config` builds one from:

- the dataclass defaults,
- then a saved run's ``config.json`` given with ``--config PATH`` (to reproduce or resume),
- then flags named after the fields (``--num-envs 16``, ``--no-plot``),
- then Hydra-style overrides (``num_envs=16 lr=1e-3 exp_name=null``).

:func:`save_config` writes ``config.json`` into the run's folder, so every run can be rerun
with ``uv run python examples/<name>.py --config runs/<exp>/config.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

C = TypeVar("C")

_NONE_WORDS = ("none", "null")
_TRUE_WORDS = ("1", "true", "yes", "on")
_FALSE_WORDS = ("0", "false", "no", "off")
_FIELD_COMMENT = re.compile(r"^\s+(\w+)\s*:[^#]*#\s*(.+?)\s*$")


def parse_config(
    config_cls: type[C], argv: list[str] | None = None, *, description: str | None = None
) -> C:
    """Builds ``config_cls`` from defaults, ``--config FILE``, flags and ``key=value`` overrides.

    Args:
        config_cls: the example's ``Config`` dataclass.
        argv: the command-line arguments (``sys.argv[1:]`` when ``None``).
        description: the first line of ``--help``.

    Returns:
        The config, with every field of the type its annotation names.

    Raises:
        SystemExit: ``--help`` was asked for, or an argument names no field or does not
            parse as the field's type (argparse prints the message and the usage).
    """
    hints = typing.get_type_hints(config_cls)
    fields = dataclasses.fields(config_cls)
    helps = _field_comments(config_cls)

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", type=Path)
    known, _ = pre.parse_known_args(argv)
    defaults = {f.name: f.default for f in fields}
    if known.config is not None:
        defaults.update(load_config(config_cls, known.config, as_dict=True))

    parser = argparse.ArgumentParser(
        description=description,
        epilog="Overrides: any field as key=value after the flags (Hydra's syntax), e.g. "
        "`num_envs=16 exp_name=null`. A run's config.json reruns it: --config PATH.",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="a config.json saved by an earlier run: its values replace the defaults below",
    )
    for field in fields:
        flag = "--" + field.name.replace("_", "-")
        kind = hints[field.name]
        help_text = f"{helps.get(field.name, '')} (default: {defaults[field.name]})".lstrip()
        if kind is bool:
            parser.add_argument(
                flag,
                dest=field.name,
                action=argparse.BooleanOptionalAction,
                default=defaults[field.name],
                help=help_text,
            )
        else:
            parser.add_argument(
                flag,
                dest=field.name,
                type=_parser_for(field.name, kind),
                default=defaults[field.name],
                metavar=_metavar(kind),
                help=help_text,
            )
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="field overrides")
    args = vars(parser.parse_args(argv))
    args.pop("config")
    for item in args.pop("overrides"):
        key, sep, raw = item.partition("=")
        if not sep or key not in hints:
            parser.error(
                f"override {item!r}: expected key=value with key one of "
                f"{sorted(hints)}; got key {key!r}."
            )
        try:
            args[key] = _parser_for(key, hints[key])(raw)
        except argparse.ArgumentTypeError as err:
            parser.error(f"override {item!r}: {err}")
    return config_cls(**args)


def save_config(cfg: Any, run_dir: str | Path) -> Path:
    """Writes ``cfg`` as ``run_dir/config.json`` (what ``--config`` reads back); returns the path."""
    path = Path(run_dir) / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dataclasses.asdict(cfg), indent=2, sort_keys=True) + "\n")
    return path


def load_config(config_cls: type[C], path: str | Path, *, as_dict: bool = False) -> Any:
    """Reads a ``config.json`` written by :func:`save_config` back into ``config_cls``.

    Raises:
        ValueError: the file names a field that ``config_cls`` does not have, or a value of
            another type than the field's.
    """
    hints = typing.get_type_hints(config_cls)
    values = json.loads(Path(path).read_text())
    if not isinstance(values, dict):
        raise ValueError(
            f"load_config: {path} holds a {type(values).__name__}, expected an object."
        )
    unknown = sorted(set(values) - set(hints))
    if unknown:
        raise ValueError(
            f"load_config: {path} names fields {unknown} that {config_cls.__name__} does not "
            f"have (its fields: {sorted(hints)})."
        )
    for key, value in values.items():
        if not _is_instance(value, hints[key]):
            raise ValueError(
                f"load_config: {path}: {key} must be {_metavar(hints[key])}, got {value!r}."
            )
        if _base_and_optional(hints[key])[0] is float and value is not None:
            values[key] = float(value)  # JSON writes 1.0 as 1
    return values if as_dict else config_cls(**values)


def _field_comments(config_cls: type) -> dict[str, str]:
    """The comment after each field's line in the class source (its ``--help`` text)."""
    try:
        source = inspect.getsource(config_cls)
    except (OSError, TypeError):
        return {}
    helps = {}
    for line in source.splitlines():
        match = _FIELD_COMMENT.match(line)
        if match:
            helps[match.group(1)] = match.group(2)
    return helps


def _base_and_optional(kind: Any) -> tuple[Any, bool]:
    """``float | None`` -> ``(float, True)``; ``int`` -> ``(int, False)``."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        members = [k for k in typing.get_args(kind) if k is not type(None)]
        if len(members) != 1:
            raise TypeError(f"_recipe: unsupported field type {kind!r}")
        return members[0], True
    return kind, False


def _metavar(kind: Any) -> str:
    base, optional = _base_and_optional(kind)
    if typing.get_origin(base) is typing.Literal:
        name = "{" + ",".join(map(str, typing.get_args(base))) + "}"
    else:
        name = getattr(base, "__name__", str(base)).upper()
    return f"{name}|null" if optional else name


def _parser_for(name: str, kind: Any):
    base, optional = _base_and_optional(kind)

    def parse(raw: str) -> Any:
        if optional and raw.lower() in _NONE_WORDS:
            return None
        if base is bool:
            if raw.lower() in _TRUE_WORDS:
                return True
            if raw.lower() in _FALSE_WORDS:
                return False
            raise argparse.ArgumentTypeError(f"{name}: expected true or false, got {raw!r}")
        if typing.get_origin(base) is typing.Literal:
            choices = typing.get_args(base)
            if raw not in choices:
                raise argparse.ArgumentTypeError(
                    f"{name}: expected one of {list(choices)}, got {raw!r}"
                )
            return raw
        try:
            return base(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name}: expected {_metavar(kind)}, got {raw!r}"
            ) from None

    parse.__name__ = _metavar(kind)  # argparse names the type in its messages
    return parse


def _is_instance(value: Any, kind: Any) -> bool:
    base, optional = _base_and_optional(kind)
    if value is None:
        return optional
    if typing.get_origin(base) is typing.Literal:
        return value in typing.get_args(base)
    if base is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, base)
