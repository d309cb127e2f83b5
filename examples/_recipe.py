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

Every value is checked before anything is built (:func:`check_config`): the rules of the common
fields are in :data:`FIELD_RULES`, an example adds its own (its env names, the relations
between its fields) in a ``RULES`` dict beside its ``Config``, and an integer field that no rule
names is a count (at least 1). A refused value names the field, what it allows and what it
got. This module imports no torch, so ``--help`` and a refused value answer in a fraction of a
second: each example reads its command line before its heavy imports.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import inspect
import json
import math
import re
import shutil
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

C = TypeVar("C")

_NONE_WORDS = ("none", "null")
_TRUE_WORDS = ("1", "true", "yes", "on")
_FALSE_WORDS = ("0", "false", "no", "off")
_FIELD_COMMENT = re.compile(r"^\s+(\w+)\s*:[^#]*#\s*(.+?)\s*$")


@dataclasses.dataclass(frozen=True)
class Rule:
    """What one field allows: ``test(value, cfg)`` and its description for messages and
    ``--help``; ``allows`` may name other fields in braces (``"at most {frames_per_batch}"``),
    filled from the config being checked."""

    allows: str
    test: Callable[[Any, Any], bool]


def at_least(low: float) -> Rule:
    """A number ``>= low`` (NaN and infinity refused)."""
    return Rule(f"a number >= {low}", lambda v, _: math.isfinite(v) and v >= low)


def above(low: float) -> Rule:
    """A number ``> low`` (NaN and infinity refused)."""
    return Rule(f"a number > {low}", lambda v, _: math.isfinite(v) and v > low)


def between(low: float, high: float, *, open_low: bool = False, open_high: bool = False) -> Rule:
    """A number in the interval from ``low`` to ``high``, each end closed unless opened."""
    text = f"{'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"

    def test(v: float, _: Any) -> bool:
        above_low = v > low if open_low else v >= low
        below_high = v < high if open_high else v <= high
        return math.isfinite(v) and above_low and below_high

    return Rule(f"a number in {text}", test)


def one_of(*values: Any) -> Rule:
    """One of ``values`` exactly."""
    return Rule(f"one of {list(values)}", lambda v, _: v in values)


def multiple_of(field: str) -> Rule:
    """A positive integer multiple of another integer field (``frames_per_batch`` of
    ``num_envs``: the collector steps every env the same number of times)."""
    return Rule(
        f"a positive multiple of {{{field}}}",
        lambda v, cfg: getattr(cfg, field) >= 1 and v >= 1 and v % getattr(cfg, field) == 0,
    )


def count_at_most(field: str) -> Rule:
    """An integer from 1 to another field's value (a minibatch of at most the batch)."""
    return Rule(f"an integer from 1 to {{{field}}}", lambda v, cfg: 1 <= v <= getattr(cfg, field))


COUNT = Rule("an integer >= 1", lambda v, _: v >= 1)
"""The rule of an integer field that no other rule names."""

FINITE = Rule("a finite number", lambda v, _: math.isfinite(v))

FIELD_RULES: dict[str, Rule] = {
    "seed": Rule("an integer >= 0", lambda v, _: v >= 0),
    "init_random_frames": Rule("an integer >= 0", lambda v, _: v >= 0),
    "lr": above(0),
    "model_lr": above(0),
    "actor_lr": above(0),
    "value_lr": above(0),
    "online_lr": above(0),
    "qmix_lr": above(0),
    "gamma": between(0, 1, open_low=True),
    "gae_lambda": between(0, 1),
    "lmbda": between(0, 1),
    "tau": between(0, 1, open_low=True),
    "clip_epsilon": above(0),
    "entropy_coeff": at_least(0),
    "critic_coeff": at_least(0),
    "max_grad_norm": above(0),
    "grad_clip": above(0),
    "eps_init": between(0, 1),
    "eps_end": between(0, 1),
    "eval_eps": between(0, 1),
    "exploration_noise": at_least(0),
    "temperature": above(0),
    "reward_scale": above(0),
    "target_return": FINITE,
    "target_reward": FINITE,
}
"""Rules of the fields several examples share; an example's own ``RULES`` override them."""


