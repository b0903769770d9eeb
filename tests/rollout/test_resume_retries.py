"""Resume completes what is incomplete: infra failures are retried; null answers are never answers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from collapse_probe.pipelines.audit import AuditConfig, run_audit
from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
from collapse_probe.simulators import make_participant

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
from _fault_server import FaultServer, free_port  # noqa: E402

FAST = {"max_retries": 2, "backoff_base": 0.01, "backoff_max": 0.02, "timeout": 5.0}


def _policy(tmp_path: Path) -> str:
    p = tmp_path / "policy.json"
    p.write_text(json.dumps({"responses": [{"text": "Would you donate to Save the Children?", "p": 1.0}]}))
    return f"scripted:{p}"


def test_a_run_made_while_the_server_was_down_completes_when_rerun(tmp_path):
    port = free_port()
    sim = f"openai-compatible/m@http://127.0.0.1:{port}/v1"
    policy = _policy(tmp_path)
    cfg = CrossplayConfig(policies=[policy], simulators=[sim], tasks=3, rollouts=2, max_turns=2)
    out = tmp_path / "run"

    def run():
        parts = {policy: make_participant(policy), sim: make_participant(sim, **FAST)}
        return run_crossplay(cfg, participants=parts, out=out, progress=False, report=False)

    down = run()  # nothing listens on the port
    assert down["cells"][0]["n"] == 0 and down["cells"][0]["infra_failures"] == 6
    assert down["cells"][0]["mean_reward"] is None  # never a score of 0
    with FaultServer(rate=0.0, port=port):
        up = run()
    cell = up["cells"][0]
    assert cell["n"] == 6 and cell["infra_failures"] == 0 and cell["mean_reward"] is not None
    recs = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    latest = {r["key"]: r for r in recs}
    assert len(latest) == 6 and all(r["status"] != "infra_error" for r in latest.values())


def test_null_and_empty_answers_are_retried_then_infra_failures_never_responses(tmp_path):
    policy = _policy(tmp_path)
    with FaultServer(rate=1.0, faults=("null_content", "empty_choices")) as s:
        sim = f"openai-compatible/m@{s.url}"
        parts = {policy: make_participant(policy), sim: make_participant(sim, **FAST)}
        cfg = CrossplayConfig(policies=[policy], simulators=[sim], tasks=2, rollouts=1, max_turns=1)
        res = run_crossplay(cfg, participants=parts, out=tmp_path / "run", progress=False, report=False)
        assert s.counts["requests"] == 2 * (FAST["max_retries"] + 1)  # each retried, then given up
    cell = res["cells"][0]
    assert cell["n"] == 0 and cell["infra_failures"] == 2 and cell["mean_reward"] is None
    recs = [json.loads(line) for line in (tmp_path / "run" / "conversations.jsonl").read_text().splitlines()]
    assert all(r["reward"] is None and r["status"] == "infra_error" for r in recs)
    assert all(m["role"] != "simulator" for r in recs for m in r["messages"])  # no null turn recorded


def test_audit_states_that_failed_are_sampled_again_on_resume(tmp_path):
    port = free_port()
    sim = f"openai-compatible/m@http://127.0.0.1:{port}/v1"
    cfg = AuditConfig(sim=sim, states=2, samples=4, exact=False, partition="exact")
    parts = [make_participant(sim, **FAST)]
    down = run_audit(cfg, tmp_path / "a", participants=parts, progress=False)
    assert down["summary"]["n_states"] == 0 and down["summary"]["infra_failures"] == 4
    with FaultServer(rate=0.0, port=port):
        up = run_audit(cfg, tmp_path / "a", participants=parts, progress=False)
    assert up["summary"]["n_states"] == 4 and up["summary"]["infra_failures"] == 0
    uncached = [make_participant(sim, cache=False, **FAST)]
    kept = run_audit(cfg, tmp_path / "b", participants=uncached, progress=False)  # server down again
    assert kept["summary"]["infra_failures"] == 4
    with FaultServer(rate=0.0, port=port) as s:
        again = run_audit(cfg, tmp_path / "b", participants=uncached, progress=False, keep_failed=True)
        assert s.counts["requests"] == 0
    assert again["summary"]["infra_failures"] == 4  # --keep-failed keeps them without a new request


def _blank_donor(tmp_path: Path, p_blank: float) -> str:
    p = tmp_path / "blank_donor.json"
    responses = [{"text": "   ", "p": p_blank}, {"text": "Sure [DONATE $1]", "p": 1.0 - p_blank}]
    p.write_text(json.dumps({"responses": responses}))
    return f"scripted:{p}"


def test_a_blank_reply_is_never_scored_asked_once_more_and_never_cached(tmp_path, caplog):
    import logging

    from collapse_probe.core import _observe

    policy, sim = _policy(tmp_path), _blank_donor(tmp_path, 1.0)  # this donor only ever answers blank
    cfg = CrossplayConfig(policies=[policy], simulators=[sim], tasks=2, rollouts=1, max_turns=1)
    _observe.reset()
    _observe.install_counter()
    with caplog.at_level(logging.INFO, logger="collapse_probe"):
        res = run_crossplay(cfg, out=tmp_path / "run", progress=False, report=False)
    cell = res["cells"][0]
    assert cell["n"] == 0 and cell["infra_failures"] == 2 and cell["mean_reward"] is None  # never a score of 0
    recs = [json.loads(line) for line in (tmp_path / "run" / "conversations.jsonl").read_text().splitlines()]
    assert all("empty reply" in r["infra_error"] and "asked again" in r["infra_error"] for r in recs)
    assert _observe.tally()["retries"] == 2  # each blank asked once more, and counted as a retry
    assert "first infrastructure failure (of 2)" in (_observe.first_error_line() or "")
    import os
    import sqlite3

    with sqlite3.connect(os.environ["COLLAPSE_PROBE_CACHE"]) as con:
        cached = [json.loads(v)["text"] for (v,) in con.execute("SELECT value FROM responses")]
    assert cached and all(t.strip() for t in cached)  # the policy's answers are cached, the blanks never


def test_blank_replies_of_a_sometimes_blank_donor_are_replaced_by_the_same_request_asked_again(tmp_path):
    policy, sim = _policy(tmp_path), _blank_donor(tmp_path, 0.3)
    cfg = CrossplayConfig(policies=[policy], simulators=[sim], tasks=8, rollouts=2, max_turns=2)
    res = run_crossplay(cfg, out=tmp_path / "run", progress=False, report=False)
    recs = [json.loads(line) for line in (tmp_path / "run" / "conversations.jsonl").read_text().splitlines()]
    scored = [r for r in recs if r["status"] != "infra_error"]
    # a scripted draw is seeded: asked again, the same request is blank again, so every conversation
    # that drew a blank is an infrastructure failure, and no blank turn is ever scored
    assert all(m["content"].strip() for r in scored for m in r["messages"])
    failed = [r for r in recs if r["status"] == "infra_error"]
    assert failed and scored and res["cells"][0]["infra_failures"] == len(failed)
    assert res["cells"][0]["n"] == len(scored)


def test_the_audit_asks_again_for_blank_replies_and_counts_the_re_asks(tmp_path):
    from collapse_probe.core import _observe

    sim = _blank_donor(tmp_path, 0.3)
    _observe.reset()
    _observe.install_counter()
    res = run_audit(AuditConfig(sim=sim, states=2, samples=10, partition="exact", exact=False), tmp_path / "a",
                    progress=False)  # fmt: skip
    recs = [json.loads(line) for line in (tmp_path / "a" / "samples.jsonl").read_text().splitlines()]
    assert all(all(t.strip() for t in r["responses"]) for r in recs if r["status"] == "ok")
    assert res["summary"]["n_empty_responses"] > 0  # asked again at fresh samples; what stayed blank is counted
    assert _observe.tally()["retries"] >= 1  # the re-asks appear in the run's retry summary
