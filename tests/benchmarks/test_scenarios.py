"""``--benchmark scenarios``: a user's own scenarios from one file, validated when read, through audit,
play, cross-play, gate and train like a shipped benchmark."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from collapse_probe.benchmarks import get_benchmark
from collapse_probe.benchmarks.scenarios import (
    ScenarioArena,
    example_path,
    load_scenarios,
    make_arena,
    pattern_answers,
    stated_answer,
)
from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion

HIDDEN = """\
# an insurance-claims domain, none of whose words the clinic example uses
- id: hail-roof
  instructions: You are Lee, whose roof was damaged by hail on Monday. You have photos and a repair quote.
  opening: "Claims desk, how can I help?"
  prefix:
    - {role: user, content: "Hail broke my roof."}
    - {role: assistant, content: "Sorry to hear it. Do you have photos?"}
  closing: "To finish: do you accept the offer? Say [CLAIM ACCEPT] or [CLAIM REJECT]."
  reward:
    pattern: '\\[CLAIM (ACCEPT|REJECT)\\]'
    values: {ACCEPT: 1.0, REJECT: 0.0}
- id: flood-basement
  instructions: You are Kim; your basement flooded and you are not sure you are covered.
  opening: "Claims desk, how can I help?"
  closing: "To finish: do you accept the offer? Say [CLAIM ACCEPT] or [CLAIM REJECT]."
  reward:
    pattern: '\\[CLAIM (ACCEPT|REJECT)\\]'
    values: {ACCEPT: 1.0, REJECT: 0.0}
