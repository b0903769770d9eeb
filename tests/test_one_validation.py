"""One validation mechanism: no hand-written type-and-bound check of a value outside
``collapse_probe/core/_constraints.py``.

An option, a parameter or a function argument refused with :class:`ConfigError` goes through
:func:`collapse_probe.core._constraints.check_value` (or a declared :func:`~collapse_probe.core._constraints.param`),
so every refusal names the flag, the allowed values and the value received in one wording. The check
below looks for the hand-written form -- ``if isinstance(x, bool) or not isinstance(x, int ...): raise
ConfigError(...)`` -- and fails on any site that is not in :data:`ALLOWED` with its reason.

Checks of the same shape that do not refuse with :class:`ConfigError` are readers of data, not of
options, and are outside the pattern: they skip a value or describe what is wrong with a record
(``core/_records.py``, ``core/_proc.py``, ``trainers/llm.py`` ``step_problem``, ``benchmarks/tau2/_db.py``,
``cli/_config.py`` reading a config file through its ``bad`` helper that names the file and the key,
``report/runs.py``, ``dashboard/app.py``, ``integrations/interop/_card.py``).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from collapse_probe.errors import ConfigError

PACKAGE = Path(__file__).resolve().parents[1] / "collapse_probe"
MECHANISM = {"core/_constraints.py", "core/limits.py"}  # the mechanism itself and its older integer helpers

ALLOWED: dict[tuple[str, str], str] = {
    # (path relative to the package, enclosing function): why the check stays hand-written
    ("integrations/interop/_jsonl.py", "_conversation_key"): (
        "data read from a published JSONL file: the message names the file, the line and the field"
    ),
    ("integrations/interop/_taubench.py", "read_taubench"): (
        "data read from a tau-bench trajectories file: the message names the file, the record and the field"
    ),
    ("integrations/interop/_tau2.py", "_temperature"): (
        "data read from a tau2 results file: the message names the file and the field path"
    ),
    ("integrations/monitor/_args.py", "check_rewards"): (
        "values a training loop hands the monitor each step (rewards, possibly numpy or torch scalars): the "
        "message names the argument and the position of the bad value"
    ),
    ("integrations/monitor/_args.py", "check_turn"): (
        "values a training loop hands the monitor each turn: the message names the argument and what it got"
    ),
    ("integrations/interop/_rundata.py", "checked_number"): (
        "data read back from a run's record files, which their own check already passed: the message names the field"
    ),
    ("benchmarks/p4g/__init__.py", "_check_persona"): (
        "data read from a persona file: the message names the file, the line and the persona"
    ),
    ("models/scripted.py", "_parse_dist"): (
        "data read from a scripted-model file: the message names the file and the JSON path and shortens the value"
    ),
    ("models/scripted.py", "load_scripted"): (
        "data read from a scripted-model file: the message names the file and the field and shortens the value"
    ),
    ("models/_usage.py", "read_usage_file"): (
        "data read from a usage file: the message names the file, the entry and the field and shortens the value"
    ),
    ("integrations/interop/_chat.py", "ident"): (
        "data read from a published chat file: a task or record id, the message names the file and the record"
    ),
    ("integrations/interop/_nemo_gym.py", "_trajectory"): (
        "data read from a NeMo Gym rollouts file: the message names the file, the record and the field"
    ),
    ("integrations/interop/_nemo_gym.py", "_rollout"): (
        "data read from a NeMo Gym rollouts file: the message names the file, the record and the field"
    ),
    ("integrations/interop/_verifiers.py", "_branch"): (
        "data read from a verifiers traces file: a node's parent index, the message names the file and the node"
    ),
    ("pipelines/compare.py", "_crossplay_source"): (
        "data read from a run's conversations.jsonl: the message names the file, the record and the field"
    ),
    ("metrics/_meaning_material.py", "_field"): (
        "data read from the shipped meaning material (pairs.jsonl, states.jsonl): the message names the file, the line and the field"
    ),
    ("metrics/estimators.py", "exact_class_distribution"): (
        "data: one log-probability of a model's answer distribution (-inf allowed), not an option"
    ),
}


def _is_bool_isinstance(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Name)
        and node.args[1].id == "bool"
    )


def _is_not_isinstance(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.Not)
        and isinstance(node.operand, ast.Call)
        and isinstance(node.operand.func, ast.Name)
        and node.operand.func.id == "isinstance"
    )


def _raises_config_error(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                name = exc.id if isinstance(exc, ast.Name) else exc.attr if isinstance(exc, ast.Attribute) else ""
                if name == "ConfigError":
                    return True
    return False


def hand_written_checks(source: str) -> list[tuple[int, str]]:
    """``(line, enclosing function)`` of every ``if isinstance(x, bool) or not isinstance(x, ...)``
    whose body raises :class:`ConfigError`."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.If):
                parts = list(ast.walk(child.test))
                negated = {id(p.operand) for p in parts if _is_not_isinstance(p)}
                if (
                    any(_is_bool_isinstance(p) and id(p) not in negated for p in parts)
                    and any(_is_not_isinstance(p) and not _is_bool_isinstance(p.operand) for p in parts)
                    and _raises_config_error(child.body)
                ):
                    found.append((child.lineno, func))
            visit(child, name)

    visit(ast.parse(source), "<module>")
    return found


