"""Flags generated from pydantic models: the pipeline configs and the benchmarks' ``Options``.

A field ``epsilon_star`` becomes ``--epsilon-star`` (or the name its
:class:`~collapse_probe.core._constraints.Flag` gives), parsed as the field's type, with the field's default
and its docstring as the help; a ``Literal`` or :class:`~collapse_probe.core._constraints.OneOf` field
shows its choices (the config refuses another value in one line naming the flag, not argparse's
usage block), a list field reads ``a,b`` or a JSON array, a mapping reads JSON, a number whose
default is not ``None`` reads ``none`` as ``None``, a boolean is a switch (``--no-exact`` for a
field that is on by default). The config model then checks the values (the constraints, in one line
naming the flag): nothing about a field is written twice.
"""

from __future__ import annotations

import argparse
import json
import re
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

ONLY_COMMAND: str | None = None
"""Set by :func:`collapse_probe.cli.main` to the subcommand the command line runs: only its parser gets
the flags generated from models (which import the config's and the benchmarks' modules); ``None``:
every parser does."""


def builds_flags(p: argparse.ArgumentParser) -> bool:
    """Whether subparser ``p`` gets its generated flags (it is the subcommand that runs, or any may)."""
    return ONLY_COMMAND is None or p.prog.rsplit(" ", 1)[-1] == ONLY_COMMAND


def add_model_options(
    p: argparse.ArgumentParser,
    target: str,
    fields: Sequence[str] | None = None,
    *,
    exclude: Collection[str] = (),
    required: Collection[str] = (),
    helps: Mapping[str, str] | None = None,
    defaults: Mapping[str, object] | None = None,
    mark_default: Collection[str] = (),
) -> None:
    """Add a flag for every field of the config model ``target`` (``"module:Class"``) in ``fields``
    (default: every field not in ``exclude``) that ``p`` lacks; ``$COLLAPSE_PROBE_*`` is applied to
    every flag afterwards (:func:`~collapse_probe.cli._env.apply_env`).

    ``required`` fields must be given (on the command line, ``$COLLAPSE_PROBE_*`` or ``--config``);
    ``helps`` replaces a field's help where the command line says it in its own terms (``{default}``
    is the field's default), ``defaults`` a default the command resolves itself (``None``: the command
    decides); a ``mark_default`` field's default is a :class:`Default`, told apart from a value given.
    Only the parser of the subcommand that runs gets the flags (the model's module is imported for
    them): see :data:`ONLY_COMMAND`.
    """
    from collapse_probe.core._constraints import Flag, OneOf

    if not builds_flags(p):
        return
    model = _load(target)
    have = {a.dest for a in p._actions}
    flags = {f: flag_of(f, i) for f, i in model.model_fields.items()}
    for name in fields if fields is not None else [f for f in model.model_fields if f not in exclude]:
        info = model.model_fields[name]
        if name in have:
            continue
        flag_meta = next((m for m in info.metadata if isinstance(m, Flag)), None)
        names = [flags[name], *(flag_meta.aliases if flag_meta is not None else ())]
        field_default = None if info.is_required() else info.get_default(call_default_factory=True)
        given_help = (helps or {}).get(name)
        text = given_help.format(default=field_default) if given_help else help_text(info.description or name, flags)
        default = None if name in required else (defaults or {}).get(name, field_default)
        if name in mark_default and isinstance(default, str):
            default = Default(default)
        choices = next((m.choices for m in info.metadata if isinstance(m, OneOf)), None) or literal_choices(
            info.annotation
        )
        metavar = flag_meta.metavar if flag_meta is not None else None
        add_flag(
            p, names, name, info.annotation, default, text, choices=choices, required=name in required, metavar=metavar
        )


def flag_of(name: str, info: Any) -> str:
    """The flag of config field ``name`` (its :class:`~collapse_probe.core._constraints.Flag`, else ``--name``)."""
    from collapse_probe.core._constraints import Flag

    meta = next((m for m in info.metadata if isinstance(m, Flag)), None)
    return meta.flag if meta is not None and meta.flag.startswith("--") else _dashed(name)


