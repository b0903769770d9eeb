"""The CooperBench arena: two agents in their own copies of BASE, messages, limits, scoring."""

from __future__ import annotations

import json

import pytest

from collapse_probe.benchmarks import make_arena
from collapse_probe.benchmarks.cooperbench import SUBMIT, apply_and_submit_command, demo_dir, discover_tasks
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion

DEMO = demo_dir()


def _task(name: str):
    return next(t for t in discover_tasks(DEMO) if t.name == name)


def _gold(task, fid: int) -> str:
    return task.features[fid].gold_patch


# ---- the arena -----------------------------------------------------------------------------


GOLD = f"scripted:{DEMO / 'scripted' / 'gold_agent.json'}"


def _run(arena, task_ids, policy, sim):
    from collapse_probe.rollout._engine import EngineConfig, make_specs, run_conversations_sync
    from collapse_probe.simulators import make_participant

    tasks = [arena.task(t) for t in task_ids]
    parts = {s: make_participant(s, cache=False) for s in dict.fromkeys([policy, sim])}
    specs = make_specs(tasks, [policy], [sim], rollouts=1, seed=0)
    return run_conversations_sync(arena, specs, parts, config=EngineConfig(progress=False))


def test_arena_gold_agents_score_success(tmp_path):
    arena = make_arena("cooperbench-demo", compact=True, tool_protocol="text")
    (rec,) = _run(arena, ["demo_minstats_task/task4/f1_f2"], GOLD, GOLD)
    assert rec.status == "submitted", rec.messages
    assert rec.success is True and rec.reward == 1.0
    info = rec.info or {}
    assert info["merge"] == "union" and info["order"] == "12"
    assert all(a["status"] == "submitted" for a in info["agents"].values())
    assert "def mode" in info["patches"]["agent1"] and "def variance" in info["patches"]["agent2"]


def test_arena_messages_reach_partner_before_its_next_call():
    note = json.dumps({"name": "send_message", "arguments": {"recipient": "agent2", "content": "I take core.py"}})
    submit = json.dumps({"name": "bash", "arguments": {"command": f"echo {SUBMIT}"}})
    arena = make_arena("cooperbench-demo", compact=True, tool_protocol="text", partial_reward=True)
    task = arena.task("demo_minstats_task/task4/f1_f3")
    ep = arena.new_episode(task, seed=0)

    assert arena.next_side(ep) == "policy"
    arena.prompt_for(ep, "policy")
    arena.apply(ep, "policy", Completion(note), note)
    assert arena.next_side(ep) == "simulator"
    prompt = arena.prompt_for(ep, "simulator")
    assert prompt.messages[-1]["content"] == "[Message from agent1]: I take core.py"
    arena.apply(ep, "simulator", Completion(submit), submit)
    assert ep.state["agents"]["agent2"]["status"] == "submitted"
    assert arena.next_side(ep) == "policy"  # agent2 is done; agent1 goes on alone
    arena.prompt_for(ep, "policy")
    arena.apply(ep, "policy", Completion("no tool call here"), "no tool call here")
    assert ep.state["agents"]["agent1"]["format_errors"] == 1
    arena.apply(ep, "policy", Completion(submit), submit)
    assert ep.done and arena.next_side(ep) is None
    assert [m["role"] for m in ep.messages].count("message") == 1


def test_arena_step_limit_and_patch_collected_without_submit(tmp_path):
    arena = make_arena("cooperbench-demo", compact=True, tool_protocol="text", max_steps=1)
    task = arena.task("demo_minstats_task/task4/f1_f2")
    ep = arena.new_episode(task, seed=0)

    task_obj = _task("demo_minstats_task/task4")
    edit = json.dumps({"name": "bash", "arguments": {"command": f"git apply <<'EOF'\n{_gold(task_obj, 1)}EOF"}})
    arena.next_side(ep)
    arena.prompt_for(ep, "policy")
    arena.apply(ep, "policy", Completion(edit), edit)
    assert ep.state["agents"]["agent1"]["status"] == "step_limit"
    arena.next_side(ep)
    arena.prompt_for(ep, "simulator")
    arena.apply(ep, "simulator", Completion("```bash\ntouch new_file.py\n```"), "```bash\ntouch new_file.py\n```")
    assert ep.done and ep.status == "done"
    assert "def mode" in ep.state["patches"]["agent1"]
    assert "new_file.py" in ep.state["patches"]["agent2"]  # untracked files are part of the patch


