"""Shared tool machinery: tool declarations, invocation, results, typed-record coercion, ``calculate``.

A toolkit is a class whose public tool methods are declared with :func:`tool`. Arguments are passed
to the method as they arrive (no schema validation), so a wrong argument type fails inside the tool
with the host language's message, exactly as in the reference. Every failure becomes a tool result
``Error: <message>`` with ``error=True``; nothing raises out of :meth:`Toolkit.invoke`.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal

from pydantic import JsonValue

from collapse_probe.benchmarks.tau2._db import Database, TablesT, record_json

ToolKind = Literal["read", "write", "generic", "think"]


class ToolError(Exception):
    """A tool precondition failed; the message is the text after ``Error: ``."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool: name, kind, description and its parameters (name -> JSON schema), in call order."""

    name: str
    kind: ToolKind
    description: str
    params: tuple[tuple[str, dict[str, JsonValue]], ...]

    def openai_schema(self) -> dict[str, object]:
        """The OpenAI function-calling schema (``{"type": "function", "function": {...}}``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {n: dict(s) for n, s in self.params},
                    "required": [n for n, _ in self.params],
                },
            },
        }

    def signature(self) -> str:
        """Compact one-line signature for small-context prompts, e.g. ``get_user_details(user_id)``."""
        return f"{self.name}({', '.join(n for n, _ in self.params)})"


def tool(
    kind: ToolKind, description: str, **params: dict[str, JsonValue]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a toolkit method as a tool; ``params`` are the JSON schemas of its arguments, in order."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__tool_spec__ = ToolSpec(fn.__name__, kind, description, tuple(params.items()))  # type: ignore[attr-defined]
        return fn

    return deco


STR: dict[str, JsonValue] = {"type": "string"}
INT: dict[str, JsonValue] = {"type": "integer"}
NUM: dict[str, JsonValue] = {"type": "number"}
STR_LIST: dict[str, JsonValue] = {"type": "array", "items": {"type": "string"}}


def describe(schema: dict[str, JsonValue], description: str) -> dict[str, JsonValue]:
    """``schema`` (a JSON Schema) with its ``description``."""
    return {**schema, "description": description}


@dataclass
class ToolResult:
    """The result of one tool call: ``content`` as the agent sees it and whether it is an error."""

    content: str
    error: bool


class Toolkit(Generic[TablesT]):
    """Base class of a domain's agent toolkit over a copy-on-write :class:`Database`."""

    kind: str = ""
    specs: dict[str, ToolSpec] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.specs = {}
        for klass in reversed(cls.__mro__):
            for name, attr in vars(klass).items():
                spec = getattr(attr, "__tool_spec__", None)
                if spec is not None:
                    cls.specs[name] = spec

    def __init__(self, db: Database[TablesT]) -> None:
        self.db: Database[TablesT] = db

    def invoke(self, name: Any, arguments: Any) -> ToolResult:
        """Run tool ``name`` with ``arguments`` (a JSON object); never raises."""
        if not isinstance(name, str) or name not in self.specs:
            return ToolResult(f"Error: Tool '{name}' not found.", True)
        if not isinstance(arguments, dict):
            return ToolResult(f"Error: arguments of {name} must be a JSON object, got {type(arguments).__name__}", True)
        try:
            out = getattr(self, name)(**arguments)
        except Exception as exc:  # noqa: BLE001 - every tool failure is a result the agent sees
            return ToolResult(f"Error: {exc}", True)
        return ToolResult(out if isinstance(out, str) else record_json(out), False)

    def is_write(self, name: str) -> bool:
        spec = self.specs.get(name)
        return spec is not None and spec.kind == "write"

    # ---- generic tools, identical in both domains ------------------------------------------

    @tool(
        "generic",
        "Calculate the result of an arithmetic expression (digits, + - * / ( ) . and spaces); the result is rounded to 2 decimals.",
        expression=describe(STR, "The arithmetic expression, e.g. '2 * (350 - 122)'."),
    )
    def calculate(self, expression: str) -> str:
        if not all(c in "0123456789+-*/(). " for c in expression):
            raise ToolError("Invalid characters in expression")
        return str(round(float(_evaluate_arithmetic(expression)), 2))

    @tool(
        "generic",
        "Transfer the customer to a human agent, with a summary of the issue. Only when the request cannot be handled within the policy or the customer explicitly asks for a human.",
        summary=describe(STR, "A short summary of the customer's issue."),
    )
    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"


