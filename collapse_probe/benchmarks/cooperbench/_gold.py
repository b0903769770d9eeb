"""A scripted "gold agent": applies the gold patch of whatever feature it is given, then submits.

The file is an ordinary ``scripted:`` model (see :mod:`collapse_probe.models.scripted`): one rule
per feature, keyed on the feature's ``**Title**:`` line in the task text (the first user message),
answering with one text-protocol bash call that applies the gold patch and submits; any other turn
(e.g. after an apply failure) just submits. It checks the arena end to end: gold + gold must score
what :func:`~collapse_probe.benchmarks.cooperbench.evaluate_pair` gives the gold pair.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

from collapse_probe.benchmarks.cooperbench._arena import SUBMIT
from collapse_probe.benchmarks.cooperbench._data import CooperTask
from collapse_probe.errors import ConfigError

_TAG = "GOLD_PATCH_EOF"


def apply_and_submit_command(patch: str) -> str:
    """A bash command that applies ``patch`` to the repository and, if that worked, submits."""
    if _TAG in patch:
        raise ConfigError(f"cooperbench: a gold patch contains the heredoc tag {_TAG}")
    body = patch if patch.endswith("\n") else patch + "\n"
    return f"git apply --whitespace=nowarn <<'{_TAG}' && echo {SUBMIT}\n{body}{_TAG}"


class _Response(TypedDict):
    text: str
    p: float


class _Rule(TypedDict):
    if_contains: list[str]
    responses: list[_Response]


class ScriptedAgentFile(TypedDict):
    """A scripted-model file (``scripted:`` spec): default ``responses`` and per-situation ``rules``."""

    responses: list[_Response]
    rules: list[_Rule]


def gold_agent_script(tasks: Iterable[CooperTask]) -> ScriptedAgentFile:
    """The scripted-model file content for the gold agent of ``tasks`` (titles must be unique)."""
    rules: list[_Rule] = []
    seen: dict[str, str] = {}
    for task in tasks:
        for f in task.features.values():
            key = f"**title**: {f.title}\n".casefold()
            if key in seen:
                raise ConfigError(f"cooperbench: feature title {f.title!r} is used by {seen[key]} and {f.path}")
            seen[key] = str(f.path)
            action = {"name": "bash", "arguments": {"command": apply_and_submit_command(f.gold_patch)}}
            rules.append({"if_contains": [key], "responses": [{"text": json.dumps(action), "p": 1.0}]})
    submit = {"name": "bash", "arguments": {"command": f"echo {SUBMIT}"}}
    return {"responses": [{"text": json.dumps(submit), "p": 1.0}], "rules": rules}


def write_gold_agent(path: str | Path, tasks: Iterable[CooperTask]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(gold_agent_script(tasks), indent=1) + "\n", encoding="utf-8")
    return p