def test_unknown_option_and_variant_are_clear_errors():
    with pytest.raises(ConfigError, match="unknown option"):
        make_arena("cooperbench-demo", bogus=1)
    with pytest.raises(ConfigError, match="mode"):
        make_arena("cooperbench-demo", mode="trio")


def test_cli_play_with_gold_agents(tmp_path, capsys):
    from collapse_probe.cli import main

    out = tmp_path / "run"
    rc = main(["play", "--benchmark", "cooperbench-demo", "--policy", GOLD, "--sim", GOLD, "--tasks", "2",
               "--rollouts", "1", "--seed", "3", "--no-progress", "--show", "0", "--out", str(out)])  # fmt: skip
    assert rc == 0
    records = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for rec in records:  # both gold agents submitted; success is exactly "both features pass on the merge"
        assert rec["status"] == "submitted"
        assert rec["success"] == all(rec["info"]["passed"]) and rec["reward"] == float(rec["success"])
    assert "cooperbench-demo: mean reward" in capsys.readouterr().out


def test_prompt_is_rebuilt_exactly_from_a_recorded_prefix():
    """Audits rebuild a partner state from the record: the prompt must be the one the partner saw live."""
    arena = make_arena("cooperbench-demo", compact=True, tool_protocol="text")
    task = arena.task("demo_minstats_task/task4/f2_f3")
    ep = arena.new_episode(task, seed=0)
    note = json.dumps({"name": "send_message", "arguments": {"recipient": "agent2", "content": "core.py end is mine"}})
    look = json.dumps({"name": "bash", "arguments": {"command": "ls minstats"}})
    live = []
    for side, text in (("policy", note), ("simulator", look), ("policy", look), ("simulator", look)):
        assert arena.next_side(ep) == side
        prompt = arena.prompt_for(ep, side)
        live.append((side, len(ep.messages), prompt.messages, prompt.prompt))
        arena.apply(ep, side, Completion(text), text)
    assert '"output": "__init__.py\\ncore.py\\n"' in ep.messages[-1]["content"]
    for side, n, messages, text_prompt in live:
        rebuilt = arena.new_episode(task, seed=0)
        rebuilt.messages = [dict(m) for m in ep.messages[:n]]
        again = arena.prompt_for(rebuilt, side)
        assert again.messages == messages and again.prompt == text_prompt
    arena._finish(ep)


def test_solo_mode_one_agent_gets_both_features_and_no_partner():
    arena = make_arena("cooperbench-demo", mode="solo", tool_protocol="text")
    task = arena.task("demo_textkit_task/task1/f2_f3")
    ep = arena.new_episode(task, seed=0)
    assert arena.next_side(ep) == "policy"
    prompt = arena.prompt_for(ep, "policy")
    user = prompt.messages[1]["content"]
    assert user.startswith("## Feature 2\n\n**Title**: Limit the length of slugs")
    assert "\n\n---\n\n## Feature 3\n\n**Title**: Add truncate_words" in user
    assert "send_message" not in prompt.messages[0]["content"] + user
    t = _task("demo_textkit_task/task1")
    first = json.dumps({"name": "bash", "arguments": {"command": f"git apply <<'EOF'\n{_gold(t, 2)}EOF"}})
    # The second gold patch overlaps the first's context: a 3-way apply merges it. Its notes go to stderr, which
    # is part of the output: the submit line must come first, as in the reference.
    cmd = f"git add -A && git apply --3way 2>/dev/null <<'EOF' && echo {SUBMIT}\n{_gold(t, 3)}EOF"
    second = json.dumps({"name": "bash", "arguments": {"command": cmd}})
    arena.apply(ep, "policy", Completion(first), first)
    assert arena.next_side(ep) == "policy"  # no partner: the policy goes again
    arena.prompt_for(ep, "policy")
    arena.apply(ep, "policy", Completion(second), second)
    assert ep.done and ep.status == "submitted"
    import asyncio

    (score,) = asyncio.run(arena.score([ep]))
    assert score.success is True and score.reward == 1.0 and score.info["mode"] == "solo"