def parse_config(
    config_cls: type[C],
    argv: list[str] | None = None,
    *,
    description: str | None = None,
    rules: Mapping[str, Rule] | None = None,
) -> C:
    """Builds ``config_cls`` from defaults, ``--config FILE``, flags and ``key=value`` overrides,
    and checks every value (:func:`check_config`).

    Args:
        config_cls: the example's ``Config`` dataclass.
        argv: the command-line arguments (``sys.argv[1:]`` when ``None``).
        description: the first line of ``--help``.
        rules: the example's own rules (its ``RULES``), over :data:`FIELD_RULES`.

    Returns:
        The config, with every field of the type its annotation names and every value allowed.

    Raises:
        SystemExit: ``--help`` was asked for, or an argument names no field, does not parse as
            the field's type or is a value its rule refuses (argparse prints the message and
            the usage, exit status 2).
    """
    hints = typing.get_type_hints(config_cls)
    fields = dataclasses.fields(config_cls)
    helps = _field_comments(config_cls)
    all_rules = rules_for(config_cls, rules)

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", type=Path)
    known, _ = pre.parse_known_args(argv)
    defaults = {f.name: f.default for f in fields}
    if known.config is not None:
        try:
            defaults.update(load_config(config_cls, known.config, as_dict=True))
        except (OSError, ValueError) as err:
            pre.error(f"--config {known.config}: {err}")

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
        if field.name in all_rules:
            help_text += f" [{_allows(all_rules[field.name], None)}]"
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
            close = difflib.get_close_matches(key, hints, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            parser.error(
                f"override {item!r}: expected key=value with key one of "
                f"{sorted(hints)}; got key {key!r}.{hint}"
            )
        try:
            args[key] = _parser_for(key, hints[key])(raw)
        except argparse.ArgumentTypeError as err:
            parser.error(f"override {item!r}: {err}")
    cfg = config_cls(**args)
    try:
        check_config(cfg, rules)
    except ValueError as err:
        parser.error(str(err))
    return cfg


def rules_for(config_cls: type, rules: Mapping[str, Rule] | None = None) -> dict[str, Rule]:
    """The rule of every numeric field of ``config_cls``: the example's own ``rules``, else
    :data:`FIELD_RULES`, else :data:`COUNT` for an integer and :data:`FINITE` for a float; a
    field of another type has a rule only where one names it.

    Raises:
        ValueError: ``rules`` names a field that ``config_cls`` does not have.
    """
    rules = dict(rules or {})
    names = [field.name for field in dataclasses.fields(config_cls)]
    unknown = sorted(set(rules) - set(names))
    if unknown:
        raise ValueError(
            f"rules_for: rules name {unknown}, which {config_cls.__name__} does not have "
            f"(its fields: {names})."
        )
    hints = typing.get_type_hints(config_cls)
    out = {}
    for name in names:
        base = _base_and_optional(hints[name])[0]
        if name in rules:
            out[name] = rules[name]
        elif name in FIELD_RULES:
            out[name] = FIELD_RULES[name]
        elif base is int:
            out[name] = COUNT
        elif base is float:
            out[name] = FINITE
    return out


def check_config(cfg: Any, rules: Mapping[str, Rule] | None = None) -> None:
    """Checks every value of ``cfg`` against its rule (:func:`rules_for`); ``None`` passes.

    Args:
        cfg: an example's config.
        rules: the example's own rules (its ``RULES``).

    Raises:
        ValueError: the first refused value, naming the field, what it allows and what it got.
    """
    for name, rule in rules_for(type(cfg), rules).items():
        value = getattr(cfg, name)
        if value is not None and not rule.test(value, cfg):
            flag = "--" + name.replace("_", "-")
            raise ValueError(
                f"{name}: expected {_allows(rule, cfg)}, got {value!r}. "
                f"Set it with {flag} VALUE or {name}=VALUE."
            )


@contextlib.contextmanager
def new_run_dir(out_dir: str | Path, exp_name: str) -> Iterator[Path]:
    """Creates ``out_dir/exp_name`` for a run's outputs; if the block raises, removes what it
    created (``out_dir`` too when it made it), so a run that fails to start leaves nothing; an
    existing folder is kept."""
    path = Path(out_dir) / exp_name
    created = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    except BaseException:
        if created:
            shutil.rmtree(created[-1], ignore_errors=True)
        raise


def _allows(rule: Rule, cfg: Any) -> str:
    """The rule's description, with each ``{field}`` named and, given a config, its value."""

    def name(match: re.Match) -> str:
        field = match.group(1)
        return field if cfg is None else f"{field} ({getattr(cfg, field)!r})"

    return re.sub(r"\{(\w+)\}", name, rule.allows)


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