class Default(str):
    """A flag's default, told apart from the same text given by the user (a flag, an environment
    variable or a config-file key): ``audit --from`` audits the simulator and takes the benchmark's
    hooks a user names, not the defaults of a live audit."""


def config_fields(target: str, exclude: Collection[str] = ()) -> list[str]:
    """The fields of config model ``target`` (``"module:Class"``) but those in ``exclude``."""
    return [f for f in _load(target).model_fields if f not in exclude]


def _load(target: str) -> Any:
    import importlib

    module, _, name = target.partition(":")
    model = getattr(importlib.import_module(module), name)
    if not model.__pydantic_complete__:  # a field annotation names a class defined later in its module
        model.model_rebuild()
    return model


class FlagKeywords(TypedDict, total=False):
    """The keywords :func:`add_flag` gives ``add_argument``."""

    dest: str
    help: str
    default: object
    action: Literal["store_true", "store_false"] | type[argparse.Action]
    metavar: str
    required: bool
    type: Callable[[str], object]
    """The parser of the flag's text (a structured value's, or the field's scalar type)."""


def add_flag(
    p: argparse.ArgumentParser | Any,
    names: Sequence[str],
    dest: str,
    annotation: Any,
    default: Any,
    help: str,
    *,
    choices: Sequence[Any] | None = None,
    required: bool = False,
    metavar: str | None = None,
) -> None:
    """One flag for a value of type ``annotation`` (see the module docstring), marked ``from_model``."""
    kind = scalar_kind(annotation)
    if kind is bool and default is True and not names[0].startswith("--no-"):
        names = [f"--no-{names[0][2:]}", *names[1:]]  # a switch for a field that is on by default turns it off
    kw: FlagKeywords = {"dest": dest, "help": help, "default": default}
    if kind is bool:
        off = names[0].startswith("--no-")
        kw["action"] = argparse.BooleanOptionalAction if default is None else "store_false" if off else "store_true"
    elif choices:  # shown as argparse shows choices; checked by the config (one line naming the flag)
        kw["metavar"], kw["required"] = "{" + ",".join(map(str, choices)) + "}", required
    else:
        structured = structured_parser(annotation)
        metavar = metavar or (structured.metavar if structured else names[0][2:].upper().replace("-", "_"))
        kw["metavar"], kw["required"] = metavar, required
        parse: ListValue | JsonValue | NoneOr | None = structured
        if parse is None and kind in (int, float) and default is not None and _optional(annotation):
            parse = NoneOr(kind)  # a number that is on by default: `none` turns it off (--tis-cap none)
        if parse is not None or kind is not str:  # a str default keeps its class (a marked Default)
            kw["type"] = parse or kind
    action: Any = p.add_argument(*names, **kw)
    action.allowed = tuple(choices) if choices and kind is not bool else None  # what a file or variable may say
    action.from_model = True  # what the architecture test reads: no config field has a hand-written flag