def test_gold_command_submits_only_when_the_patch_applies(tmp_path):
    from collapse_probe.benchmarks.cooperbench import run_command

    task = _task("demo_minstats_task/task4")
    from collapse_probe.benchmarks.cooperbench import base_repo

    repo = base_repo(task).clone(tmp_path / "r")
    ok = run_command(apply_and_submit_command(_gold(task, 1)), repo)
    assert ok.returncode == 0 and ok.output.splitlines()[0] == SUBMIT
    again = run_command(apply_and_submit_command(_gold(task, 1)), repo)  # already applied: must not submit
    assert again.returncode != 0 and SUBMIT not in again.output


def test_audit_hooks_probe_states_and_meaning_key():
    arena = make_arena("cooperbench-demo", tool_protocol="text")
    tasks = arena.load_tasks(2, seed=0)
    specs = arena.probe_states(tasks)
    assert [s.kind for s in specs] == ["opening", "opening"] and all(s.messages == [] for s in specs)
    ep = arena.new_episode(specs[0].task, 0)
    prompt = arena.prompt_for(ep, "simulator")
    assert "You are agent2; your colleague is agent1." in prompt.messages[1]["content"]
    key = arena.meaning_key
    assert key(json.dumps({"name": "bash", "arguments": {"command": f"echo {SUBMIT}"}})) == "submit"
    assert key(json.dumps({"name": "bash", "arguments": {"command": "git diff"}})) == "bash:git"
    assert key(json.dumps({"name": "send_message", "arguments": {"recipient": "agent1", "content": "hi"}})) == "message"
    assert key("I will think about it.") == "no_tool_call"


def test_cli_bad_data_is_exit_2_with_one_line(tmp_path, monkeypatch, capsys):
    from collapse_probe.cli import main

    monkeypatch.delenv("COLLAPSE_PROBE_COOPERBENCH_DATA", raising=False)
    args = ["play", "--benchmark", "cooperbench", "--policy", GOLD, "--sim", GOLD, "--out", str(tmp_path / "r")]
    assert main(args) == 2
    assert "COLLAPSE_PROBE_COOPERBENCH_DATA" in capsys.readouterr().err
    assert main([*args, "--cooperbench-data", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_native_tool_calls_round_trip_in_openai_format():
    arena = make_arena("cooperbench-demo", tool_protocol="native")
    task = arena.task("demo_minstats_task/task4/f1_f2")
    ep = arena.new_episode(task, seed=0)
    assert arena.next_side(ep) == "policy"
    prompt = arena.prompt_for(ep, "policy")
    assert [t["function"]["name"] for t in prompt.tools] == ["bash", "send_message"]
    calls = [
        {"id": "c1", "name": "bash", "arguments": '{"command": "ls minstats"}'},
        {"id": "c2", "name": "send_message", "arguments": {"recipient": "agent2", "content": "I add mode()"}},
    ]
    arena.apply(ep, "policy", Completion("", tool_calls=calls), "")
    tool_msgs = [m for m in ep.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2"]
    assert json.loads(tool_msgs[0]["content"])["output"] == "__init__.py\ncore.py\n"
    assert tool_msgs[1]["content"] == "Message sent to agent2"
    assert arena.next_side(ep) == "simulator"
    partner = arena.prompt_for(ep, "simulator").messages
    assert partner[-1] == {"role": "user", "content": "[Message from agent1]: I add mode()"}
    arena.apply(ep, "simulator", Completion("thinking out loud"), "thinking out loud")  # no call: format error
    assert arena.next_side(ep) == "policy"
    again = arena.prompt_for(ep, "policy").messages
    assert again[2]["role"] == "assistant" and [c["id"] for c in again[2]["tool_calls"]] == ["c1", "c2"]
    assert [m["role"] for m in again[3:]] == ["tool", "tool"] and again[3]["tool_call_id"] == "c1"
    arena._finish(ep)


def test_directed_pairs_let_the_policy_play_either_feature():
    arena = make_arena("cooperbench-demo", directed=True)
    tasks = arena.load_tasks(None, seed=0)
    assert len(tasks) == 2 * len(arena.pairs())
    swapped = arena.task("demo_minstats_task/task4/f1_f2@agent2")
    ep = arena.new_episode(swapped, seed=0)
    assert arena.agent_of(ep, "policy") == "agent2" and arena.agent_of(ep, "simulator") == "agent1"
    assert arena.next_side(ep) == "simulator"  # agent1 (the partner here) moves first
    assert "**Title**: Add variance and stdev" in arena.prompt_for(ep, "policy").messages[1]["content"]
