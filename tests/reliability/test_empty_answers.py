"""A server that answers ``content: ""`` (or whitespace) a fifth of the time: ``play`` and ``crossplay``
score no empty turn, a rerun on the same ``--out`` completes what failed, and the completed results
equal a fault-free run's (a blank is asked again with the same request, never cached)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _fault_server import ANSWERS, FaultServer, fast_retries, scripted_policy  # noqa: E402

from collapse_probe.cli import main  # noqa: E402

pytestmark = pytest.mark.reliability

FAST = fast_retries(5)


@pytest.fixture
def policy(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    return scripted_policy(tmp_path, monkeypatch, "sk-empty-test-0000")


def _records(out: str) -> dict[str, dict]:
    recs: dict[str, dict] = {}
    for line in Path(out, "conversations.jsonl").read_text().splitlines():
        rec = json.loads(line)
        recs[rec["key"]] = rec  # the last record of a conversation wins, as a resumed run reads it
    return recs


def _check_no_empty_turn_scored(recs: dict[str, dict]) -> int:
    failed = 0
    for rec in recs.values():
        if rec["status"] == "infra_error":
            assert rec["reward"] is None and "empty reply" in rec["infra_error"]
            failed += 1
            continue
        sim = [m["content"] for m in rec["messages"] if m["role"] == "simulator"]
        assert sim and all(t in ANSWERS for t in sim), sim  # no blank turn reached a score
        assert rec["reward"] is not None
    return failed


def _run_until_complete(argv: list[str], out: str, capsys) -> list[int]:
    """Run, then rerun on the same --out until nothing fails; the infra failures of each run."""
    failures = []
    for _ in range(10):
        rc = main([*argv, "--out", out])
        err = capsys.readouterr().err
        assert rc in (0, 1), err[-2000:]
        assert "Traceback" not in err and "rerun with -v" not in err
        n = _check_no_empty_turn_scored(_records(out))
        failures.append(n)
        m = re.search(r"(\d+) infra failures?", err)
        assert m and int(m.group(1)) == n, err[-1500:]  # the summary counts exactly the failed conversations
        if n:
            assert "first infrastructure failure (of" in err and "empty reply" in err
        if n == 0:
            return failures
    raise AssertionError(f"reruns did not complete the run: infra failures per run {failures}")


@pytest.mark.parametrize(("command", "rate"), [("play", 0.2), ("crossplay", 0.2), ("crossplay", 0.4)])
def test_empty_content_is_never_scored_and_a_rerun_completes_it(policy, capsys, command, rate):
    with FaultServer(rate=0.0) as clean:
        sim = f"openai-compatible/m@{clean.url}"
        base = ["--tasks", "8", "--rollouts", "2", "--max-turns", "2", "--no-progress", *FAST]
        argv = (["play", "--policy", policy, "--sim", sim, "--show", "0"] if command == "play" else
                ["crossplay", "--policies", policy, "--sims", sim]) + base  # fmt: skip
        assert main([*argv, "--out", "clean", "--no-cache"]) in (0, 1)
    capsys.readouterr()
    with FaultServer(rate=rate, faults=("empty_content",), seed=11, port=clean.port) as s:
        failures = _run_until_complete(argv, "faulty", capsys)
        blanks = s.counts["empty_content"]
    print(f"{command} at {rate:.0%} blank: {blanks} blank answers; infra failures per run {failures}")
    assert blanks >= 5  # the server did answer blank, many times
    if rate >= 0.4:
        assert failures[0] > 0 and len(failures) > 1  # blank twice in a row: failed, then completed by a rerun
    want = {k: (r["reward"], [m["content"] for m in r["messages"]]) for k, r in _records("clean").items()}
    got = {k: (r["reward"], [m["content"] for m in r["messages"]]) for k, r in _records("faulty").items()}
    assert got == want  # completed, the faulty run is the fault-free run
    if command == "crossplay":
        cells = lambda p: [(c["n"], c["mean_reward"]) for c in json.loads(Path(p, "results.json").read_text())["cells"]]  # noqa: E731
        assert cells("faulty") == cells("clean")
