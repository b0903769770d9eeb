"""One validation mechanism: no hand-written type-and-bound check of a value outside
``collapse_probe/_constraints.py``.

An option, a parameter or a function argument refused with :class:`ConfigError` goes through
:func:`collapse_probe._constraints.check_value` (or a declared :func:`~collapse_probe._constraints.param`),
so every refusal names the flag, the allowed values and the value received in one wording. The check
below looks for the hand-written form -- ``if isinstance(x, bool) or not isinstance(x, int ...): raise
ConfigError(...)`` -- and fails on any site that is not in :data:`ALLOWED` with its reason.

Checks of the same shape that do not refuse with :class:`ConfigError` are readers of data, not of
options, and are outside the pattern: they skip a value or describe what is wrong with a record
(``_records.py``, ``_proc.py``, ``trainers/llm.py`` ``step_problem``, ``benchmarks/tau2/_db.py``,
``cli/_config.py`` reading a config file through its ``bad`` helper that names the file and the key,
``report/runs.py``, ``dashboard/app.py``, ``interop/_card.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "collapse_probe"
MECHANISM = {"_constraints.py", "limits.py"}  # the mechanism itself and its older integer helpers

ALLOWED: dict[tuple[str, str], str] = {
    # (path relative to the package, enclosing function): why the check stays hand-written
    ("interop/_jsonl.py", "read_jsonl_conversations"): (
        "data read from a published JSONL file: the message names the file, the line and the field"
    ),
    ("interop/_taubench.py", "read_taubench"): (
        "data read from a tau-bench trajectories file: the message names the file, the record and the field"
    ),
    ("interop/_tau2.py", "_temperature"): (
        "data read from a tau2 results file: the message names the file and the field path"
    ),
    ("monitor/_args.py", "check_rewards"): (
        "values a training loop hands the monitor each step (rewards, possibly numpy or torch scalars): the "
        "message names the argument and the position of the bad value"
    ),
    ("monitor/_args.py", "check_turn"): (
        "values a training loop hands the monitor each turn: the message names the argument and what it got"
    ),
    ("benchmarks/p4g.py", "load_personas"): (
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
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in MECHANISM and path.parent == PACKAGE:
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        sites += [(rel, line, func) for line, func in hand_written_checks(path.read_text(encoding="utf-8"))]
    return sites


def test_no_hand_written_value_check_outside_the_constraints() -> None:
    found = [f"collapse_probe/{rel}:{line} ({func})" for rel, line, func in _sites() if (rel, func) not in ALLOWED]
    assert not found, (
        "hand-written value checks; use collapse_probe._constraints.check_value(value, flag, [Integer(1)]) "
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
