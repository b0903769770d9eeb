"""``audit --from`` on JSONL conversations and inspect eval logs, including collapse-probe's own runs
exported and read back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop import export_run
from collapse_probe.pipelines.audit import AuditConfig, run_audit_from

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_results import reply_counts  # noqa: E402


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def independent(records: list[dict], simulator: str | None = None) -> list[tuple[str, list[str]]]:
    """Replies of role ``simulator`` grouped by (task, every earlier message's role and text); the last
    record of a key counts; order of first appearance."""
    last = {r["key"]: r for r in records}
    groups: dict[tuple, tuple[str, list[str]]] = {}
    for r in last.values():
        if r["status"] == "infra_error" or (simulator and r["simulator"] != simulator):
            continue
        for i, m in enumerate(r["messages"]):
            if m["role"] == "simulator":
                prefix = tuple((p["role"], p["content"]) for p in r["messages"][:i])
                groups.setdefault((r["task_id"], prefix), (r["task_id"], []))[1].append(m["content"])
    return [g for g in groups.values() if len(g[1]) >= 2]


def test_jsonl_of_a_tau2_play_run_states_equal_an_independent_grouping(tau2_play_run):
    f = tau2_play_run / "conversations.jsonl"
    res = run_audit_from(f, "jsonl", AuditConfig(partition="exact"), None, progress=False)
    expected = independent(_jsonl(f))
    assert [(s["task_id"], s["class_counts"]) for s in res["states"]] == [(t, reply_counts(r)) for t, r in expected]
    openings = [s for s in res["states"] if s["kind"] == "opening"]
    assert len(openings) == 2 and all(s["n"] == 6 for s in openings)  # every rollout answers the fixed greeting


def test_own_run_exported_to_inspect_and_audited_back_gives_the_same_states(tau2_play_run, tmp_path):
    pytest.importorskip("inspect_ai")
    log = tmp_path / "play.eval"
    export_run(tau2_play_run, "inspect", log)
    via_log = run_audit_from(log, "inspect", AuditConfig(partition="exact"), tmp_path / "run", progress=False)
    via_jsonl = run_audit_from(tau2_play_run / "conversations.jsonl", "jsonl", AuditConfig(partition="exact"), None,
                               progress=False)  # fmt: skip
    # inspect's reader returns samples ordered by id and epoch, so the states come in another order
    key = lambda r: sorted((s["task_id"], s["kind"], s["class_counts"]) for s in r["states"])  # noqa: E731
    assert key(via_log) == key(via_jsonl)
    assert via_log["summary"]["collapse_error"]["plugin"] == pytest.approx(
        via_jsonl["summary"]["collapse_error"]["plugin"]
    )
    assert via_log["rollouts"]["mean_reward"] == pytest.approx(via_jsonl["rollouts"]["mean_reward"])
    assert via_log["source"]["format"] == "inspect"


def test_crossplay_jsonl_needs_a_simulator_and_counts_a_retried_conversation_once(crossplay_run, p4g_specs, capsys):
    f = crossplay_run / "conversations.jsonl"
    assert main(["audit", "--from", str(f), "--partition", "exact", "--no-progress", "--out",
                 str(crossplay_run.parent / "a")]) == 2  # fmt: skip
    assert "choose one with --sim NAME" in capsys.readouterr().err
    sim = p4g_specs["donor2"]  # its first attempt failed: its conversations are in the file twice
    res = run_audit_from(f, "jsonl", AuditConfig(partition="exact"), None, simulator=sim, progress=False)
    expected = independent(_jsonl(f), sim)
    assert [(s["task_id"], s["class_counts"]) for s in res["states"]] == [(t, reply_counts(r)) for t, r in expected]
    assert res["source"]["infra_failures"] == 0 and res["source"]["conversations"] == 12
    with pytest.raises(ConfigError, match="holds no conversations of this simulator"):
        run_audit_from(f, "jsonl", AuditConfig(partition="exact"), None, simulator="nobody", progress=False)


def test_generic_chat_jsonl_with_user_as_simulator(tmp_path):
    f = tmp_path / "chats.jsonl"
    lines = []
    for trial in range(5):
        reply = ["I need a refund.", "Where is my parcel?"][trial % 2]
        lines.append({"id": f"c{trial}", "task": "t1", "trial": trial, "reward": trial % 2,
                      "messages": [{"role": "system", "content": "You are a support agent."},
                                   {"role": "assistant", "content": "Hello, how can I help?"},
                                   {"role": "user", "content": reply}]})  # fmt: skip
    lines.append({"id": "broken", "task": "t1", "error": "HTTP 500", "messages": [{"role": "user", "content": "x"}]})
    f.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    res = run_audit_from(f, "jsonl", AuditConfig(partition="exact"), None, progress=False)
    (st,) = res["states"]
    assert st["n"] == 5 and st["class_counts"] == [3, 2] and res["source"]["infra_failures"] == 1
    # the other way round: the assistant is the simulator, and its greeting after the system prompt the state
    (st,) = run_audit_from(f, "jsonl", AuditConfig(partition="exact"), None, sim_role="assistant",
                           progress=False)["states"]  # fmt: skip
    assert st["class_counts"] == [5] and st["class_names"] == ["Hello, how can I help?"]


@pytest.mark.parametrize(
    "line,match",
    [
        ('{"task_id": "a", "messages": "hi"}', "line 1: messages: expected a list"),
        ('{"messages": []}', "line 1: task_id: expected"),
        ('{"task_id": "a", "messages": [{"content": "x"}]}', r"messages\[0\]: expected an object with a string 'role'"),
        ('{"task_id": "a", "reward": "high", "messages": []}', "reward: expected a finite number"),
        ("not json\n{}", "line 1: not valid JSON"),
    ],
)
def test_bad_jsonl_is_one_line_naming_the_record(tmp_path, capsys, line, match):
    import re

    f = tmp_path / "x.jsonl"
    f.write_text(line + "\n")
    assert main(["audit", "--from", str(f), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(match, err), err


def test_a_file_that_is_not_an_inspect_log(tmp_path, capsys):
    pytest.importorskip("inspect_ai")
    f = tmp_path / "x.eval"
    f.write_text("nope")
    assert main(["audit", "--from", str(f), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not an inspect eval log" in err and len(err.splitlines()) == 1


def test_train_rollouts_keep_steps_apart(train_run):
    from collapse_probe.integrations.interop import read_jsonl_conversations, shared_prefix_states

    records = _jsonl(train_run / "rollouts.jsonl")
    run = read_jsonl_conversations(train_run / "rollouts.jsonl")
    assert len(run.conversations) == len(records)  # the same key at two steps is two conversations
    assert {c.group for c in run.conversations} == {(f"step={r['step']}",) for r in records}
    states, _ = shared_prefix_states(run.conversations)
    for st in states:  # a state's replies all come from one step (the simulator may train between steps)
        assert len({cid.split("|")[0] for cid in st.conversations}) == 1
