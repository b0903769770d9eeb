"""Readers of τ2 voice runs (turns in ``ticks``), verifiers ``traces.jsonl`` and legacy ``results.jsonl``,
and NeMo-Gym ``rollouts.jsonl``: turns, roles, simulator, reward; detection by content; one-line errors
naming the file and the line; ``audit --from`` on every shipped sample."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop import shared_prefix_states
from collapse_probe.pipelines.audit._published import format_of, read_published

SAMPLES = Path(__file__).resolve().parents[2] / "collapse_probe" / "data" / "published"
SAMPLE_FORMATS = {
    "tau2-voice-sim-a.json": "tau2",
    "tau2-voice-sim-b.json": "tau2",
    "verifiers-traces.jsonl": "verifiers",
    "verifiers-legacy/results.jsonl": "verifiers-results",
    "nemo-gym-rollouts.jsonl": "nemo-gym",
}


def turns(conv: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in conv.messages]


# --- τ2 voice ------------------------------------------------------------------------------------------
def tick(k: int, **fields: Any) -> dict[str, Any]:
    return {"tick_id": k, "timestamp": f"t{k}", **fields}


def chunk(text: str, utterance: str) -> dict[str, Any]:
    return {"role": "x", "content": text, "is_audio": True, "utterance_ids": [utterance]}


def voice_results(path: Path, sims: list[dict[str, Any]], user_llm: str = "user-llm") -> Path:
    path.write_text(json.dumps({
        "info": {"user_info": {"implementation": "user_simulator_streaming", "llm": user_llm},
                 "agent_info": {"implementation": "audio_native", "llm": "voice-agent"},
                 "environment_info": {"domain_name": "mock"}},
        "tasks": [{"id": "t1", "user_scenario": {"instructions": "Get a refund."}}],
        "simulations": sims,
    }))  # fmt: skip
    return path


def voice_sim(sid: str, ticks: list[dict[str, Any]], reward: float = 1.0) -> dict[str, Any]:
    return {"id": sid, "task_id": "t1", "trial": 0, "termination_reason": "user_stop", "messages": None,
            "ticks": ticks, "reward_info": {"reward": reward}, "mode": "full_duplex"}  # fmt: skip


def test_voice_turns_are_rebuilt_from_the_ticks_overlap_and_backchannel_included(tmp_path):
    ticks = [
        tick(0, agent_chunk=chunk("Hi! How ", "a0")), tick(1, agent_chunk=chunk("can I help?", "a0")),
        tick(2), tick(3),
        tick(4, user_chunk=chunk("I want ", "u0"), user_transcript="i want"),
        tick(5, user_chunk=chunk("a refund ", "u0")),
        tick(6, user_chunk=chunk("for my ", "u0"), agent_chunk=chunk("Mhm.", "a1")),  # a backchannel
        tick(7, user_chunk=chunk("order.", "u0")),
        tick(8), tick(9),
        tick(10, agent_tool_calls=[{"id": "c1", "name": "find_order", "arguments": {"user": "u1"}}],
             agent_tool_results=[{"role": "tool", "id": "c1", "content": "{\"order\": \"W1\"}"}]),
        tick(11, agent_chunk=chunk("Your order W1 ", "a2")),
        tick(12, agent_chunk=chunk("is refunded", "a2"), user_chunk=chunk("Thanks", "u1")),  # an interruption
        tick(13, agent_chunk=chunk(" now.", "a2"), user_chunk=chunk(" a lot.", "u1")),
        tick(14), tick(15),
        tick(16, agent_chunk=chunk("Anything else?", "a3")),
        tick(17, user_chunk=chunk("No,", "u2")), tick(18, user_chunk=chunk("bye.", "u3")),
    ]  # fmt: skip
    run = read_published(voice_results(tmp_path / "r.json", [voice_sim("s1", ticks, 0.5)]), "tau2")
    (conv,) = run.conversations
    assert turns(conv) == [
        ("policy", "Hi! How can I help?"),
        ("simulator", "I want a refund for my order."),  # the backchannel does not cut the user's turn
        ("policy", "Mhm."),
        ("policy", 'find_order({"user": "u1"})'),
        ("tool", '{"order": "W1"}'),
        ("policy", "Your order W1 is refunded now."),  # the user's overlap does not cut the agent's turn
        ("simulator", "Thanks a lot."),
        ("policy", "Anything else?"),  # the agent speaks again after the user spoke: a new turn
        ("simulator", "No, bye."),  # two utterances of one turn, spaced as tau2-bench merges them
    ]
    assert conv.simulator == "user-llm" and conv.policy == "voice-agent" and conv.reward == 0.5
    assert conv.task_content == "Get a refund." and run.skipped == {}
    assert any("1 full-duplex (voice) simulations read from their ticks" in n for n in run.notes)


def test_voice_without_user_chunk_text_is_read_from_the_agents_transcript(tmp_path):
    ticks = [tick(0, agent_chunk=chunk("Hello.", "a0")), tick(1), tick(2),
             tick(3, user_chunk={"role": "user", "content": "", "is_audio": True}, user_transcript="i need "),
             tick(4, user_chunk={"role": "user", "content": None}, user_transcript="help")]  # fmt: skip
    run = read_published(voice_results(tmp_path / "r.json", [voice_sim("s1", ticks)]), "tau2")
    (conv,) = run.conversations
    assert turns(conv) == [("policy", "Hello."), ("simulator", "i need help")]
    assert conv.messages[1].meta["source"] == "transcript"
    assert any("from the agent's transcript" in n for n in run.notes)


def test_the_two_simulator_voice_samples_are_one_agent_under_two_simulators():
    a = read_published(SAMPLES / "tau2-voice-sim-a.json", "tau2")
    b = read_published(SAMPLES / "tau2-voice-sim-b.json", "tau2")
    assert a.policy == b.policy == "voice-agent-1"
    assert (a.simulator, b.simulator) == ("user-sim-model-1", "user-sim-model-2")
    assert {c.task_id for c in a.conversations} == {c.task_id for c in b.conversations} == {"0", "1", "2"}
    for run in (a, b):
        assert len(run.conversations) == 12 and not run.skipped
        for c in run.conversations:
            assert c.messages[0].role == "policy" and c.messages[0].text == "Hi! How can I help you today?"
            assert c.messages[1].role == "simulator" and c.task_content
            assert [m.role for m in c.messages].count("simulator") == 3
    data = json.loads((SAMPLES / "tau2-voice-sim-a.json").read_text())
    assert all(s["messages"] is None and s["ticks"] for s in data["simulations"])


# --- verifiers -------------------------------------------------------------------------------------------
def node(parent: int | None, role: str, content: Any, sampled: bool = False, **extra: Any) -> dict[str, Any]:
    return {"parent": parent, "message": {"role": role, "content": content, **extra}, "sampled": sampled}


def episode(nodes_by_agent: list[tuple[str, bool, str, list[dict[str, Any]], dict[str, Any]]], **extra: Any) -> dict:
    task = {"type": "Task", "key": "task-7", "data": {"idx": 7, "prompt": "Book a table for two."}}
    traces = [{"task": task, "agent": {"name": n, "trainable": tr, "config": {"model": m}}, "nodes": nodes,
               "calls": [], "rewards": rw} for n, tr, m, nodes, rw in nodes_by_agent]  # fmt: skip
    return {"id": "ep1", "env": {"id": "user-sim"}, "task": task, "ok": True, "errors": [], "traces": traces, **extra}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_verifiers_traces_the_untrainable_agent_is_the_user_and_the_trainable_one_is_scored(tmp_path):
    user = [node(None, "system", "You are a diner."), node(0, "user", "Hello!"), node(1, "assistant", "A table for two.", True),
            node(2, "user", [{"type": "text", "text": "For when?"}]), node(3, "assistant", "Tonight at 8.", True)]  # fmt: skip
    agent = [node(None, "system", "You are a host."), node(0, "user", "A table for two."),
             node(1, "assistant", None, True, tool_calls=[{"id": "c", "name": "check", "arguments": "{\"n\": 2}"}]),
             node(2, "tool", "free", tool_call_id="c"), node(3, "assistant", "For when?", True),
             node(4, "user", "Tonight at 8."), node(5, "assistant", "Booked.", True)]  # fmt: skip
    rewards = {"booked": {"score": 1.0, "weight": 0.5}, "polite": {"score": 0.4, "weight": 1.0}, "skipped": None}
    f = write_jsonl(tmp_path / "anything.log", [episode([("assistant", True, "agent-m", agent, rewards),
                                                         ("user", False, "sim-m", user, {})])])  # fmt: skip
    assert format_of(f) == "verifiers"
    run = read_published(f, "verifiers")
    (conv,) = run.conversations
    assert turns(conv) == [("system", "You are a diner."), ("policy", "Hello!"), ("simulator", "A table for two."),
                           ("policy", "For when?"), ("simulator", "Tonight at 8.")]  # fmt: skip
    assert (conv.simulator, conv.policy, run.simulator, run.policy) == ("sim-m", "agent-m", "sim-m", "agent-m")
    assert conv.reward == pytest.approx(0.9) and conv.task_id == "task-7" and conv.trial == 0
    assert conv.task_content == "Book a table for two."


def test_verifiers_single_agent_trace_reads_its_last_branch_and_the_prompt_is_given(tmp_path):
    nodes = [node(None, "system", "Solve it."), node(0, "user", "What is 2+2?"),
             node(1, "assistant", "5", True), node(1, "assistant", "4", True),  # two branches: the last leaf wins
             node(3, "user", "Are you sure?"), node(4, "assistant", "Yes, 4.", True)]  # fmt: skip
    ep = episode([("agent", True, "m", nodes, {"correct": {"score": 1.0}})])
    failed = {**episode([("agent", True, "m", nodes[:2], {})]), "id": "ep2", "ok": False,
              "errors": [{"type": "ProviderError", "message": "502"}]}  # fmt: skip
    run = read_published(write_jsonl(tmp_path / "t.jsonl", [ep, failed]), "verifiers")
    conv, bad = run.conversations
    assert turns(conv) == [("system", "Solve it."), ("simulator", "What is 2+2?"), ("policy", "4"),
                           ("simulator", "Are you sure?"), ("policy", "Yes, 4.")]  # fmt: skip
    assert conv.messages[1].meta == {"given": True} and conv.messages[3].meta == {}
    assert conv.reward == 1.0 and bad.infra_error == "ProviderError: 502" and bad.reward is None
    assert bad.trial == 1  # the second rollout of the task


def test_verifiers_task_without_a_key_is_its_rollout_group_and_a_training_step_keeps_states_apart(tmp_path):
    nodes = [node(None, "user", "Q?"), node(0, "assistant", "A.", True), node(1, "user", "And?"),
             node(2, "assistant", "B.", True)]  # fmt: skip
    rows = []
    for step, trial in ((1, 0), (1, 1), (2, 0)):
        ep = episode([("agent", True, "m", nodes, {})], group={"id": "g-5"}, id=f"e{step}{trial}",
                     run={"type": "train", "id": "r", "work": {"type": "train", "step": step}})  # fmt: skip
        ep["task"] = {"type": "Task", "data": {"prompt": None}}
        rows.append(ep)
    run = read_published(write_jsonl(tmp_path / "t.jsonl", rows), "verifiers")
    assert [c.task_id for c in run.conversations] == ["g-5"] * 3
    assert [c.group for c in run.conversations] == [("step=1",), ("step=1",), ("step=2",)]
    states, singletons = shared_prefix_states(run.conversations)
    assert [s.replies for s in states] == [["And?", "And?"]] and singletons == 1  # step 2's reply stands alone


def test_verifiers_legacy_results_prompt_is_given_completion_user_turns_are_the_simulator(tmp_path):
    rows = [{"example_id": 3, "prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Task X"}],
             "completion": [{"role": "assistant", "content": "", "tool_calls": [json.dumps(
                 {"id": "c", "type": "function", "function": {"name": "look", "arguments": "{\"q\": 1}"}})]},
                 {"role": "tool", "content": "found", "tool_call_id": "c"},
                 {"role": "assistant", "content": "Which one?"}, {"role": "user", "content": "The red one."}],
             "reward": 0.25, "error": None, "info": {}},
            {"example_id": 3, "prompt": "Task X", "completion": "Done.", "reward": 1.0,
             "error": {"error": "ModelError", "message": "timeout"}}]  # fmt: skip
    d = tmp_path / "run"
    d.mkdir()
    (d / "metadata.json").write_text(json.dumps({"env_id": "env-x", "model": "agent-m"}))
    f = write_jsonl(d / "out.jsonl", rows)
    assert format_of(f) == "verifiers-results"
    run = read_published(f, "verifiers-results")
    a, b = run.conversations
    assert turns(a) == [("system", "Be brief."), ("simulator", "Task X"), ("policy", 'look({"q": 1})'),
                        ("tool", "found"), ("policy", "Which one?"), ("simulator", "The red one.")]  # fmt: skip
    assert a.messages[1].meta.get("given") and not a.messages[5].meta.get("given")
    assert (a.task_id, a.trial, a.reward, a.policy, a.task_content) == ("3", 0, 0.25, "agent-m", "Task X")
    assert b.trial == 1 and b.infra_error == "ModelError: timeout" and b.reward is None
    assert turns(b) == [("simulator", "Task X"), ("policy", "Done.")]


def test_a_given_prompt_is_in_every_prefix_but_is_no_state():
    """The legacy sample's prompt is the same text in all 4 rollouts of a task: counted as replies it would
    be a state of total collapse. Only the drawn openings are states."""
    run = read_published(SAMPLES / "verifiers-legacy" / "results.jsonl", "verifiers-results")
    states, _ = shared_prefix_states(run.conversations)
    assert len(states) == 3 and all(len(s.replies) == 4 for s in states)
    assert not any(r.startswith("Customer scenario") for s in states for r in s.replies)
    assert all(any(m.text.startswith("Customer scenario") for m in s.prefix) for s in states)


# --- NeMo-Gym ------------------------------------------------------------------------------------------
def gym_row(task: int, trial: int, reply: str, **extra: Any) -> dict[str, Any]:
    return {
        "responses_create_params": {"input": [{"type": "message", "role": "developer", "content": "Be a clerk."},
                                              {"role": "user", "content": [{"type": "input_text", "text": "My bill is wrong."}]}]},
        "response": {"model": "agent-m", "status": "completed", "error": None, "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "function_call", "name": "bill", "arguments": "{\"id\": 9}", "call_id": "c"},
            {"type": "function_call_output", "call_id": "c", "output": "total 12"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Which line?"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": reply}]}]},
        "reward": 1.0, "_ng_task_index": task, "_ng_rollout_index": trial, **extra,
    }  # fmt: skip


def test_nemo_gym_rollouts_input_is_given_output_user_turns_are_the_simulator(tmp_path):
    rows = [gym_row(4, 0, "The second line."), gym_row(4, 1, "Line two."),
            {**gym_row(4, 2, "x"), "response": {"status": "failed", "error": {"message": "overloaded"}, "output": []},
             "config": {"llm_user": "sim-m"}}]  # fmt: skip
    f = write_jsonl(tmp_path / "dump.jsonl", rows)
    assert format_of(f) == "nemo-gym"
    run = read_published(f, "nemo-gym")
    a, b, bad = run.conversations
    assert turns(a) == [("system", "Be a clerk."), ("simulator", "My bill is wrong."), ("policy", 'bill({"id": 9})'),
                        ("tool", "total 12"), ("policy", "Which line?"), ("simulator", "The second line.")]  # fmt: skip
    assert a.messages[1].meta == {"given": True} and a.messages[5].meta == {}
    assert (a.task_id, a.trial, b.trial, a.reward, a.policy) == ("4", 0, 1, 1.0, "agent-m")
    assert a.task_content == "My bill is wrong."
    assert bad.infra_error == "response error: overloaded" and bad.reward is None and bad.simulator == "sim-m"
    states, _ = shared_prefix_states(run.conversations)
    assert [s.replies for s in states] == [["The second line.", "Line two."]]


def test_nemo_gym_user_simulation_trajectory_and_tau2_through_gym_are_read_with_every_user_turn_drawn(tmp_path):
    sim_turn = {"type": "text", "source": "user", "text": "I need a ramp at the venue.",
                "responses": [{"model": "sim-m", "output": []}]}  # fmt: skip
    trajectory_row = {
        **gym_row(1, 0, "unused"),
        "result": {"trajectory": {"prefill_message_count": 0, "messages": [
            sim_turn,
            {"type": "tool_call", "source": "agent", "tool_name": "ramp", "arguments": "{\"v\": 1}"},
            {"type": "tool_execution", "source": "environment", "tool_name": "ramp", "execution_result": "ok"},
            {"type": "text", "source": "agent", "text": "Booked."},
            {"type": "text", "source": "user", "text": "###STOP###"}]}},
    }  # fmt: skip
    tau2_row = {
        **gym_row(2, 0, "unused"), "config": {"llm_user": "user-llm", "llm_agent": "agent-llm"},
        "result": {"task_id": "2", "termination_reason": "user_stop", "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?"},
            {"role": "user", "content": "Cancel my order."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "name": "cancel", "arguments": {"o": 1}}]},
            {"role": "tool", "content": "done", "id": "c"}]},
    }  # fmt: skip
    tau2_row["response"] = {**tau2_row["response"], "model": ""}
    run = read_published(write_jsonl(tmp_path / "g.jsonl", [trajectory_row, tau2_row]), "nemo-gym")
    a, b = run.conversations
    assert turns(a) == [("system", "Be a clerk."), ("simulator", "I need a ramp at the venue."),
                        ("policy", 'ramp({"v": 1})'), ("tool", "ok"), ("policy", "Booked."),
                        ("simulator", "###STOP###")]  # fmt: skip
    assert all(not m.meta.get("given") for m in a.messages) and (a.simulator, a.policy) == ("sim-m", "agent-m")
    assert turns(b) == [("policy", "Hi! How can I help you today?"), ("simulator", "Cancel my order."),
                        ("policy", 'cancel({"o": 1})'), ("tool", "done")]  # fmt: skip
    assert (b.simulator, b.policy, b.task_id) == ("user-llm", "agent-llm", "2")


# --- detection, errors, the CLI ------------------------------------------------------------------------
@pytest.mark.parametrize("name,fmt", sorted(SAMPLE_FORMATS.items()))
def test_each_sample_is_detected_by_content_even_renamed(tmp_path, name, fmt):
    assert format_of(SAMPLES / name) == fmt
    renamed = tmp_path / "renamed.dat"
    shutil.copy(SAMPLES / name, renamed)
    assert format_of(renamed) == fmt
    assert len(read_published(renamed, fmt).conversations) == 12


@pytest.mark.parametrize(
    "fmt,rows,match",
    [
        ("verifiers", [episode([("a", True, "m", [node(None, "user", "hi")], {})]), "{\"traces\": [1], \"task\": {}}"],
         r"line 2: traces\[0\]: expected a trace"),
        ("verifiers", [episode([("a", True, "m", [node(None, "user", "hi"), node(5, "assistant", "x")], {})])],
         r"line 1: traces\[0\]\.nodes\[1\]\.parent: expected null or the index of an earlier node"),
        ("verifiers-results", [{"example_id": 1, "prompt": [], "completion": [], "reward": 1},
                               {"example_id": 1, "prompt": [], "completion": [], "reward": "high"}],
         r"line 2: reward: expected a finite number"),
        ("verifiers-results", [{"example_id": 1, "prompt": [], "completion": []}, "{\"example_id\": 1, \"prompt\": [{\"content\": 1}]"],
         r"line 2: not valid JSON"),
        ("nemo-gym", [gym_row(1, 0, "a"), {**gym_row(1, 1, "b"), "responses_create_params": {"input": [{"type": "message", "role": "robot"}]}}],
         r"line 2: responses_create_params\.input\[0\]\.role: expected one of"),
    ],
)  # fmt: skip
def test_a_malformed_record_is_one_line_naming_the_file_and_line_and_nothing_is_written(tmp_path, capsys, fmt,
                                                                                     rows, match):  # fmt: skip
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    with pytest.raises(ConfigError, match=match):
        read_published(f, fmt)
    out = tmp_path / "run"
    assert main(["audit", "--from", str(f), "--partition", "exact", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0] and "line" in err[0] and "Traceback" not in err[0]
    assert not out.exists()


def test_a_malformed_voice_tick_names_the_simulation_and_tick(tmp_path):
    f = voice_results(tmp_path / "r.json", [voice_sim("s9", [tick(0, user_chunk={"content": 7})])])
    with pytest.raises(ConfigError, match=r"simulation 's9': ticks\[0\]\.user_chunk\.content: expected a string"):
        read_published(f, "tau2")


def test_tau2_pretty_printed_results_are_detected_by_content(tmp_path):
    f = voice_results(tmp_path / "export.txt", [voice_sim("s1", [tick(0, agent_chunk=chunk("Hi.", "a"))])])
    f.write_text(json.dumps(json.loads(f.read_text()), indent=2))
    assert format_of(f) == "tau2"


@pytest.mark.parametrize("name", sorted(SAMPLE_FORMATS))
def test_audit_from_each_sample_through_the_cli(tmp_path, capsys, name):
    out = tmp_path / "run"
    rc = main(["audit", "--from", str(SAMPLES / name), "--partition", "exact", "--out", str(out), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    res = json.loads((out / "results.json").read_text())
    assert res["source"]["format"] == SAMPLE_FORMATS[name] and res["source"]["conversations"] == 12
    assert res["summary"]["n_states"] >= 3


# --- hostile values anywhere in a record ------------------------------------------------------------------
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HOSTILE = st.one_of(
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
    st.integers(min_value=100, max_value=900).map(lambda n: 10**n),
    st.integers(min_value=101, max_value=300).map(lambda n: json.loads("[" * n + "]" * n)),
    st.sampled_from([float("nan"), float("inf"), "hot", True, False, [], {}, [1, "x"], {"a": None}, None, 0, -3, 2.5]),
)  # fmt: skip


def _paths(v: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, c in items:
        out += _paths(c, (*at, k))
    return out


@settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(sorted(SAMPLE_FORMATS)), value=HOSTILE, pick=st.integers(0, 10**9))
def test_a_hostile_value_anywhere_is_one_config_error_or_a_run_that_writes_back(tmp_path_factory, name, value, pick):
    import math

    fmt = SAMPLE_FORMATS[name]
    if fmt == "tau2":
        data = json.loads((SAMPLES / name).read_text())
        data["simulations"] = data["simulations"][:2]
        paths = _paths(data)
    else:
        data = [json.loads(line) for line in (SAMPLES / name).read_text().splitlines()[:2]]
        paths = _paths(data)
    path = paths[pick % len(paths)]
    target = data
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    f = tmp_path_factory.mktemp("fuzz") / "in.jsonl"
    text = json.dumps(data) if fmt == "tau2" else "".join(json.dumps(r) + "\n" for r in data)
    f.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        run = read_published(f, fmt)
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(f) in str(exc)
        return
    for c in run.conversations:
        for m in c.messages:
            m.text.encode("utf-8")
        assert c.reward is None or math.isfinite(c.reward)
        json.dumps([c.conversation_id, c.task_id, c.trial, c.simulator, c.policy, c.task_content], allow_nan=False)


@pytest.mark.reliability
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(sorted(SAMPLE_FORMATS)), value=HOSTILE, pick=st.integers(0, 10**9))
def test_audit_from_a_sample_with_a_hostile_value_ends_in_an_answer_or_one_line(tmp_path_factory, capsys, name,
                                                                                value, pick):  # fmt: skip
    """Through the whole audit (not the reader alone): exit 0, 1 or one error line, never the CLI's backstop."""
    fmt = SAMPLE_FORMATS[name]
    lines = (SAMPLES / name).read_text().splitlines()
    data: Any = json.loads((SAMPLES / name).read_text()) if fmt == "tau2" else [json.loads(x) for x in lines]
    paths = _paths(data)
    path = paths[pick % len(paths)]
    target = data
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    d = tmp_path_factory.mktemp("cli")
    f = d / "in.data"
    text = json.dumps(data) if fmt == "tau2" else "".join(json.dumps(r) + "\n" for r in data)
    f.write_bytes(text.encode("utf-8", "surrogatepass"))
    capsys.readouterr()
    rc = main(["audit", "--from", str(f), "--partition", "exact", "--out", str(d / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    assert rc in (0, 1) or (rc == 2 and len([x for x in err.splitlines() if "error" in x]) == 1), err


def _tau2_gym_row(trial: int, opening: str, reward: float, user: str = "user-llm") -> dict[str, Any]:
    """A τ2-through-Gym rollout of τ2 task '50' at Gym's row 192: the input ends with the simulator's opening."""
    row = gym_row(192, trial, "unused")
    row["responses_create_params"]["input"] = [{"role": "system", "content": "You are an agent."},
                                               {"role": "assistant", "content": "Hi! How can I help you today?"},
                                               {"role": "user", "content": opening}]  # fmt: skip
    row["config"] = {"llm_user": user, "llm_agent": "agent-llm"}
    row["task"] = {"id": "50", "user_scenario": {"persona": None, "instructions": {
        "domain": "retail", "reason_for_call": "You want to undo cancelling an order."}}}  # fmt: skip
    row["result"] = {
        "task_id": "50",
        "termination_reason": "user_stop",
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?"},
            {"role": "user", "content": opening},
        ],
    }
    row["reward"] = reward
    row["response"] = {**row["response"], "model": ""}  # as Gym's τ2 agent writes it: the model is in config
    return row


def test_tau2_through_gym_repeats_are_one_task_keyed_by_the_tau2_task_and_pair_with_a_tau2_file(tmp_path):
    from tests.test_compare import tau2_file

    f = write_jsonl(tmp_path / "gym.jsonl", [_tau2_gym_row(0, "I need help urgently, I cancelled by mistake.", 1.0),
                                              _tau2_gym_row(1, "Hi, please undo a cancellation.", 0.0)])  # fmt: skip
    a, b = read_published(f, "nemo-gym").conversations
    assert (a.task_id, b.task_id) == ("50", "50") and a.conversation_id == "192:0"
    assert a.task_content == b.task_content == "domain: retail\nreason_for_call: You want to undo cancelling an order."
    native = tau2_file(tmp_path / "native.json", "agent-llm", "other-user", {"50": [1.0, 1.0]},
                       {"50": {"instructions": {"domain": "retail",
                                                "reason_for_call": "You want to undo cancelling an order."}}})  # fmt: skip
    rc = main(["compare", str(f), str(native), "--out", str(tmp_path / "run")])
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert rc == 0 and results["pairing"]["tasks"] == 1
    assert [(e["n_tasks"], e["difference"]) for e in results["simulator_effects"]] == [(1, 0.5)]
    assert [(n["simulator"], n["flip_rate"]) for n in results["noise_floor"]] == [
        ("user-llm", 1.0),
        ("other-user", 0.0),
    ]


def test_a_user_simulation_row_whose_opening_is_drawn_is_keyed_by_its_scenario(tmp_path):
    def row(trial: int, opening: str) -> dict[str, Any]:
        r = gym_row(3, trial, "unused")
        r["customer_scenario"] = {"customer_persona": "Busy parent", "reason_for_contact": "Cancel a reservation"}
        r["result"] = {"trajectory": {"prefill_message_count": 0, "messages": [
            {"type": "text", "source": "user", "text": opening, "responses": [{"model": "sim-m"}]},
            {"type": "text", "source": "agent", "text": "Done."}]}}  # fmt: skip
        return r

    a, b = read_published(write_jsonl(tmp_path / "u.jsonl", [row(0, "Hello, cancel it."), row(1, "Hi! Cancel.")]),
                          "nemo-gym").conversations  # fmt: skip
    assert a.task_content == b.task_content == "customer_persona: Busy parent\nreason_for_contact: Cancel a reservation"


def test_verifiers_an_untrainable_judge_is_no_user_and_two_untrainable_agents_pick_the_one_named_user(tmp_path):
    solver = [node(None, "user", "Echo 'hi'."), node(0, "assistant", "hi", True)]
    judge = [node(None, "system", "Judge the solver."), node(0, "user", "The solver said hi."),
             node(1, "assistant", "PASS", True)]  # fmt: skip
    judged = episode([("solver", True, "agent-m", solver, {"echoed": {"score": 1.0}}),
                      ("judge", False, "judge-m", judge, {})], env={"id": "agentic-judge"})  # fmt: skip
    (conv,) = read_published(write_jsonl(tmp_path / "j.jsonl", [judged]), "verifiers").conversations
    assert conv.policy == "agent-m" and conv.simulator is None and conv.reward == 1.0
    assert turns(conv) == [("simulator", "Echo 'hi'."), ("policy", "hi")] and conv.conversation_id == "ep1"
    user = [node(None, "system", "You are a diner."), node(0, "user", "Hello!"), node(1, "assistant", "Two.", True)]
    agent = [node(None, "user", "Two."), node(0, "assistant", "Booked.", True)]
    both = episode([("judge", False, "judge-m", judge, {}), ("assistant", True, "agent-m", agent, {"ok": {"score": 1.0}}),
                    ("user", False, "sim-m", user, {})])  # fmt: skip
    (conv,) = read_published(write_jsonl(tmp_path / "b.jsonl", [both]), "verifiers").conversations
    assert (conv.simulator, conv.policy, conv.reward) == ("sim-m", "agent-m", 1.0)
    assert turns(conv) == [("system", "You are a diner."), ("policy", "Hello!"), ("simulator", "Two.")]


def test_an_earlier_verifiers_results_file_with_id_for_the_example_is_detected_and_read(tmp_path):
    d = tmp_path / "evals" / "run1"
    d.mkdir(parents=True)
    (d / "metadata.json").write_text(json.dumps({"env_id": "arc", "model": "gpt-4.1-mini", "rollouts_per_example": 2}))
    rows = [{"id": ex, "prompt": [{"role": "user", "content": f"Puzzle {ex}."}],
             "completion": [{"role": "assistant", "content": "RESET"}, {"role": "user", "content": "frame 2"}],
             "task": "default", "info": {"game_id": "ls20"}, "reward": r} for ex, r in ((0, 0.0), (0, 1.0), (1, 1.0))]  # fmt: skip
    f = write_jsonl(d / "results.jsonl", rows)
    assert format_of(f) == "verifiers-results"
    run = read_published(f, "verifiers-results")
    assert [(c.task_id, c.trial, c.reward) for c in run.conversations] == [("0", 0, 0.0), ("0", 1, 1.0), ("1", 0, 1.0)]
    assert run.policy == "gpt-4.1-mini" and turns(run.conversations[0])[-1] == ("simulator", "frame 2")


def test_nemo_gym_input_data_without_any_response_is_refused_in_one_line(tmp_path):
    rows = [{"uuid": f"example_{k}", "task_id": k, "agent_ref": {"name": "simple_agent"},
             "responses_create_params": {"input": [{"role": "user", "content": f"Hi {k}"}]}} for k in range(3)]  # fmt: skip
    f = write_jsonl(tmp_path / "example_rollouts.jsonl", rows)
    with pytest.raises(ConfigError, match=r"example_rollouts.jsonl: no line holds a response: Gym's input data"):
        read_published(f, "nemo-gym")
    rc = main(["compare", str(f), "--out", str(tmp_path / "run")])
    assert rc == 2 and not (tmp_path / "run").exists()
