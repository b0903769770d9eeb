"""Every test module collects in the framework tier's environment (``scripts/framework_env.sh DIR``):
``DIR/bin/python -m pytest -m framework`` imports every module under tests/ before it deselects, and
that environment has collapse-probe's core and ``[trl]`` dependencies, pytest and the frameworks, but
none of the development or provider extras. A module that needs one of those imports it through
``pytest.importorskip`` (or inside the test), not with an ``import`` statement of the module."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

NOT_IN_FRAMEWORK_ENV = {
    # [dev] beyond pytest and pytest-timeout
    "hypothesis", "duckdb", "polars", "mypy", "ruff",
    # [api], [litellm], [vllm], [bench]
    "openai", "anthropic", "google.genai", "litellm", "vllm", "llama_cpp",
    # [embed], [dashboard], [browser], [inspect], [trackers]
    "sentence_transformers", "sklearn", "streamlit", "playwright", "inspect_ai", "wandb", "mlflow", "tensorboard",
}  # fmt: skip
"""Modules scripts/framework_env.sh does not install (its DIR has torch, transformers, TRL, datasets,
verl, OpenRLHF, Ray and their dependencies)."""


def _needs(module: str | None) -> str | None:
    """The entry of :data:`NOT_IN_FRAMEWORK_ENV` that importing ``module`` needs, if any."""
    parts = (module or "").split(".")
    for n in (2, 1):
        if ".".join(parts[:n]) in NOT_IN_FRAMEWORK_ENV:
            return ".".join(parts[:n])
    return None


def _skip_guarded(node: ast.stmt) -> set[str]:
    """The modules a module-level ``x = pytest.importorskip("m")`` (or a bare call) makes safe to import."""
    value = node.value if isinstance(node, ast.Assign | ast.Expr) else None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "importorskip"
        and value.args
        and isinstance(value.args[0], ast.Constant)
    ):
        return {str(value.args[0].value)}
    return set()


def unguarded_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of each module-level import of a module the framework environment lacks."""
    guarded: set[str] = set()
    found = []
    for node in ast.parse(source).body:  # module level only: imports inside tests and try blocks are fine
        guarded |= _skip_guarded(node)
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        for name in names:
            need = _needs(name)
            if need is not None and need not in guarded and name not in guarded:
                found.append((node.lineno, name))
    return found


def test_the_check_finds_a_module_level_import_and_accepts_a_guarded_one():
    assert unguarded_imports("import pytest\nfrom hypothesis import given\n") == [(2, "hypothesis")]
    assert unguarded_imports("import google.genai\n") == [(1, "google.genai")]
    guarded = "import pytest\npytest.importorskip('openai')\nfrom openai import OpenAI\n"
    assert unguarded_imports(guarded) == []
    assert unguarded_imports("def test():\n    from hypothesis import given\n") == []


def test_every_test_module_collects_without_the_extras_the_framework_env_lacks():
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}: import {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in unguarded_imports(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "use pytest.importorskip for these (scripts/framework_env.sh has none):\n" + "\n".join(
        offenders
    )
