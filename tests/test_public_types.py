"""The public API is typed: ``mypy --strict`` checks a user's script that calls every one-call function
and reads its results, and it catches the mistakes a user makes (a misspelt field, a result read as the
wrong type, a function called with a wrong argument type)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

USER_SCRIPT = """
from __future__ import annotations

import asyncio

import collapse_probe
from collapse_probe import (
    AuditConfig,
    AuditResults,
    CrossplayConfig,
    CrossplayResults,
    GateResults,
    LabConfig,
    LabRunResults,
    TrainConfig,
    TrainResults,
)


def run() -> None:
    a: AuditResults = collapse_probe.audit(sim="scripted:uniform", samples=8, states=2, progress=False)
    eps: float | None = a.summary.collapse_error.estimate
    label: str | None = a.verdict
    first_state_id: str = a.states[0].state_id
    a2: AuditResults = collapse_probe.audit(AuditConfig(samples=4), out="runs/a")

    m: CrossplayResults = collapse_probe.crossplay(CrossplayConfig(policies=["smollm2"]), out="runs/x")
    reward: float | None = m.cells[0].mean_reward
    held_out: list[str] = m.heldout_simulators

    g: GateResults = collapse_probe.gate("runs/x", "smollm2", min_transfer=0.8)
    g2: GateResults = collapse_probe.gate(m, "smollm2", min_transfer=0.8)
    code: int = g.exit_code
    outcome: str = g.outcome
    names: list[str] = [c.name for c in g.checks]
    each: list[float | None] = [s.value for s in g2.per_simulator]

    t: TrainResults = collapse_probe.train(TrainConfig(), out="runs/t")
    steps: int = t.steps

    lab: LabRunResults = collapse_probe.lab(LabConfig(steps=5))
    lab2: LabRunResults = collapse_probe.lab(method="population", steps=5)
    heldout: list[float | None] = lab.heldout_reward
    print(eps, label, first_state_id, a2, reward, held_out, code, outcome, names, each, steps, heldout, lab2)


async def run_async() -> None:
    a: AuditResults = await collapse_probe.audit_async(samples=4)
    m: CrossplayResults = await collapse_probe.crossplay_async(out="runs/x")
    g: GateResults = await collapse_probe.gate_async(m, "smollm2")
    t: TrainResults = await collapse_probe.train_async(out="runs/t")
    lab: LabRunResults = await collapse_probe.lab_async(steps=3)
    print(a, g, t, lab)
    collapse_probe.reset_caches()


asyncio.run(run_async())
"""

MISTAKES = {
    "a misspelt results field": "r = collapse_probe.audit(samples=4)\nprint(r.summary.colapse_error)\n",
    "a result read as the wrong type": "r = collapse_probe.gate('runs/x', 'p')\nx: str = r.exit_code\n",
    "a wrong argument type": "collapse_probe.gate(3.5, 'p')\n",
    "the config of another pipeline": "collapse_probe.audit(collapse_probe.CrossplayConfig())\n",
    "a name the package does not have": "collapse_probe.auditt(samples=4)\n",
}


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(tmp_path: Path, cache: Path, source: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy")
    script = tmp_path / "user_script.py"
    script.write_text(source)
    # what a user's checker sees of the installed package: `mypy --strict script.py`, nothing else (an editable
    # install writes a plain path that mypy follows, pyproject.toml's package-dir; mypy reports no errors
    # inside installed packages)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), "--python-version", "3.11", str(script)],
        capture_output=True, text=True, cwd=tmp_path, timeout=900,
    )  # fmt: skip


@pytest.mark.typecheck
def test_mypy_strict_passes_on_a_user_script_that_calls_every_pipeline(tmp_path, mypy_cache):
    out = _mypy(tmp_path, mypy_cache, USER_SCRIPT)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.typecheck
def test_mypy_strict_catches_a_users_mistakes(tmp_path, mypy_cache):
    """Each mistake on its own line; every one of them is reported, at its line."""
    lines = ["import collapse_probe"]
    where = {}
    for name, source in MISTAKES.items():
        body = textwrap.dedent(source).strip().splitlines()
        lines += [f"def case_{len(where)}() -> None:"] + [f"    {x}" for x in body]
        where[name] = len(lines)  # the mistake is the case's last line
    out = _mypy(tmp_path, mypy_cache, "\n".join(lines) + "\n")
    assert out.returncode == 1, out.stdout + out.stderr
    missed = [name for name, line in where.items() if f"user_script.py:{line}: error:" not in out.stdout]
    assert not missed, f"not reported: {missed}\n{out.stdout}"


def test_the_public_names_are_the_functions_not_modules():
    import types

    import collapse_probe

    for name in ("audit", "crossplay", "gate", "train", "lab"):
        fn = getattr(collapse_probe, name)
        assert callable(fn) and not isinstance(fn, types.ModuleType), name
        assert getattr(collapse_probe, f"{name}_async").__name__ == f"{name}_async"
    import collapse_probe.pipelines.audit  # importing the pipeline's module does not replace the function  # noqa: F401

    assert not isinstance(collapse_probe.audit, types.ModuleType)
