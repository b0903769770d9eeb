"""The typed conversation record: its validation names the field in one line (the same messages the
hand checks gave), it writes the bytes the engine always wrote, and a run written before it resumes."""

from __future__ import annotations

import json

import pytest

from collapse_probe.core._records import conversation_problem

GOOD = {
    "key": "p|s|t1|0", "task_id": "t1", "rollout": 0, "policy": "p", "simulator": "s", "seed": 7,
    "messages": [{"role": "policy", "content": "hi"}, {"role": "simulator", "content": "yo"}],
    "reward": 0.5, "success": True, "status": "done", "infra_error": None,
    "fingerprints": {"policy": "fp-p", "simulator": "fp-s"}, "info": {"turns": 2}, "seconds": 0.123,
}  # fmt: skip


def _with(**changes):
    rec = {**GOOD, **changes}
    return {k: v for k, v in rec.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"key": _DROP}, "field 'key': expected a string, got None"),
        ({"task_id": 3}, "field 'task_id': expected a string, got 3"),
        ({"policy": ["p"]}, "field 'policy': expected a string, got ['p']"),
        ({"simulator": None}, "field 'simulator': expected a string, got None"),
        ({"status": 1}, "field 'status': expected a string, got 1"),
        ({"status": 1, "key": 2}, "field 'key': expected a string, got 2"),
        ({"rollout": -1}, "field 'rollout': expected a whole number >= 0, got -1"),
        ({"rollout": True}, "field 'rollout': expected a whole number >= 0, got True"),
        ({"rollout": "0"}, "field 'rollout': expected a whole number >= 0, got '0'"),
        ({"seed": 1.5}, "field 'seed': expected an integer, got 1.5"),
        ({"seed": False}, "field 'seed': expected an integer, got False"),
        ({"key": "p|s|t2|0"}, "its key 'p|s|t2|0' does not match its fields policy|simulator|task_id|rollout 'p|s|t1|0'"),
        ({"messages": "hi"}, "field 'messages': expected a list of {role, content} messages, got 'hi'"),
        ({"messages": [{"content": "x"}]}, "field 'messages': expected a list of {role, content} messages, got [{'content': 'x'}]"),
        ({"messages": [{"role": "user", "content": 3}]}, "field 'messages': expected a list of {role, content} messages, got [{'content': 3, 'role': 'user'}]"),
        ({"messages": ["x"]}, "field 'messages': expected a list of {role, content} messages, got ['x']"),
        ({"fingerprints": "abc"}, "field 'fingerprints': expected {policy: fingerprint, simulator: fingerprint}, got 'abc'"),
        ({"fingerprints": {"policy": 1}}, "field 'fingerprints': expected {policy: fingerprint, simulator: fingerprint}, got {'policy': 1}"),
        ({"status": "infra_error", "infra_error": None}, "field 'infra_error': expected the failure's message, got None"),
        ({"infra_error": "boom"}, "field 'infra_error': expected null (status is 'done'), got 'boom'"),
        ({"reward": "zzz"}, "field 'reward': expected a finite number or null, got 'zzz'"),
        ({"reward": float("nan")}, "field 'reward': expected a finite number or null, got nan"),
        ({"reward": True}, "field 'reward': expected a finite number or null, got True"),
        ({"success": 1}, "field 'success': expected true, false or null, got 1"),
        ({"info": [1]}, "field 'info': expected an object, got [1]"),
    ],
)  # fmt: skip
def test_a_bad_field_is_named_in_one_line(changes, message):
    assert conversation_problem(_with(**changes)) == message


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"reward": None, "success": None, "info": None, "fingerprints": None},
        {"reward": 1},
        {"status": "infra_error", "infra_error": "timeout", "reward": None},
        {"messages": [{"role": "user"}, {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "name": "f"}]}]},
        {"fingerprints": {}, "extra_field": [1, 2]},
        {"seconds": _DROP, "info": _DROP, "success": _DROP, "reward": _DROP, "fingerprints": _DROP},
    ],
)  # fmt: skip
def test_well_formed_records_pass(changes):
    assert conversation_problem(_with(**changes)) is None