# ---- arithmetic for ``calculate``: Python semantics without ``eval`` -----------------------------

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_MAX_POW_BITS = 100_000
"""Refuse powers whose result would exceed this many bits (the only way the allowed alphabet can
exhaust memory or time); everything else follows Python exactly."""


def _evaluate_arithmetic(expression: str) -> Any:
    # compile() gives Python's own syntax-error texts ("(<string>, line 1)") for malformed input.
    tree = compile(expression, "<string>", "eval", ast.PyCF_ONLY_AST)
    return _eval_node(tree.body)  # type: ignore[attr-defined]


def _eval_node(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        v = _eval_node(node.operand)
        return +v if isinstance(node.op, ast.UAdd) else -v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval_node(node.left), _eval_node(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
            if right * max(abs(left).bit_length(), 1) > _MAX_POW_BITS:
                raise OverflowError("exponent too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Tuple):
        return tuple(_eval_node(e) for e in node.elts)
    if isinstance(node, ast.Call):
        f = _eval_node(node.func)
        raise TypeError(f"'{type(f).__name__}' object is not callable")
    raise ValueError("unsupported expression")


# ---- typed records (lax coercion as in the reference's record validation) ------------------------


class ValidationError(ValueError):
    """A typed-record validation failure, formatted like the reference's validation report."""

    def __init__(self, record: str, problems: list[tuple[str, str, Any]]) -> None:
        n = len(problems)
        lines = [f"{n} validation error{'s' if n != 1 else ''} for {record}"]
        for field, msg, value in problems:
            lines.append(field)
            lines.append(f"  {msg} [input_value={value!r}, input_type={type(value).__name__}]")
        super().__init__("\n".join(lines))


def _as_str(v: Any) -> tuple[Any, str | None]:
    return (v, None) if isinstance(v, str) else (v, "Input should be a valid string")


def _as_int(v: Any) -> tuple[Any, str | None]:
    if isinstance(v, bool):
        return int(v), None
    if isinstance(v, int):
        return v, None
    if isinstance(v, float):
        if v.is_integer():
            return int(v), None
        return v, "Input should be a valid integer, got a number with a fractional part"
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s), None
        except ValueError:
            try:
                f = float(s)
            except ValueError:
                return v, "Input should be a valid integer, unable to parse string as an integer"
            if f.is_integer():
                return int(f), None
            return v, "Input should be a valid integer, got a number with a fractional part"
    return v, "Input should be a valid integer"


def _as_float(v: Any) -> tuple[Any, str | None]:
    if isinstance(v, (bool, int, float)):
        return float(v), None
    if isinstance(v, str):
        try:
            return float(v.strip()), None
        except ValueError:
            return v, "Input should be a valid number, unable to parse string as a number"
    return v, "Input should be a valid number"


def _as_enum(allowed: tuple[str, ...]) -> Callable[[Any], tuple[Any, str | None]]:
    def conv(v: Any) -> tuple[Any, str | None]:
        if isinstance(v, str) and v in allowed:
            return v, None
        return v, "Input should be " + ", ".join(repr(a) for a in allowed[:-1]) + f" or {allowed[-1]!r}"

    return conv


STRING = _as_str
INTEGER = _as_int
FLOAT = _as_float
enum = _as_enum


Converter = Callable[[Any], tuple[Any, "str | None"]]
"""A field converter: value -> (converted value, error message or ``None``)."""


def build_record(record: str, fields: Sequence[tuple[str, Converter]], data: object) -> dict[str, object]:
    """Validate ``data`` (a mapping) into a record with ``fields`` in order; extra keys are ignored.

    Raises:
        ValidationError: listing every missing or mistyped field.
    """
    if not isinstance(data, dict):
        raise ValidationError(record, [("", "Input should be a valid dictionary or instance", data)])
    out: dict[str, object] = {}
    problems: list[tuple[str, str, Any]] = []
    for name, conv in fields:
        if name not in data:
            problems.append((name, "Field required", data))
            continue
        value, err = conv(data[name])
        if err is not None:
            problems.append((name, err, data[name]))
        out[name] = value
    if problems:
        raise ValidationError(record, problems)
    return out