def _sites() -> list[tuple[str, int, str]]:
    sites = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(PACKAGE / "dashboard").rglob("*.py")]):
        if path.name in MECHANISM and path.parent == PACKAGE:
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        sites += [(rel, line, func) for line, func in hand_written_checks(path.read_text(encoding="utf-8"))]
    return sites


def test_no_hand_written_value_check_outside_the_constraints() -> None:
    found = [f"collapse_probe/{rel}:{line} ({func})" for rel, line, func in _sites() if (rel, func) not in ALLOWED]
    assert not found, (
        "hand-written value checks; use collapse_probe.core._constraints.check_value(value, flag, [Integer(1)]) "
        "or add the site to ALLOWED with the reason:\n" + "\n".join(found)
    )


def test_every_allowed_site_still_exists() -> None:
    present = {(rel, func) for rel, _, func in _sites()}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"ALLOWED names sites that no longer hold a hand-written check: {stale}"


def test_the_check_finds_the_hand_written_form() -> None:
    bad = (
        "def f(k):\n"
        "    if isinstance(k, bool) or not isinstance(k, int) or k < 2:\n"
        "        raise ConfigError(f'k must be >= 2, got {k!r}')\n"
        "class C:\n"
        "    def __init__(self, n):\n"
        "        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, float)) or n < 0):\n"
        "            raise errors.ConfigError('n')\n"
    )
    assert hand_written_checks(bad) == [(2, "f"), (6, "__init__")]


def test_the_check_leaves_other_forms_alone() -> None:
    fine = (
        "def f(v):\n"
        "    if isinstance(v, bool) or not isinstance(v, int):\n"
        "        return None\n"  # a reader that skips a value, not a refusal
        "    if not isinstance(v, int):\n"
        "        raise ConfigError('v')\n"  # no bool exclusion: not the integer-check form
        "    if not isinstance(v, bool):\n"
        "        raise ConfigError('v')\n"  # a bool is wanted: not the integer-check form
        "    check_value(v, '--v', [Integer(1)])\n"
    )
    assert hand_written_checks(fine) == []


# ------------------------------------------------------------------------------------- backend options
# A backend's options are the fields of its options model (collapse_probe/models/_options.py), a Config
# like every other: a factory parses them first and reads typed fields, never the raw keyword mapping.

SHIPPED_BACKENDS = (
    "local",
    "hf",
    "vllm",
    "openai",
    "openai-compatible",
    "azure",
    "anthropic",
    "bedrock",
    "vertex-anthropic",
    "google",
    "vertex",
    "litellm",
    "scripted",
)


def _factory(prefix: str):
    import importlib

    from collapse_probe.models._registry import BACKENDS

    target = BACKENDS[prefix]
    if isinstance(target, str):
        module, _, name = target.partition(":")
        return getattr(importlib.import_module(module), name)
    return target