def test_a_record_is_written_back_byte_for_byte_whatever_the_key_order_of_its_messages():
    from collapse_probe.core._jsonl import dumps_line
    from collapse_probe.core._records import ConversationRecord

    line = {
        **GOOD,
        "messages": [
            {"role": "message", "from": "agent1", "to": "agent2", "content": "hi"},
            {"content": None, "role": "policy", "tool_calls": [{"name": "f", "id": "c0", "arguments": {"x": 1}}]},
            {"role": "tool", "tool_call_id": "c0", "name": "f", "content": "ok"},
            {"role": "policy", "content": "done", "meta": {"elicitation": True}},
        ],
        "persona_id": "p7",
    }
    rec = ConversationRecord.parse(line)
    assert dumps_line(rec.to_line_dict()) == dumps_line(line)
    assert rec.messages[1].tool_calls[0].arguments == {"x": 1} and rec.messages[3].meta == {"elicitation": True}
    assert rec.texts_of("policy") == [None, "done"] and rec.model_extra == {"persona_id": "p7"}


def test_a_run_written_before_records_were_typed_resumes(tmp_path):
    """``data/before_typed_records``: 2 tasks x 2 rollouts of the scripted demo written by the engine before
    it typed its records. Resumed with a third task, the old lines are kept as they are, only the new
    task runs, and its lines are laid out as the old ones."""
    import asyncio
    import shutil
    from pathlib import Path

    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.models import get_model
    from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
    from collapse_probe.simulators import Participant

    old = Path(__file__).parent / "rollout" / "data" / "before_typed_records" / "conversations.jsonl"
    shutil.copy(old, tmp_path / "conversations.jsonl")
    pol, sim = "scripted:p4g_persuader_rapport", "scripted:p4g_donor_diverse"
    arena = P4GArena(max_turns=2)
    asked: list[int] = []

    class Counting:
        def __init__(self, inner):
            self.inner, self.spec = inner, inner.spec

        async def generate(self, requests):
            asked.append(len(requests))
            return await self.inner.generate(requests)

    parts = {s: Participant(s, Counting(get_model(s))) for s in (pol, sim)}
    specs = make_specs(arena.load_tasks(3), [pol], [sim], 2, 0)
    records = asyncio.run(
        run_conversations(arena, specs, parts, config=EngineConfig(progress=False), run_dir=RunDir(tmp_path))
    )
    before = old.read_bytes().splitlines()
    after = (tmp_path / "conversations.jsonl").read_bytes().splitlines()
    assert after[: len(before)] == before and len(after) == 6
    assert sum(asked) == 2 * 2 * 2  # 2 new conversations x 2 turns x (policy, simulator)
    old_keys = [json.loads(x)["key"] for x in before]
    assert [r.key for r in records[:4]] == old_keys
    assert [r.to_line_dict() for r in records[:4]] == [json.loads(x) for x in before]
    assert all(list(json.loads(x)) == list(json.loads(before[0])) for x in after[4:])  # the same fields, in order


def test_the_conversation_schema_ships_and_every_line_the_engine_writes_validates(tmp_path):
    from importlib.resources import files
    from pathlib import Path

    jsonschema = pytest.importorskip("jsonschema")
    from collapse_probe.cli import main
    from collapse_probe.results import RECORD_ID_PREFIX, published_schema, schema_text

    shipped = files("collapse_probe").joinpath("schemas", "conversation.json").read_text(encoding="utf-8")
    assert shipped == schema_text("conversation"), "stale: run python scripts/write_schemas.py"
    schema = published_schema("conversation")
    assert schema["$id"] == RECORD_ID_PREFIX + "conversation"
    validator = jsonschema.Draft202012Validator(schema)
    out = tmp_path / "play"
    argv = ["play", "--policy", "scripted:p4g_persuader_rapport", "--sim", "scripted:p4g_donor_diverse",
            "--tasks", "2", "--rollouts", "2", "--max-turns", "2", "--no-progress", "--no-cache", "--show", "0",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    old = Path(__file__).parent / "rollout" / "data" / "before_typed_records" / "conversations.jsonl"
    lines = [*(out / "conversations.jsonl").read_text().splitlines(), *old.read_text().splitlines()]
    assert len(lines) == 8
    for line in lines:
        assert not [e.message for e in validator.iter_errors(json.loads(line))]
    assert list(validator.iter_errors({**GOOD, "reward": "zzz"}))  # the schema refuses what the model refuses
