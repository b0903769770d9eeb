"""The text tool protocol for models without native tool calling (the embedded local models).

Each agent turn is one JSON object::

    {"name": "get_user_details", "arguments": {"user_id": "sara_doe_496"}}   # a tool call
    {"name": "respond", "content": "Could you give me your zip code?"}       # a message to the customer

Parsing is forgiving about form and strict about content: code fences, text before or after the
object, single quotes, Python literals (``True``/``None``), trailing commas, ``arguments`` given as
a JSON string, and the aliases ``tool``/``action``/``function`` (for ``name``) and
``args``/``parameters``/``kwargs`` (for ``arguments``) are accepted. A reply with no ``{`` at all is
read as a plain message to the customer. Anything else that cannot be read as one action is a
*malformed call*: the arena turns it into a tool error the agent sees, counted toward max errors.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RESPOND = "respond"

PROTOCOL_TEXT = (
    "Reply with exactly one JSON object and nothing else.\n"
    'To call a tool: {"name": "<tool name>", "arguments": {<argument>: <value>, ...}}\n'
    'To write to the customer: {"name": "respond", "content": "<your message>"}\n'
    "Call one tool at a time; the tool result comes back before your next turn."
)

_NAME_KEYS = ("name", "tool", "action", "function", "tool_name")
_ARG_KEYS = ("arguments", "args", "parameters", "kwargs", "input")
_FENCE = re.compile(r"```(?:json|JSON|python)?\s*(.*?)```", re.S)


@dataclass
class ParsedAction:
    """One parsed agent turn: a message (``name == "respond"``), a tool call, or a malformed reply."""

    name: str | None
    arguments: dict[str, object] | None = None
    """A tool call's arguments as the model wrote them (any JSON or Python literal values)."""
    content: str | None = None
    error: str | None = None
    """Set when the reply could not be read as one action (why, for the tool error)."""

    @property
    def is_message(self) -> bool:
        return self.error is None and self.name == RESPOND


def _balanced_object(text: str, start: int) -> str | None:
    """The ``{...}`` substring starting at ``start``, honouring quoted strings; ``None`` if unclosed."""
    blob, _ = _scan(text, start)
    return blob


def _close_truncated(text: str, start: int) -> str:
    """``text[start:]`` with the open string and brackets closed (a reply cut at ``max_tokens``)."""
    _, (quote, stack) = _scan(text, start)
    tail = text[start:].rstrip().rstrip("`").rstrip()
    if quote:
        tail += quote
    return tail.rstrip(",") + "".join("}" if b == "{" else "]" for b in reversed(stack))


def _scan(text: str, start: int) -> tuple[str | None, tuple[str | None, list[str]]]:
    stack: list[str] = []
    depth = 0
    quote: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
            stack.append(ch)
        elif ch in "}]":
            depth -= 1
            if stack:
                stack.pop()
            if depth == 0:
                return text[start : i + 1], (None, [])
    return None, (quote, stack)


def _loads_lenient(blob: str) -> Any:
    try:
        return json.loads(blob)
    except json.JSONDecodeError:
        pass
    cleaned = re.sub(r",\s*([}\]])", r"\1", blob)  # trailing commas
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        pass
    try:  # single quotes, True/False/None
        return ast.literal_eval(cleaned)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    pyish = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", cleaned)))
    try:
        return ast.literal_eval(pyish)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def extract_json_object(text: str) -> Any:
    """The first JSON(-like) object in ``text`` (inside a code fence if there is one), else ``None``."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        start = cand.find("{")
        while start != -1:
            blob = _balanced_object(cand, start)
            if blob is None:
                blob = _close_truncated(cand, start)
            obj = _loads_lenient(blob)
            if isinstance(obj, dict):
                return obj
            start = cand.find("{", start + 1)
    return None


def parse_action(text: str) -> ParsedAction:
    """Read one agent turn written in the text protocol (see the module docstring)."""
    stripped = (text or "").strip()
    if "{" not in stripped:
        return ParsedAction(RESPOND, content=stripped)
    obj = extract_json_object(stripped)
    if obj is None:
        return ParsedAction(None, error="could not parse a JSON action from the reply")
    name = next((obj[k] for k in _NAME_KEYS if k in obj), None)
    if name is None and len(obj) == 1 and RESPOND in obj:
        return ParsedAction(RESPOND, content=str(obj[RESPOND]))
    if not isinstance(name, str) or not name:
        return ParsedAction(None, error='the JSON action has no "name" (a tool name or "respond")')
    args: Any = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    if isinstance(args, str):
        parsed = _loads_lenient(args)
        if not isinstance(parsed, dict):
            return ParsedAction(name, error=f'"arguments" of {name} is not a JSON object')
        args = parsed
    if name == RESPOND:
        content = obj.get("content", obj.get("message", obj.get("text")))
        if content is None and isinstance(args, dict):
            content = args.get("content", args.get("message", args.get("text")))
        if not isinstance(content, str):
            return ParsedAction(RESPOND, error='a "respond" action needs "content" (a string)')
        return ParsedAction(RESPOND, content=content)
    if args is None:
        args = {k: v for k, v in obj.items() if k not in _NAME_KEYS}
    if not isinstance(args, dict):
        return ParsedAction(name, error=f'"arguments" of {name} must be a JSON object, got {type(args).__name__}')
    return ParsedAction(name, arguments=args)


def format_action(name: str, arguments: Mapping[str, object] | None = None, content: str | None = None) -> str:
    """The canonical text-protocol form of an action (used to show the agent its own past turns)."""
    if name == RESPOND:
        return json.dumps({"name": RESPOND, "content": content or ""}, ensure_ascii=False)
    return json.dumps({"name": name, "arguments": arguments or {}}, ensure_ascii=False)