def raw_option_reads(source: str) -> list[tuple[int, str]]:
    """``(line, function)`` of every read of a ``**options`` mapping (``options.get(...)``,
    ``options[...]``) in a function that takes it: a value used without its options model's check."""
    found: list[tuple[int, str]] = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or func.args.kwarg is None:
            continue
        kwarg = func.args.kwarg.arg
        for node in ast.walk(func):
            target = node.value if isinstance(node, ast.Subscript) else None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                target = node.func.value
            if isinstance(target, ast.Name) and target.id == kwarg:
                found.append((node.lineno, func.name))
    return found


def test_every_shipped_backend_is_registered_here() -> None:
    from collapse_probe.models._registry import BACKENDS

    assert sorted(BACKENDS) == sorted(SHIPPED_BACKENDS)


@pytest.mark.parametrize("prefix", SHIPPED_BACKENDS)
def test_every_backend_refuses_a_bad_option_through_its_options_model(prefix: str) -> None:
    # before any package is imported, any key read or any file opened: the options model comes first
    name = "m@http://127.0.0.1:9/v1" if prefix == "openai-compatible" else "m"
    spec = f"scripted:{name}" if prefix == "scripted" else f"{prefix}/{name}"
    if prefix == "vllm":  # every other vllm.LLM option is passed on: the declared ones are checked
        options, message = {"tensor_parallel_size": 0}, r"^vllm option tensor_parallel_size must be an integer in"
    else:
        options, message = {"concurrrency": 4}, rf"unknown option\(s\) 'concurrrency' for the {prefix} backend"
    with pytest.raises(ConfigError, match=message):
        _factory(prefix)(spec, name, **options)


def test_no_backend_factory_reads_its_options_unchecked() -> None:
    found = []
    for prefix in SHIPPED_BACKENDS:
        func = _factory(prefix)
        path = Path(inspect.getsourcefile(func) or "")
        rel = path.relative_to(PACKAGE).as_posix()
        found += [f"collapse_probe/{rel}:{line} ({fn})" for line, fn in raw_option_reads(path.read_text("utf-8"))]
    assert not found, (
        "backend options read without their options model; parse them with the backend's model in "
        "collapse_probe/models/_options.py and read its fields:\n" + "\n".join(sorted(set(found)))
    )


def test_the_raw_option_read_check_finds_both_forms() -> None:
    bad = (
        "def make(spec, name, **options):\n"
        "    a = options.get('concurrency', 16)\n"
        "    b = options['timeout']\n"
        "def fine(spec, name, **opts):\n"
        "    return Model.parse(opts).concurrency\n"
    )
    assert raw_option_reads(bad) == [(2, "make"), (3, "make")]


def test_backend_option_bounds_are_the_limits() -> None:
    from collapse_probe.core.limits import MAX_BATCH, MAX_CONCURRENCY, MAX_DELAY_S, MAX_RETRIES, MAX_WAIT_S
    from collapse_probe.models._options import HTTPOptions, LocalOptions, ScriptedOptions

    for model, name, value, allowed in (
        (HTTPOptions, "concurrency", MAX_CONCURRENCY + 1, f"[1, {MAX_CONCURRENCY:,}]"),
        (HTTPOptions, "max_retries", MAX_RETRIES + 1, f"[0, {MAX_RETRIES:,}]"),
        (HTTPOptions, "timeout", MAX_WAIT_S + 1, f"(0, {MAX_WAIT_S:g}]"),
        (HTTPOptions, "backoff_max", MAX_WAIT_S + 1, f"[0, {MAX_WAIT_S:g}]"),
        (LocalOptions, "max_batch", MAX_BATCH + 1, f"[1, {MAX_BATCH:,}]"),
        (ScriptedOptions, "delay_s", MAX_DELAY_S + 1, f"[0, {MAX_DELAY_S:g}]"),
    ):
        model.parse({name: value - 1 if isinstance(value, int) else value - 1.0})
        with pytest.raises(ConfigError, match=rf"^{model.BACKEND} option {name} must be .*{re.escape(allowed)}"):
            model.parse({name: value})