"""

CLAIMANT = {  # the exact distribution the hidden domain's scripted claimant samples from
    "rules": [{"if_contains": ["offer"], "responses": [
        {"text": "Fine, I take it. [CLAIM ACCEPT]", "p": 0.7}, {"text": "No, too low. [CLAIM REJECT]", "p": 0.3}]}],
    "responses": [{"text": "I need to file a claim.", "p": 0.6}, {"text": "Can you help with damage to my house?", "p": 0.4}],
}  # fmt: skip


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------------------------------ the file


def test_the_shipped_example_validates_and_is_registered():
    scenarios = load_scenarios(example_path())
    assert len(scenarios) == 6 and len({s.id for s in scenarios}) == 6
    assert get_benchmark("scenarios").data == ("scenarios",)
    assert all(s.reward is not None and s.reward.values == {"AGREES": 1.0, "UNSURE": 0.5, "DECLINES": 0.0}
               for s in scenarios)  # fmt: skip
    assert Path("examples/clinic-intake.yaml").read_bytes() == example_path().read_bytes()


def test_pattern_answers_enumerate_the_closed_group():
    assert pattern_answers(r"\[TRIAGE (URGENT|ROUTINE)\]") == ["ROUTINE", "URGENT"]
    assert pattern_answers(r"(?P<answer>yes|no(?:t now)?)!") == ["no", "not now", "yes"]
    assert pattern_answers(r"\[STARS ([1-5])\]") == ["1", "2", "3", "4", "5"]
    assert pattern_answers(r"\[N (\d+)\]") is None and pattern_answers(r"(.)") is None


def test_yaml_json_and_jsonl_give_the_same_scenarios(tmp_path):
    import yaml

    data = yaml.safe_load(HIDDEN)
    y = load_scenarios(_write(tmp_path, "s.yaml", HIDDEN))
    j = load_scenarios(_write(tmp_path, "s.json", json.dumps({"scenarios": data})))
    jl = load_scenarios(_write(tmp_path, "s.jsonl", "\n".join(json.dumps(d) for d in data) + "\n"))
    assert y == j == jl and [s.id for s in y] == ["hail-roof", "flood-basement"]


def test_yes_no_and_number_answers_keep_their_text_in_yaml(tmp_path):
    text = (
        "- {id: chest pain 01, instructions: x, opening: hi, reward: {pattern: '\\[(YES|NO)\\]', values: {YES: 1, NO: 0}}}\n"
        "- {id: b, instructions: x, opening: hi, reward: {pattern: '\\[STARS ([1-3])\\]', values: {1: 0, 2: 0.5, 3: 1}}}\n"
    )
    a, b = load_scenarios(_write(tmp_path, "s.yaml", text))
    assert a.id == "chest pain 01" and a.reward.values == {"YES": 1.0, "NO": 0.0}
    assert b.reward.values == {"1": 0.0, "2": 0.5, "3": 1.0}


BAD = [  # (file name, content, what the one line must name besides the file)
    ("no-instructions.yaml", "- {id: a, opening: hi}\n", ["'a'", "field instructions", "missing"]),
    ("bad-regex.yaml", "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A|B', values: {A: 1}}}\n",
     ["'a'", "field reward.pattern", "does not compile"]),
    ("no-group.yaml", "- {id: a, instructions: x, opening: hi, reward: {pattern: 'A|B', values: {A: 1}}}\n",
     ["'a'", "field reward.pattern", "no group"]),
    ("missing-value.yaml", "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A|B)', values: {A: 1}}}\n",
     ["'a'", "field reward.values", "'B'"]),
    ("extra-value.yaml",
     "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A|B)', values: {A: 1, B: 0, C: 2}}}\n",
     ["'a'", "field reward.values", "'C'"]),
    ("two-users.yaml", "- {id: a, instructions: x, opening: hi, prefix: [{role: user, content: u}, "
     "{role: user, content: v}]}\n", ["'a'", "field prefix[1].role", "'assistant'"]),
    ("ends-with-user.yaml", "- {id: a, instructions: x, opening: hi, prefix: [{role: user, content: u}]}\n",
     ["'a'", "field prefix[0].role", "end with an 'assistant'"]),
    ("dup.yaml", "- {id: a, instructions: x, opening: hi}\n- {id: a, instructions: y, opening: hi}\n",
     ["'a'", "item 2", "field id", "duplicate"]),
    ("empty.yaml", "", ["no scenarios"]),
    ("empty.json", " \n", ["no scenarios"]),
    ("empty-list.json", "[]", ["no scenarios"]),
    ("wrong-type.yaml", "- {id: a, instructions: [x], opening: hi}\n", ["'a'", "field instructions", "string"]),
    ("number-reward.yaml", "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A)', values: {A: high}}}\n",
     ["'a'", "field reward.values.A"]),
    ("unknown.yaml", "- {id: a, instructions: x, opening: hi, persona: y}\n", ["'a'", "field persona", "not a field"]),
    ("unknown-reward.yaml", "- {id: a, instructions: x, opening: hi, reward: {judge: q, weight: 2}}\n",
     ["'a'", "field reward.weight", "not a field"]),
    ("no-id.yaml", "- {instructions: x, opening: hi}\n", ["item 1", "field id", "missing"]),
    ("number-id.yaml", "- {id: 5, instructions: x, opening: hi}\n",
     ["scenario at item 1: field id: expected a string (quote a number", "got 5"]),
    ("yaml-syntax.yaml", "- {id: a, instructions: x\n", ["line 2", "not valid YAML"]),
    ("json-syntax.json", '[{"id": "a",}]', ["not valid JSON"]),
    ("bad-line.jsonl", '{"id": "a", "instructions": "x", "opening": "hi"}\n{"id": "b",\n', ["line 2", "not valid JSON"]),
    ("jsonl-field.jsonl", '{"id": "a", "instructions": "x", "opening": "hi"}\n{"id": "b", "opening": "hi"}\n',
     ["'b'", "line 2", "field instructions"]),
    ("repeated-key.yaml", "- {id: a, instructions: x, instructions: y, opening: hi}\n", ["'instructions'", "twice"]),
    ("not-a-list.yaml", "id: a\n", ["expected a list of scenarios"]),
    ("blank.yaml", "- {id: a, instructions: '  ', opening: hi}\n", ["'a'", "field instructions", "blank"]),
    ("both.yaml", "- {id: a, instructions: x, opening: hi, reward: {judge: q, pattern: '(A)', values: {A: 1}}}\n",
     ["'a'", "field reward.judge", "not both"]),
    # a reward that is not a finite number: named by its scenario and answer, in every format
    ("inf-value.yaml", "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A|B)', values: {A: 1, B: .inf}}}\n",
     ["scenario 'a' (item 1)", "field reward.values.B", "finite number, got inf"]),
    ("nan-default.yaml",
     "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A)', values: {A: 1}, default: .nan}}\n",
     ["scenario 'a' (item 1)", "field reward.default", "finite number, got nan"]),
    ("inf-value.json", '[{"id": "a", "instructions": "x", "opening": "hi", "reward": {"pattern": "(A|B)", '
     '"values": {"A": Infinity, "B": 0}}}]', ["scenario 'a' (item 1)", "field reward.values.A", "finite number"]),
    ("nan-value.jsonl", '{"id": "a", "instructions": "x", "opening": "hi", "reward": {"pattern": "(A|B)", '
     '"values": {"A": NaN, "B": 0}}}\n', ["scenario 'a' (line 1)", "field reward.values.A", "finite number"]),
    ("null-values.yaml", "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A)', values: null}}\n",
     ["scenario 'a' (item 1)", "field reward.values", "missing"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "named"), BAD, ids=[b[0] for b in BAD])
def test_a_malformed_file_is_one_line_naming_file_scenario_and_field_exit_2_nothing_written(
    tmp_path, monkeypatch, capsys, name, text, named
):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, name, text)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = _cli(capsys, "audit", "--benchmark", "scenarios", "--scenarios", name,
                        "--sim", "scripted:clinic_patient_train", "--no-progress")  # fmt: skip
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert str(path.name) in lines[0] and all(n in lines[0] for n in named), lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no run directory, nothing written
    with pytest.raises(ConfigError):
        load_scenarios(path)


@pytest.mark.parametrize("command", ["play", "crossplay", "train"])
def test_every_command_refuses_a_malformed_file_before_anything_runs(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "s.yaml", "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A|B)', values: {A: 1}}}\n")
    roles = {
        "play": ["--policy", "scripted:clinic_agent_thorough", "--sim", "scripted:clinic_patient_train"],
        "crossplay": ["--policies", "scripted:clinic_agent_thorough", "--sims", "scripted:clinic_patient_train",
                      "--out", "runs/x"],
        "train": ["--sim", "scripted:clinic_patient_train", "--out", "runs/x"],
    }[command]  # fmt: skip
    code, _, err = _cli(capsys, command, "--benchmark", "scenarios", "--scenarios", "s.yaml", *roles)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "field reward.values" in err, err
    assert not (tmp_path / "runs").exists()


def test_without_a_file_the_flag_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(capsys, "play", "--benchmark", "scenarios", "--policy", "scripted:clinic_agent_thorough",
                        "--sim", "scripted:clinic_patient_train")  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "--scenarios" in err and "clinic-intake.yaml" in err


@pytest.mark.parametrize("command", ["audit", "play", "crossplay"])
def test_a_file_without_benchmark_scenarios_is_refused_not_ignored(tmp_path, monkeypatch, capsys, command):
    """Without ``--benchmark scenarios`` the run was P4G's, and the file was never read."""
    monkeypatch.chdir(tmp_path)
    roles = {"audit": ["--sim", "scripted:clinic_patient_train", "--samples", "4"],
             "play": ["--policy", "scripted:clinic_agent_thorough", "--sim", "scripted:clinic_patient_train"],
             "crossplay": ["--policies", "scripted:clinic_agent_thorough", "--sims", "scripted:clinic_patient_train"],
             }[command]  # fmt: skip
    code, _, err = _cli(capsys, command, "--scenarios", str(example_path()), *roles, "--out", "runs/x")
    assert code == 2 and err.count("\n") == 1, err
    assert "--scenarios" in err and "an option of --benchmark scenarios, not of p4g" in err, err
    assert not (tmp_path / "runs").exists()
    # a value from the environment may serve other runs: a P4G audit keeps running
    monkeypatch.setenv("COLLAPSE_PROBE_TAU2_DATA", str(tmp_path))
    code, _, err = _cli(capsys, "audit", "--sim", "scripted:p4g_donor_diverse", "--samples", "4", "--partition", "exact",
                        "--no-progress", "--out", "runs/p4g")  # fmt: skip
    assert code == 0, err


