"""The format of a published-trajectory file, told from its content (a renamed or re-suffixed file reads the
same): the first bytes for a zip (an inspect ``.eval`` log) or a JSON array (τ-bench trajectories), the
first line's record for a JSON-lines file, the top of the document for a pretty-printed JSON file.

Only the head of the file is read (its first 64 KiB, and the first line up to the JSONL line limit);
a file the head does not identify is left to the name (:func:`collapse_probe.pipelines.audit._published.format_of`),
and its reader says what is wrong with it, naming the line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from collapse_probe.benchmarks._registry import TAU2_FORMAT

HEAD_BYTES = 1 << 16
"""How much of a file the pretty-printed-JSON signatures look at."""


def _is_list(rec: dict[str, object], key: str) -> bool:
    return isinstance(rec.get(key), list)


RECORD_SIGNATURES: dict[str, Callable[[dict[str, object]], bool]] = {
    # verifiers traces.jsonl: an episode with its agents' traces
    "verifiers": lambda r: _is_list(r, "traces") and ("task" in r or "env" in r or "group" in r or "ok" in r),
    # verifiers legacy results.jsonl: a rollout of a dataset example
    # (earlier versions: the example's id as ``id``, with both prompt and completion)
    "verifiers-results": lambda r: (
        ("example_id" in r and ("prompt" in r or "completion" in r))
        or ("id" in r and "prompt" in r and "completion" in r and "messages" not in r)
    ),
    # NeMo-Gym rollouts.jsonl: a Responses-API request and its response
    "nemo-gym": lambda r: isinstance(r.get("responses_create_params"), dict),
    # a τ2 results file written on one line
    TAU2_FORMAT: lambda r: _is_list(r, "simulations") and ("info" in r or "tasks" in r),
    # an inspect eval log written as JSON on one line
    "inspect": lambda r: isinstance(r.get("eval"), dict) and ("samples" in r or "version" in r),
    # one conversation per line (collapse-probe's own records, generic chats)
    "jsonl": lambda r: _is_list(r, "messages"),
}
"""Format -> whether a file's first record is one of it, in the order they are tried (the first that
matches names the format)."""


def _document(head: str) -> str | None:
    """The format of a pretty-printed JSON document from its head: τ2 results hold at least two of
    ``simulations``, ``user_info`` and ``agent_info``; an inspect JSON log ``eval``, ``version`` and ``status``."""
    if sum(k in head for k in ('"simulations"', '"user_info"', '"agent_info"')) >= 2:
        return TAU2_FORMAT
    if '"eval"' in head and '"version"' in head and '"status"' in head:
        return "inspect"
    return None


def detect_format(path: str | Path) -> str | None:
    """The published format of ``path`` from its content; ``None`` when the content does not say (a missing
    file, something that is not a regular file, an empty file, a first line that is not a JSON object).

    A directory is τ2-bench's directory format (``results.json`` beside ``simulations/``).
    """
    from collapse_probe.benchmarks._registry import DIRECTORY_FORMAT
    from collapse_probe.core._files import MAX_LINE_BYTES

    p = Path(path)
    if p.is_dir():
        return DIRECTORY_FORMAT
    if not p.is_file():  # missing, a FIFO or a device: the reader refuses it in its own words
        return None
    try:
        with open(p, "rb") as f:
            head = f.read(HEAD_BYTES)
            f.seek(0)
            first = f.readline(MAX_LINE_BYTES + 1)
    except OSError:
        return None
    if head.startswith(b"PK\x03\x04"):
        return "inspect"
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text.startswith("["):
        return "taubench" if '"traj"' in text else None
    if not text.startswith("{"):
        return None
    try:
        rec = json.loads(first.decode("utf-8").lstrip("\ufeff"))
    except (ValueError, RecursionError):  # a pretty-printed document (or a broken first line)
        return _document(text)
    if not isinstance(rec, dict):
        return None
    return next((fmt for fmt, matches in RECORD_SIGNATURES.items() if matches(rec)), None)