def model_values(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The parsed values of the generated options ``names`` (the config's keywords)."""
    return {n: getattr(args, n) for n in names}


_REF = re.compile(r":attr:`([a-z][a-z0-9_]*)(?:=\"([^\"`]*)\")?`")


def help_text(doc: str, flags: Mapping[str, str] | None = None) -> str:
    """A field's docstring as help: one line, without reST quotes, lower-case start, no final period;
    a field of the model named as ``:attr:`lr``` or ``:attr:`decision="strict"``` reads as its flag
    (``--lr``, ``--decision strict``) when ``flags`` maps the model's fields to their flags."""

    def ref(m: re.Match[str]) -> str:
        name, value = m.group(1), m.group(2)
        shown = flags.get(name, name) if flags is not None else name
        return shown if value is None else f"{shown} {value}" if shown.startswith("--") else f'{shown}="{value}"'

    text = _REF.sub(ref, " ".join(doc.split())).replace("``", "").rstrip(".")
    for before in ("(", "; ", ". "):  # a field's None is the flag not given
        text = text.replace(f"{before}None: ", f"{before}{'D' if before == '. ' else 'd'}efault: ")
    first = text.split(" ", 1)[0]
    if len(first) > 1 and first[0].isupper() and first[1:].islower():
        text = text[0].lower() + text[1:]
    return text.replace("%", "%%")


def _dashed(name: str) -> str:
    return "--" + name.replace("_", "-")


def literal_choices(annotation: Any) -> tuple[str, ...] | None:
    """The allowed strings of a ``Literal[...]`` (or ``Literal[...] | None``) annotation."""

    for a in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(a) is typing.Literal and all(isinstance(v, str) for v in typing.get_args(a)):
            return typing.get_args(a)
    return None


class ListValue:
    """Parser of a list option's text: comma-separated items (``--topics math,art``) or a JSON array
    (``--topics '["a,b", "c"]'``); items of an ``int`` / ``float`` list are converted (argparse names the
    flag and the value it could not read)."""

    metavar = "A,B,..."
    comma_list = True

    def __init__(self, item: type) -> None:
        self.item = item
        self.__name__ = f"list of {item.__name__}"  # argparse: "invalid list of int value: 'x'"

    def __call__(self, text: str) -> list[Any]:
        text = text.strip()
        if text.startswith("["):
            value = JsonValue()(text)
            if not isinstance(value, list):
                raise argparse.ArgumentTypeError(
                    f"expected a JSON array or comma-separated values, got {short_text(text)}"
                )
            return value
        return [self.item(t.strip()) for t in text.split(",") if t.strip()]


def _optional(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in typing.get_args(
        annotation
    )


class NoneOr:
    """Parser of a number that may also be ``none`` (the field's ``None``), for a field whose default is
    a number: ``--tis-cap none``."""

    def __init__(self, kind: type) -> None:
        self.kind = kind
        self.__name__ = kind.__name__  # argparse: "invalid float value: 'x'"

    def __call__(self, text: str) -> Any:
        return None if text.strip().lower() == "none" else self.kind(text)


class JsonValue:
    """Parser of a structured option's text (a mapping or a nested model): JSON."""

    metavar = "JSON"
    __name__ = "JSON"

    def __call__(self, text: str) -> Any:
        return parse_json_value(text)


MAX_JSON_OPTION_CHARS = 1 << 20
"""Characters of a JSON option's text (``--sims '[...]'``, ``$COLLAPSE_PROBE_SIMS``): a few model specs or settings."""
MAX_JSON_OPTION_DEPTH = 32
"""Nesting of a JSON option's arrays and objects: option values nest two or three levels."""


def parse_json_value(text: str) -> Any:
    """A JSON option's value, refused in one message (argparse's ``type`` error, naming the flag) when
    it does not parse, is longer than :data:`MAX_JSON_OPTION_CHARS`, nests past
    :data:`MAX_JSON_OPTION_DEPTH` levels or holds an integer of more than 100 digits."""
    from collapse_probe.core._files import parse_json
    from collapse_probe.errors import ConfigError

    if len(text) > MAX_JSON_OPTION_CHARS:
        raise argparse.ArgumentTypeError(
            f"expected JSON of at most {MAX_JSON_OPTION_CHARS:,} characters; this is {len(text):,}"
        )
    depth = _bracket_depth(text)
    if depth > MAX_JSON_OPTION_DEPTH:  # before parsing: the JSON parser recurses once per level
        raise argparse.ArgumentTypeError(
            f"expected JSON nested at most {MAX_JSON_OPTION_DEPTH} levels (arrays and objects); this nests {depth:,}"
        )
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"expected JSON ({exc.msg} at position {exc.pos}), got {short_text(text)}"
        ) from None
    except ValueError:  # an integer too long to convert: parse_json names it
        pass
    try:
        return parse_json(text, "JSON", expected="an option value", max_depth=MAX_JSON_OPTION_DEPTH)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(f"{str(exc).removeprefix('JSON: ')}, got {short_text(text)}") from None


def _bracket_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in ``text`` outside JSON strings (a linear scan)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def short_text(text: str, keep: int = 60) -> str:
    """``repr(text)`` for a message, cut to ``keep`` characters with the full length named."""
    return repr(text) if len(text) <= keep else f"{text[:keep]!r}... ({len(text):,} characters)"


def structured_parser(annotation: Any) -> ListValue | JsonValue | None:
    """The parser of an option whose type is a list, tuple or set (:class:`ListValue`) or a mapping or
    model (:class:`JsonValue`); ``None`` for scalars (``X | None`` counts as ``X``)."""

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        if len(args) != 1:
            return None
        annotation = args[0]
    origin = typing.get_origin(annotation) or annotation
    if origin in (list, tuple, set, frozenset) or origin in (Sequence, typing.Sequence):
        items = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        item = items[0] if len(set(items)) == 1 and items[0] in (int, float) else str
        return ListValue(item)
    if origin is dict or (isinstance(origin, type) and hasattr(origin, "model_fields")):
        return JsonValue()
    return None


def scalar_kind(annotation: Any) -> type:
    """``bool``, ``int``, ``float`` or ``str``: what a flag of an option of this type parses (``X | None``
    as ``X``); values of other types are parsed by their model from the string."""

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if args and len(args) == 1 and typing.get_origin(annotation) is not typing.Literal:
        annotation = args[0]
    return annotation if annotation in (bool, int, float) else str


def add_benchmark_flags(
    p: argparse.ArgumentParser, benches: Sequence[Any], *, only: Collection[str] | None = None, title: str = ""
) -> None:
    """One flag per option field of ``benches`` that ``p`` lacks; a field several benchmarks share gets
    one flag whose help gives each benchmark's meaning. The benchmark's ``Options`` model checks the
    values when the arena is built, so every default here is ``None`` (the benchmark's own)."""
    have = {a.dest for a in p._actions}
    fields: dict[str, list[tuple[str, FieldInfo]]] = {}  # option -> (benchmark, its field) per benchmark
    for bench in benches:
        for name, info in bench.options.model_fields.items():
            if name not in have and (only is None or name in only):
                fields.setdefault(name, []).append((bench.name, info))
    if not fields:
        return
    group = p.add_argument_group(title) if title else p
    for name, infos in fields.items():
        info = infos[0][1]
        helps: dict[str, list[str]] = {}
        for bench_name, i in infos:
            helps.setdefault(i.description or name, []).append(bench_name)
        text = next(iter(helps)) if len(helps) == 1 else "; ".join(f"{', '.join(n)}: {t}" for t, n in helps.items())
        switch = info.annotation is bool and not info.is_required() and info.default is False
        default = False if switch else None  # the Options model gives the others their defaults
        add_flag(group, [_dashed(name)], name, info.annotation, default, text, choices=literal_choices(info.annotation))


def add_benchmark_options(p: argparse.ArgumentParser, name: str) -> None:
    """Add a flag for each option of benchmark ``name`` that ``p`` lacks (a plugin's own options).

    Each field ``room_type`` of the benchmark's ``Options`` model becomes ``--room-type`` (help: the
    field's description), with ``$COLLAPSE_PROBE_ROOM_TYPE`` and the ``--config`` key ``room-type``;
    the value is validated by the model when the arena is built (one line naming the flag). An
    unknown name adds nothing (the command then names it, with close matches).
    """
    import sys

    from collapse_probe.benchmarks._registry import get_benchmark
    from collapse_probe.core._plugins import refuse_clashing_options
    from collapse_probe.errors import CollapseProbeError

    try:
        bench = get_benchmark(name)
    except CollapseProbeError:
        return
    try:  # a plugin's option named like a flag of the command is refused, naming both
        refuse_clashing_options(p, bench, _shared_benchmark_options())
    except CollapseProbeError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    add_benchmark_flags(p, [bench], title=f"options of benchmark {name}")


def _shared_benchmark_options() -> set[str]:
    """Option fields a plugin benchmark shares with the built-in flags: every benchmark's own
    (``max_turns``), the shipped benchmarks' (``judge``) and the arena options commands keep."""
    from collapse_probe.benchmarks._plugin import BenchmarkOptions
    from collapse_probe.benchmarks._registry import BENCHMARKS, TRAIN_ARENA_OPTIONS, get_benchmark

    shipped = {f for n, t in BENCHMARKS.items() if isinstance(t, str) for f in get_benchmark(n).options.model_fields}
    return {*BenchmarkOptions.model_fields, *TRAIN_ARENA_OPTIONS, *shipped}
