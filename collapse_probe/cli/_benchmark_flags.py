"""Flags from a benchmark's ``Options`` model, shared by the common options and the config-file layer
(both import this module; neither imports the other for it)."""

from __future__ import annotations

import argparse
import json
import types
import typing
from collections.abc import Collection, Sequence
from typing import Any

from collapse_probe.cli._env import env


def _add_option_flags(
    p: argparse.ArgumentParser, benches: Sequence[Any], *, only: Collection[str] | None = None, title: str = ""
) -> None:
    """One flag per option field of ``benches`` that ``p`` lacks; a field several benchmarks share gets
    one flag whose help gives each benchmark's meaning."""
    have = {a.dest for a in p._actions}
    fields: dict[str, list[tuple[str, Any]]] = {}
    for bench in benches:
        for name, info in bench.options.model_fields.items():
            if name not in have and (only is None or name in only):
                fields.setdefault(name, []).append((bench.name, info))
    if not fields:
        return
    group = p.add_argument_group(title) if title else p
    for name, infos in fields.items():
        dashed, info = name.replace("_", "-"), infos[0][1]
        helps: dict[str, list[str]] = {}
        for bench_name, i in infos:
            helps.setdefault(i.description or name, []).append(bench_name)
        help_text = (
            next(iter(helps))
            if len(helps) == 1
            else "; ".join(f"{', '.join(names)}: {text}" for text, names in helps.items())
        )
        default = None if info.is_required() else info.default
        choices = _literal_choices(info.annotation)
        if info.annotation is bool and default is False:
            group.add_argument(f"--{dashed}", action="store_true", default=env(dashed, False), help=help_text)
        elif _scalar_kind(info.annotation) is bool:
            group.add_argument(
                f"--{dashed}", action=argparse.BooleanOptionalAction, default=env(dashed, None, bool), help=help_text
            )
        elif choices:
            group.add_argument(f"--{dashed}", choices=choices, default=env(dashed, None), help=help_text)
        elif (parse := _structured_parser(info.annotation)) is not None:
            group.add_argument(
                f"--{dashed}", type=parse, default=env(dashed, None), help=help_text, metavar=parse.metavar
            )
        else:
            kind = _scalar_kind(info.annotation)
            group.add_argument(f"--{dashed}", type=kind, default=env(dashed, None, kind), help=help_text)


def _literal_choices(annotation: Any) -> tuple[str, ...] | None:
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

    def __init__(self, item: type) -> None:
        self.item = item
        self.__name__ = f"list of {item.__name__}"  # argparse: "invalid list of int value: 'x'"

    def __call__(self, text: str) -> list[Any]:
        text = text.strip()
        if text.startswith("["):
            value = JsonValue()(text)
            if not isinstance(value, list):
                raise argparse.ArgumentTypeError(f"expected a JSON array or comma-separated values, got {text!r}")
            return value
        return [self.item(t.strip()) for t in text.split(",") if t.strip()]


class JsonValue:
    """Parser of a structured option's text (a mapping or a nested model): JSON."""

    metavar = "JSON"
    __name__ = "JSON"

    def __call__(self, text: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"expected JSON ({exc.msg} at position {exc.pos}), got {text!r}") from None


def _structured_parser(annotation: Any) -> ListValue | JsonValue | None:
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


def _scalar_kind(annotation: Any) -> type:
    """``bool``, ``int``, ``float`` or ``str``: what a flag of an option of this type parses (``X | None``
    as ``X``); values of other types are parsed by the benchmark's ``Options`` model from the string."""

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if args and len(args) == 1 and typing.get_origin(annotation) is not typing.Literal:
        annotation = args[0]
    return annotation if annotation in (bool, int, float) else str


def add_benchmark_options(p: argparse.ArgumentParser, name: str) -> None:
    """Add a flag for each option of benchmark ``name`` that ``p`` lacks (a plugin's own options).

    Each field ``room_type`` of the benchmark's ``Options`` model becomes ``--room-type`` (help: the
    field's description), with ``$COLLAPSE_PROBE_ROOM_TYPE`` and the ``--config`` key ``room-type``;
    the value is validated by the model when the arena is built (one line naming the flag). An
    unknown name adds nothing (the command then names it, with close matches).
    """
    from collapse_probe.benchmarks._registry import get_benchmark
    from collapse_probe.errors import CollapseProbeError

    try:
        bench = get_benchmark(name)
    except CollapseProbeError:
        return
    _add_option_flags(p, [bench], title=f"options of benchmark {name}")
