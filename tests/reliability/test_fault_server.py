"""Runs against a fault-injecting OpenAI-compatible server: every fault retried or recorded, no
silent zero, no null answer counted as a response."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _fault_server import ANSWERS, FAULTS, FaultServer, fast_retries, scripted_policy  # noqa: E402

from collapse_probe.cli import main  # noqa: E402

pytestmark = pytest.mark.reliability

FAST = fast_retries(0.5)


@pytest.fixture
def policy(tmp_path, monkeypatch):
    return scripted_policy(tmp_path, monkeypatch, "sk-fault-test-0000")


def _summary(err: str) -> tuple[int, int]:
    m = re.search(r"(\d+) requests? retried, (\d+) infra failures?", err)
    assert m, err[-2000:]
    return int(m.group(1)), int(m.group(2))


def test_crossplay_through_a_faulty_server_completes_with_every_fault_accounted_for(policy, capsys):
    with FaultServer(rate=0.2, seed=3, stall_s=1.0) as s:
        sim = f"openai-compatible/m@{s.url}"
        rc = main(["crossplay", "--policies", policy, "--sims", sim, "--tasks", "6", "--rollouts", "2",
                   "--max-turns", "2", "--out", "run", "--no-progress", "--no-cache", "-v", *FAST])  # fmt: skip
        counts = dict(s.counts)
    err = capsys.readouterr().err
    assert rc == 0, err[-2000:]
    faults = sum(counts.get(f, 0) for f in FAULTS)
    assert faults >= 5 and all(counts.get(f, 0) > 0 for f in ("429", "500", "empty_choices", "null_content"))
    retried, infra = _summary(err)
    retry_lines = [line for line in err.splitlines() if "; retry " in line]
    assert retried == len(retry_lines)  # -v: one line per retried request
    assert retried + infra >= faults  # every fault was retried or recorded as an infra failure
    results = json.loads(Path("run/results.json").read_text())
    cell = results["cells"][0]
    assert cell["n"] + cell["infra_failures"] == 12 and cell["infra_failures"] == infra
    for rec in (json.loads(line) for line in Path("run/conversations.jsonl").read_text().splitlines()):
        sim_turns = [m["content"] for m in rec["messages"] if m["role"] == "simulator"]
        if rec["status"] == "infra_error":
            assert rec["reward"] is None  # never a silent zero
        else:
            assert sim_turns and all(t in ANSWERS for t in sim_turns)  # no null, empty or torn answer counted
            assert rec["reward"] is not None


def test_audit_through_a_faulty_server_measures_no_null_answer(policy, capsys):
    with FaultServer(
        rate=0.35, seed=5, stall_s=1.0, faults=("429", "500", "empty_choices", "null_content", "invalid_json")
    ) as s:
        sim = f"openai-compatible/m@{s.url}"
        rc = main(["audit", "--sim", sim, "--states", "6", "--samples", "6", "--partition", "exact", "--no-exact",
                   "--out", "audit", "--no-progress", "--no-cache", *FAST])  # fmt: skip
        counts = dict(s.counts)
    err = capsys.readouterr().err
    assert rc == 0, err[-2000:]
    assert sum(counts.get(f, 0) for f in FAULTS) > 0
    recs = [json.loads(line) for line in Path("audit/samples.jsonl").read_text().splitlines()]
    ok = [r for r in recs if r["status"] == "ok"]
    assert ok and all(r["n_empty"] == 0 and r["n"] == 6 for r in ok)
    assert all(t in ANSWERS for r in ok for t in r["responses"])
