"""What the readers of JSON-lines rollout files share: one record per line read with the user-file limits,
message text from a string or a list of content parts, tool calls from objects or their JSON text, and
numbers checked where they are read. Every problem is one :class:`~collapse_probe.errors.ConfigError`
line naming the file, the line and the field."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

TEXT_PART_TYPES = ("text", "input_text", "output_text")
"""Content parts that carry text (chat ``text``, Responses-API ``input_text`` / ``output_text``); other
parts (images, audio, files) carry none a reply class can read, and are left out of the text."""


def json_records(p: Path, expected: str) -> list[tuple[int, dict[str, object]]]:
    """``(line number, object)`` of every non-blank line of ``p``, read with
    :func:`collapse_probe.core._files.iter_json_lines`'s limits (a regular file, at most 16 MiB a line, nesting,
    long integers, lone surrogates, non-finite numbers). A line that is not a JSON object (a torn last
    line included) is one error naming the file and the line.

    Raises:
        ConfigError: the file is missing or a line is not a JSON object.
    """
    from collapse_probe.core._files import MissingFile, TornLastLine, iter_json_lines

    out: list[tuple[int, dict[str, object]]] = []
    try:
        for i, rec in iter_json_lines(p, expected=expected):
            if not isinstance(rec, dict):
                raise ConfigError(f"{p}: line {i}: expected a JSON object ({expected}), got {type(rec).__name__}")
            out.append((i, rec))
    except MissingFile:
        raise ConfigError(f"--from {p}: no such file; expected {expected}") from None
    except TornLastLine as exc:
        raise ConfigError(f"{p}: line {exc.line}: not valid JSON (the last line is cut off: the file is "
                          "incomplete)") from None  # fmt: skip
    if not out:
        raise ConfigError(f"{p}: no records; expected {expected}")
    return out


def text_of(content: Any, where: str) -> str:
    """The text of a message's content: a string, ``None`` (no text), or a list of content parts whose
    text parts are joined (other parts are left out).

    Raises:
        ConfigError: anything else, naming ``where``.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for k, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                if part.get("type", "text") in TEXT_PART_TYPES:
                    text = part.get("text")
                    if not isinstance(text, str):
                        raise ConfigError(f"{where}[{k}].text: expected a string, got {type(text).__name__}")
                    texts.append(text)
            else:
                raise ConfigError(f"{where}[{k}]: expected a content part (an object), got {type(part).__name__}")
        return "".join(texts)
    raise ConfigError(f"{where}: expected a string, null or a list of content parts, got {type(content).__name__}")


def tool_calls(calls: Any, where: str) -> tuple[tuple[str, str], ...]:
    """``(name, canonical arguments)`` of a message's tool calls: objects in OpenAI's shape
    (``{"function": {"name", "arguments"}}``) or flat (``{"name", "arguments"}``), or the JSON text of
    one (verifiers writes each call as its JSON text).

    Raises:
        ConfigError: a call that is neither, naming ``where`` and the call.
    """
    from collapse_probe.integrations.interop._taubench import tool_calls_of

    if isinstance(calls, list):
        parsed = []
        for k, c in enumerate(calls):
            if isinstance(c, str):
                try:
                    c = json.loads(c)
                except (ValueError, RecursionError):
                    raise ConfigError(f"{where}: tool_calls[{k}]: expected a tool call object or its JSON text, "
                                      "got text that is not JSON") from None  # fmt: skip
            parsed.append(c)
        calls = parsed
    return tool_calls_of(calls, where)


def number(value: Any, where: str) -> float | None:
    """``value`` as a float (a bool counts as 0 or 1), ``None`` for null.

    Raises:
        ConfigError: not a finite number, naming ``where``.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise ConfigError(f"{where}: expected a finite number or null, got {value!r}")


def ident(value: Any, where: str) -> str | None:
    """A task or record id as text (a string or an integer; ``None`` when absent).

    Raises:
        ConfigError: any other value, naming ``where``.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigError(f"{where}: expected a string or integer id, got {value!r}")
    return str(value)


def obj(value: Any, where: str, what: str, *, optional: bool = True) -> dict[str, object]:
    """``value`` when it is a JSON object; ``{}`` for null when ``optional``.

    Raises:
        ConfigError: anything else, naming ``where`` and ``what`` was expected.
    """
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected {what} (an object), got {type(value).__name__}")
    return value


def array(value: Any, where: str, what: str, *, optional: bool = True) -> list[Any]:
    """``value`` when it is a JSON array; ``[]`` for null when ``optional``.

    Raises:
        ConfigError: anything else, naming ``where`` and ``what`` was expected.
    """
    if value is None and optional:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected {what} (a list), got {type(value).__name__}")
    return value


def trials_in_order(convs: list[Any]) -> None:
    """Number the conversations of each task 0, 1, ... in file order where the file gives no trial."""
    seen: dict[tuple[Any, ...], int] = {}
    for c in convs:
        key = (c.task_id, c.group)
        n = seen.get(key, 0)
        seen[key] = n + 1
        if c.trial is None:
            c.trial = n