def test_a_config_file_naming_another_benchmarks_data_serves_other_runs(tmp_path, monkeypatch, capsys):
    # a lab-wide config file names every benchmark's data folder; a P4G audit with it keeps running,
    # while the same option typed on the command line is refused
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab.yaml").write_text(f"tau2-data: {tmp_path}\ncooperbench-data: {tmp_path}\n")
    audit = ["audit", "--config", "lab.yaml", "--sim", "scripted:p4g_donor_diverse", "--samples", "4", "--partition",
             "exact", "--no-progress"]  # fmt: skip
    code, _, err = _cli(capsys, *audit, "--out", "runs/lab")
    assert code == 0, err
    code, _, err = _cli(capsys, *audit, "--tau2-data", str(tmp_path), "--out", "runs/typed")
    assert code == 2 and err.count("\n") == 1 and "--tau2-data" in err and "not of p4g, which would ignore it" in err, (
        err
    )


def test_a_switch_or_a_padded_path_from_the_environment_is_kept_and_a_switch_flag_named_without_a_value(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    audit = ["audit", "--sim", "scripted:p4g_donor_diverse", "--samples", "4", "--partition", "exact", "--no-progress"]
    monkeypatch.setenv("COLLAPSE_PROBE_PARTIAL_REWARD", "1")  # parsed as True: not the text "1"
    monkeypatch.setenv("COLLAPSE_PROBE_TAU2_DATA", f"{tmp_path} ")  # kept as written, trailing space and all
    code, _, err = _cli(capsys, *audit, "--out", "runs/env")
    assert code == 0, err
    monkeypatch.delenv("COLLAPSE_PROBE_PARTIAL_REWARD")
    code, _, err = _cli(capsys, *audit, "--partial-reward", "--out", "runs/flag")
    assert code == 2 and err.count("\n") == 1, err
    assert "error: --partial-reward: an option of --benchmark cooperbench" in err, err


# ------------------------------------------------------------------------------------------ the arena


def _run(arena: ScenarioArena, task_id: str, replies: list[str], policy: str = "Tell me more.") -> object:
    task = next(t for t in arena.load_tasks() if t.task_id == task_id)
    ep = arena.new_episode(task, 0)
    queue = list(replies)
    while (side := arena.next_side(ep)) is not None:
        text = queue.pop(0) if side == "simulator" else policy
        arena.apply(ep, side, Completion(text=text), text)
    return ep


def test_conversations_open_with_the_opening_close_with_the_closing_and_pay_the_last_answer(tmp_path):
    arena = make_arena(_write(tmp_path, "s.yaml", HIDDEN), max_turns=2)
    ep = _run(arena, "hail-roof", ["Hail hit us.", "I have photos.", "Okay [CLAIM REJECT] ... no, [CLAIM ACCEPT]"])
    roles = [m["role"] for m in ep.messages]
    assert roles == ["policy", "simulator", "policy", "simulator", "policy", "simulator"]
    assert ep.messages[0]["content"] == "Claims desk, how can I help?" and ep.messages[0]["meta"] == {
        "given": "opening"
    }
    assert ep.messages[4]["meta"] == {"elicitation": True} and ep.status == "done"
    (score,) = asyncio.run(arena.score([ep]))
    assert score.reward == 1.0 and score.info["answer"] == "ACCEPT"
    # an answer at the last round ends it without the closing question; no answer at all pays the default
    ep2 = _run(arena, "hail-roof", ["Hi.", "[CLAIM REJECT]"])
    assert len(ep2.messages) == 4 and asyncio.run(arena.score([ep2]))[0].reward == 0.0
    ep3 = _run(arena, "flood-basement", ["Hi.", "Hm.", "I don't know."])
    assert ep3.status == "no_answer_stated" and asyncio.run(arena.score([ep3]))[0].reward == 0.0
    assert arena.reward_range == (0.0, 1.0)


def test_the_reward_view_reads_the_declared_pattern_and_values(tmp_path):
    text = HIDDEN.replace("{ACCEPT: 1.0, REJECT: 0.0}", "{ACCEPT: 0.8, REJECT: 0.2}", 1)
    arena = make_arena(_write(tmp_path, "s.yaml", text), max_turns=3)
    specs = {s.kind: s for s in arena.probe_states(arena.load_tasks()) if s.task.task_id == "hail-roof"}
    assert set(specs) == {"opening", "prefix", "closing"} and specs["closing"].asks_decision
    assert [m["role"] for m in specs["prefix"].messages] == ["policy", "simulator", "policy"]
    closing = arena.episode_at(specs["closing"].task, specs["closing"].messages)
    assert arena.reward_class(closing, "Sure [CLAIM ACCEPT]") == "reward 0.8"
    assert arena.reward_class(closing, "[CLAIM REJECT]") == "reward 0.2"
    assert arena.reward_class(closing, "what?") == "reward 0"  # no answer: the default
    opening = arena.episode_at(specs["opening"].task, specs["opening"].messages)
    assert arena.reward_class(opening, "[CLAIM ACCEPT]") is None  # a later answer can still replace it
    assert arena.meaning_key("ok [CLAIM ACCEPT]") == "answer ACCEPT" and arena.meaning_key("hello") is None
    assert stated_answer(load_scenarios(arena.source)[0].reward, "[CLAIM ACCEPT] [CLAIM REJECT]") == "REJECT"


def test_a_judge_reward_asks_the_judge_model_and_needs_one(tmp_path):
    path = _write(
        tmp_path, "j.yaml", "- {id: j, instructions: x, opening: hi, reward: {judge: 'Was the user helped?'}}\n"
    )
    with pytest.raises(ConfigError, match=r"'j'.*field reward\.judge.*--judge"):
        make_arena(path)
    judge = _write(tmp_path, "judge.json", json.dumps({"responses": [{"text": "YES", "p": 1.0}]}))
    arena = make_arena(path, judge=f"scripted:{judge}", max_turns=1)
    ep = _run(arena, "j", ["thanks"])
    (score,) = asyncio.run(arena.score([ep]))
    assert score.reward == 1.0 and score.info == {"judge": True}


# ------------------------------------------------------------------------------------------ the pipelines


def _exact_eps(dist: list[dict]) -> float:
    return 1.0 - max(d["p"] for d in dist)


def test_an_unseen_domain_runs_through_audit_play_crossplay_and_gate(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "claims.yaml", HIDDEN)
    _write(tmp_path, "claimant.json", json.dumps(CLAIMANT))
    base = ["--benchmark", "scenarios", "--scenarios", "claims.yaml"]
    code, out, err = _cli(capsys, "audit", *base, "--sim", "scripted:claimant.json", "--partition", "exact",
                          "--states", "2", "--samples", "60", "--no-progress", "--out", "runs/audit")  # fmt: skip
    assert code == 0, err
    res = json.loads((tmp_path / "runs/audit/results.json").read_text())
    truth = {"opening": _exact_eps(CLAIMANT["responses"]), "prefix": _exact_eps(CLAIMANT["responses"]),
             "closing": _exact_eps(CLAIMANT["rules"][0]["responses"])}  # fmt: skip
    states = res["states"]
    assert {s["kind"] for s in states} == set(truth) and len(states) == 5
    for s in states:  # every state's interval covers its scripted truth
        lo, hi = s["collapse_error_ci95"]
        assert lo <= truth[s["kind"]] <= hi, s
    reward = res["summary"]["reward_view"]
    assert reward["n_states"] == 2  # the two closing states, where the reply fixes the reward
    lo, hi = reward["ci95"]
    assert lo <= 0.3 <= hi
    code, _, err = _cli(capsys, "play", *base, "--policy", "scripted:clinic_agent_thorough", "--sim",
                        "scripted:claimant.json", "--tasks", "2", "--rollouts", "2", "--no-progress", "--out", "runs/play")  # fmt: skip
    assert code == 0, err
    recs = [json.loads(x) for x in (tmp_path / "runs/play/conversations.jsonl").read_text().splitlines()]
    assert len(recs) == 4 and all(r["reward"] in (0.0, 1.0) for r in recs)
    config = json.loads((tmp_path / "runs/play/config.json").read_text())
    assert config["arena"]["benchmark"] == "scenarios" and "scenarios" in config["arena"]["data_fingerprints"]


def test_the_clinic_gate_passes_the_thorough_agent_and_fails_the_exploiting_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(example_path(), tmp_path / "clinic-intake.yaml")
    code, _, err = _cli(
        capsys, "crossplay", "--benchmark", "scenarios", "--scenarios", "clinic-intake.yaml",
        "--policies", "scripted:clinic_agent_promise,scripted:clinic_agent_thorough",
        "--sims", "scripted:clinic_patient_train,scripted:clinic_patient_cautious,scripted:clinic_patient_anxious",
        "--train-sim", "scripted:clinic_patient_train", "--tasks", "6", "--rollouts", "4", "--max-turns", "2",
        "--no-progress", "--out", "runs/cp",
    )  # fmt: skip
    assert code == 0, err
    res = json.loads((tmp_path / "runs/cp/results.json").read_text())
    cells = {(c["policy"], c["simulator"]): c["mean_reward"] for c in res["cells"]}
    assert cells[("scripted:clinic_agent_promise", "scripted:clinic_patient_train")] == 1.0  # the exploited mode
    entropy = {d["policy"]: d for d in res["policy_diversity"]}
    assert entropy["scripted:clinic_agent_promise"]["n_classes"] == 1  # the fixed opening is not the policy's
    assert (
        _cli(capsys, "gate", "runs/cp", "--policy", "scripted:clinic_agent_thorough", "--min-transfer", "0.8")[0] == 0
    )
    assert _cli(capsys, "gate", "runs/cp", "--policy", "scripted:clinic_agent_promise", "--min-transfer", "0.8")[0] == 1
    # resumed: the same command finds every conversation recorded and asks no model again
    before = (tmp_path / "runs/cp/conversations.jsonl").read_text()
    code, _, err = _cli(
        capsys, "crossplay", "--benchmark", "scenarios", "--scenarios", "clinic-intake.yaml",
        "--policies", "scripted:clinic_agent_promise,scripted:clinic_agent_thorough",
        "--sims", "scripted:clinic_patient_train,scripted:clinic_patient_cautious,scripted:clinic_patient_anxious",
        "--train-sim", "scripted:clinic_patient_train", "--tasks", "6", "--rollouts", "4", "--max-turns", "2",
        "--no-progress", "--out", "runs/cp",
    )  # fmt: skip
    assert code == 0 and (tmp_path / "runs/cp/conversations.jsonl").read_text() == before
    # a scenario file changed in place is another run: resuming on it is refused
    (tmp_path / "clinic-intake.yaml").write_text(example_path().read_text() + "\n# edited\n")
    code, _, err = _cli(
        capsys, "crossplay", "--benchmark", "scenarios", "--scenarios", "clinic-intake.yaml",
        "--policies", "scripted:clinic_agent_promise,scripted:clinic_agent_thorough",
        "--sims", "scripted:clinic_patient_train,scripted:clinic_patient_cautious,scripted:clinic_patient_anxious",
        "--train-sim", "scripted:clinic_patient_train", "--tasks", "6", "--rollouts", "4", "--max-turns", "2",
        "--no-progress", "--out", "runs/cp",
    )  # fmt: skip
    assert code == 2 and "scenarios" in err, err


def test_a_file_with_fewer_scenarios_than_asked_uses_them_all(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "one.yaml", HIDDEN.split("- id: flood-basement")[0])
    arena = make_arena(tmp_path / "one.yaml")
    with caplog.at_level("WARNING"):
        assert [t.task_id for t in arena.load_tasks(4)] == ["hail-roof"]
    assert "holds 1 scenario(s)" in caplog.text
    _write(tmp_path, "claimant.json", json.dumps(CLAIMANT))
    code, _, err = _cli(capsys, "audit", "--benchmark", "scenarios", "--scenarios", "one.yaml", "--sim",
                        "scripted:claimant.json", "--samples", "10", "--partition", "exact", "--no-progress", "--out",
                        "runs/a")  # fmt: skip
    assert code == 0, err
    assert len(json.loads((tmp_path / "runs/a/results.json").read_text())["states"]) == 3


def test_without_a_closing_the_pattern_s_answers_are_asked_for(tmp_path):
    issue_example = (  # the format of the request, with no closing question
        "- id: chest-pain-01\n  instructions: You are Dana Ruiz, 58.\n"
        "  opening: Thank you for calling Northside Clinic, how can I help?\n"
        "  reward:\n    pattern: '\\[TRIAGE (URGENT|ROUTINE)\\]'\n    values: {URGENT: 1.0, ROUTINE: 0.0}\n"
        "- id: open-answer\n  instructions: x\n  opening: hi\n"
        "  reward: {pattern: '(?i)triage:\\s*(URGENT|ROUTINE)', values: {URGENT: 1.0, ROUTINE: 0.0}}\n"
    )
    arena = make_arena(_write(tmp_path, "s.yaml", issue_example), max_turns=1)
    specs = {(s.task.task_id, s.kind): s for s in arena.probe_states(arena.load_tasks())}
    question = specs[("chest-pain-01", "closing")].messages[-1]["content"]
    assert question.endswith("one of [TRIAGE ROUTINE], [TRIAGE URGENT].")
    state = arena.episode_at(specs[("chest-pain-01", "closing")].task, specs[("chest-pain-01", "closing")].messages)
    assert arena.reward_class(state, "[TRIAGE URGENT]") == "reward 1"
    assert ("open-answer", "closing") not in specs  # '\s*' matches endless texts: no question is made up
    ep = _run(arena, "chest-pain-01", ["It hurts.", "[TRIAGE ROUTINE] I guess"])
    assert ep.messages[-2]["content"] == question and asyncio.run(arena.score([ep]))[0].reward == 0.0


def test_a_simulator_that_never_states_an_answer_gives_no_reward_signal_not_collapse(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    arena = make_arena(example_path())
    assert arena.closed_answers() == [("[PATIENT AGREES]", "answer AGREES"), ("[PATIENT DECLINES]", "answer DECLINES"),
                                      ("[PATIENT UNSURE]", "answer UNSURE")]  # fmt: skip
    silent = {"responses": [{"text": "I will think about it.", "p": 0.5}, {"text": "Let me ask my wife.", "p": 0.5}]}
    _write(tmp_path, "silent.json", json.dumps(silent))
    code, _, err = _cli(capsys, "audit", "--benchmark", "scenarios", "--scenarios", str(example_path()), "--sim",
                        "scripted:silent.json", "--states", "2", "--samples", "40", "--partition", "exact",
                        "--no-progress", "--out", "runs/a")  # fmt: skip
    assert code == 0, err
    res = json.loads((tmp_path / "runs/a/results.json").read_text())
    assert res["summary"]["reward_view"]["closed_answers_given"] == 0 and "NO REWARD SIGNAL" in res["verdict"]
    mixed = _write(tmp_path, "mixed.yaml", HIDDEN + "- {id: other, instructions: x, opening: hi, closing: 'Done?', "
                   "reward: {pattern: '(Y|N)', values: {Y: 1, N: 0}}}\n")  # fmt: skip
    assert make_arena(mixed).closed_answers is None  # two patterns at closing states: no one closed set


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        ("cycle.yaml", "- &a {id: a, instructions: x, opening: hi, prefix: [*a]}\n", ["alias *a", "endless"]),
        (
            "deep-aliases.yaml",
            "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 120)) + "scenarios: []\n",
            ["nested deeper than 100", "*a"],
        ),
        (
            "laughs.yaml",
            "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
            + "scenarios: [{id: a, instructions: x, opening: hi}]\n",
            ["stands for", "more than 1,000,000", "once aliases are written out"],
        ),
        ("nul.yaml", '- {id: a, instructions: "x\\0y", opening: hi}\n', ["'a'", "instructions", "NUL"]),
        ("nul.json", '[{"id": "a", "instructions": "x", "opening": "h\\u0000i"}]', ["'a'", "opening", "NUL"]),
    ],
)
def test_a_hostile_scenario_file_is_one_line_at_once(tmp_path, name, text, named):
    """Aliases count as what they stand for (a billion laughs hung the reader, a cycle is endless); a NUL
    is a damaged file."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_scenarios(path)
    line = str(err.value)
    assert "\n" not in line and str(path) in line
    assert all(n in line for n in named), line


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        (
            "repeated.json",
            '[{"id": "a", "id": "b", "instructions": "x", "opening": "hi"}]',
            ["'id'", "twice"],
        ),
        ("repeated.jsonl", '{"id": "a", "instructions": "x", "instructions": "y", "opening": "hi"}\n', ["twice"]),
        (
            "nested-repeat.yaml",
            "- {id: a, instructions: x, opening: hi, reward: {pattern: '(YES|NO)(a+)+$', values: {YES: 1, NO: 0}}}\n",
            ["'a'", "reward.pattern", "exponential"],
        ),
        (
            "empty-answer.yaml",
            "- {id: a, instructions: x, opening: hi, reward: {pattern: '(A|)', values: {A: 1, '': 0}}}\n",
            ["'a'", "reward.pattern", "empty"],
        ),
        (
            "nfc-nfd.json",
            '[{"id": "caf\\u00e9", "instructions": "x", "opening": "hi"},'
            ' {"id": "cafe\\u0301", "instructions": "x", "opening": "hi"}]',
            ["field id", "duplicate"],
        ),
    ],
)
def test_a_file_that_says_two_things_or_would_stall_the_reward_is_refused(tmp_path, name, text, named):
    """A key given twice (JSON keeps the last silently), a pattern whose search can take exponential time on
    a reply, an empty answer that matches anywhere, and two ids that print alike are one line each."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_scenarios(path)
    line = str(err.value)
    assert "\n" not in line and str(path) in line
    assert all(n in line for n in named), line


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml"])
def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path, suffix):
    one = {"id": "a", "instructions": "x", "opening": "hi"}
    text = json.dumps(one) + "\n" if suffix == ".jsonl" else json.dumps([one])
    path = tmp_path / f"bom{suffix}"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert [s.id for s in load_scenarios(path)] == ["a"]
