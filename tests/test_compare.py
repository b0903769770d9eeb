"""``collapse-probe compare``: pairing tasks across published files, the simulator effects, the noise
floor and the rank flips, the command's output and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from collapse_probe.integrations.interop._tau2 import read_tau2_results, task_contents
from collapse_probe.integrations.interop._taubench import read_taubench


def tau2_file(path: Path, agent: str, user: str, rewards: dict[str, list[float | None]],
              scenarios: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """A τ2-bench results file: per task id the rewards of its trials (``None``: an infrastructure error)."""
    sims = []
    for task, trial_rewards in rewards.items():
        for trial, r in enumerate(trial_rewards):
            sims.append({
                "id": f"{task}-{trial}", "task_id": task, "trial": trial,
                "termination_reason": "infrastructure_error" if r is None else "user_stop",
                "reward_info": None if r is None else {"reward": r},
                "messages": [{"role": "assistant", "content": "Hi! How can I help?"},
                             {"role": "user", "content": f"task {task}"}],
            })  # fmt: skip
    tasks = [{"id": t, "user_scenario": {"instructions": s}} for t, s in (scenarios or {}).items()]
    data = {"info": {"user_info": {"llm": user}, "agent_info": {"llm": agent}}, "tasks": tasks, "simulations": sims}
    path.write_text(json.dumps(data))
    return path


def test_tau2_task_content_from_the_user_scenario(tmp_path: Path) -> None:
    structured = {"domain": "airline", "reason_for_call": "cancel", "known_info": "I am Raj", "unknown_info": None,
                  "task_instructions": "insist"}  # fmt: skip
    f = tau2_file(tmp_path / "r.json", "a", "u", {"1": [1.0], "2": [0.0], "3": [1.0]},
                  {"1": structured, "2": "Book a flight."})  # fmt: skip
    run = read_tau2_results(f)
    by_task = {c.task_id: c.task_content for c in run.conversations}
    assert by_task["1"] == "domain: airline\nreason_for_call: cancel\nknown_info: I am Raj\ntask_instructions: insist"
    assert by_task["2"] == "Book a flight."
    assert by_task["3"] is None  # no task entry: paired by id only


def test_tau2_task_contents_tolerate_odd_tasks() -> None:
    assert task_contents(None) == {}
    assert task_contents([1, {"id": True}, {"id": "x", "user_scenario": 3}, {"id": 4, "user_scenario": {
        "persona": "calm", "instructions": "go"}}]) == {"4": "calm\ngo"}  # fmt: skip


def test_taubench_task_content_is_the_instruction(tmp_path: Path) -> None:
    recs = [{"task_id": 0, "trial": 0, "reward": 1.0, "traj": [], "info": {"task": {"instruction": "You are Olivia."}}},
            {"task_id": 1, "trial": 0, "reward": 0.0, "traj": [], "info": {}}]  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(recs))
    run = read_taubench(tmp_path / "t.json")
    assert [c.task_content for c in run.conversations] == ["You are Olivia.", None]


# --- the command ---------------------------------------------------------------------------------

import contextlib  # noqa: E402
import io  # noqa: E402

import pytest  # noqa: E402

from collapse_probe.cli import main  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "tau2-real" / "published"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


TEXTS = {f"t{i}": f"Task {i}: change the address of order #{100 + i}." for i in range(6)}


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """One agent under two simulators; the second file renumbers the tasks and respaces their texts."""
    a = tau2_file(tmp_path / "mini.json", "agent-1", "gpt-4.1-mini",
                  {"t0": [1.0, 1.0], "t1": [1.0, 0.0], "t2": [0.0, 0.0], "t3": [1.0, None], "t4": [1.0, 1.0],
                   "t5": [0.0, 1.0]}, TEXTS)  # fmt: skip
    renumber = {f"t{i}": str(50 + i) for i in range(5)}  # t5 is not in the second run
    b = tau2_file(tmp_path / "full.json", "agent-1", "gpt-4.1",
                  {renumber[t]: r for t, r in {"t0": [0.0, 1.0], "t1": [0.0, 0.0], "t2": [0.0, 0.0], "t3": [None, None],
                                               "t4": [1.0, 0.0]}.items()},
                  {renumber[t]: "  " + TEXTS[t].upper().replace(" ", "\n ") for t in renumber})  # fmt: skip
    return a, b


def test_compare_pairs_renumbered_tasks_by_their_text_and_says_what_it_left_out(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    rc, out, err = _cli("compare", str(b), str(a), "--out", str(tmp_path / "run"))
    assert rc == 0, err
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert data["schema"] == "collapse-probe/compare/v1"
    p = data["pairing"]
    assert p["task_key"] == "content" and p["tasks"] == 6
    assert p["left_out"] == {"infrastructure failure (not scored)": 3}
    [e] = data["simulator_effects"]
    # t3 ran only under mini (its gpt-4.1 trials all failed on infrastructure), t5 only under mini
    assert (e["agent"], e["simulator"], e["reference"], e["n_tasks"]) == ("agent-1", "gpt-4.1-mini", "gpt-4.1", 4)
    assert e["left_out"] == {"only under gpt-4.1-mini": 2}
    # task means: mini t0..t4 (shared t0,t1,t2,t4) = 1, .5, 0, 1 -> .625; gpt-4.1 = .5, 0, 0, .5 -> .25
    assert e["difference"] == pytest.approx(0.375)
    assert e["ci95"][0] < 0.375 < e["ci95"][1]
    line = next(x for x in out.splitlines() if x.startswith("agent-1: gpt-4.1-mini vs gpt-4.1:"))
    assert "+37.5 points [" in line and "on 4 shared tasks; reruns alone differ by ±" in line
    assert "2 tasks only under gpt-4.1-mini left out" in line
    assert "paired 19 of 22 conversations into 6 tasks by task content" in out
    nf = {(n["agent"], n["simulator"]): n for n in data["noise_floor"]}
    assert nf[("agent-1", "gpt-4.1-mini")]["flip_rate"] == pytest.approx(2 / 5)  # t1, t5 of t0, t1, t2, t4, t5
    assert data["rank_flips"] == [] and (tmp_path / "run" / "report.html").is_file()


def test_task_key_id_pairs_nothing_across_renumbered_files(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    rc, out, err = _cli("compare", str(b), str(a), "--task-key", "id", "--out", str(tmp_path / "run"))
    assert rc == 0, err
    assert "agent-1: gpt-4.1-mini vs gpt-4.1: no shared task" in out
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert data["simulator_effects"][0]["n_tasks"] == 0 and data["pairing"]["task_key"] == "id"


def test_auto_key_falls_back_to_ids_when_a_file_has_no_task_text(tmp_path: Path) -> None:
    a = tau2_file(tmp_path / "a.json", "ag", "s1", {"1": [1.0], "2": [0.0]}, {"1": "one", "2": "two"})
    b = tau2_file(tmp_path / "b.json", "ag", "s2", {"1": [0.0], "2": [0.0]})
    rc, out, _ = _cli("compare", str(a), str(b), "--out", str(tmp_path / "run"))
    assert rc == 0 and "by task id (2 of 4 scored records carry no task text)" in out


def test_rank_flips_and_correlation_with_several_agents(tmp_path: Path) -> None:
    files = []
    rates = {("A", "x"): [1.0, 1.0, 0.0], ("B", "x"): [0.0, 1.0, 0.0], ("A", "y"): [0.0, 0.0, 0.0],
             ("B", "y"): [1.0, 1.0, 1.0]}  # fmt: skip
    for (agent, sim), r in rates.items():
        files.append(
            str(tau2_file(tmp_path / f"{agent}{sim}.json", agent, sim, {f"t{i}": [v] for i, v in enumerate(r)}))
        )
    rc, out, err = _cli("compare", *files, "--n-boot", "200", "--out", str(tmp_path / "run"))
    assert rc == 0, err
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert data["rank_flips"] == [{"agents": ["A", "B"], "simulators": ["x", "y"], "n_tasks": 3,
                                   "rates": {"x": {"A": pytest.approx(2 / 3), "B": pytest.approx(1 / 3)},
                                             "y": {"A": 0.0, "B": 1.0}}}]  # fmt: skip
    assert data["rank_correlation"][0]["tau"] == pytest.approx(-1.0)
    assert "rank flip: A and B change order between x and y" in out


def test_rerun_into_the_same_directory_resumes_and_other_inputs_are_refused(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    run = str(tmp_path / "run")
    assert _cli("compare", str(a), str(b), "--out", run)[0] == 0
    assert _cli("compare", str(a), str(b), "--out", run)[0] == 0
    c = tau2_file(tmp_path / "other.json", "agent-1", "gpt-5", {"t0": [1.0]}, {"t0": TEXTS["t0"]})
    rc, _, err = _cli("compare", str(a), str(c), "--out", run)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--out" in err


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda d, a, b: [str(d / "missing.json"), str(a)], "missing.json: no such file or directory"),
        (lambda d, a, b: [str(a), str(a)], "mini.json: given twice; give each run once"),
        (lambda d, a, b: [str(a), str(_copy(a))], "copy.json: the same content as"),
        (lambda d, a, b: [str(a), str(b), "--reference", "nope"], "--reference 'nope': not a simulator"),
        (lambda d, a, b: [str(a), str(b), "--agent-of", "x.json=A"], "--agent-of 'x.json=A': x.json is not one of"),
        (lambda d, a, b: [str(a), str(b), "--agent-of", "noname"], "--agent-of 'noname': expected FILE=NAME"),
        (lambda d, a, b: [str(a), str(b), "--success-threshold", "inf"], "--success-threshold"),
        (lambda d, a, b: [str(a), str(b), "--task-key", "hash"], "--task-key"),
        (lambda d, a, b: [str(_bad(d)), str(a)], "bad.json"),
        (lambda d, a, b: [str(_anonymous(d)), str(a)], "names no agent for conversation"),
        (lambda d, a, b: [str(_empty(d)), str(a)], "empty.jsonl: the file is empty"),
        (lambda d, a, b: [str(_task_list(d)), str(a)], "tasks.json: a τ2-bench tasks file (the task definitions"),
        (lambda d, a, b: [str(_plain_dir(d)), str(a)], "plain: a directory that is neither a cross-play run"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path: Path, setup: Any, expected: str) -> None:
    a, b = _pair(tmp_path)
    out = tmp_path / "run"
    rc, _, err = _cli("compare", *setup(tmp_path, a, b), "--out", str(out))
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and expected in err and "Traceback" not in err and "internal" not in err
    assert not out.exists()


def _bad(d: Path) -> Path:
    (d / "bad.json").write_text('{"info": {}, "simulations": [{"id": 1}]}')
    return d / "bad.json"


def _copy(f: Path) -> Path:
    (f.parent / "copy.json").write_bytes(f.read_bytes())
    return f.parent / "copy.json"


def _task_list(d: Path) -> Path:
    tasks = [{"id": "0", "description": {"purpose": "x"}, "user_scenario": {"instructions": "Cancel."}}]
    (d / "tasks.json").write_text(json.dumps(tasks, indent=4))
    return d / "tasks.json"


def _empty(d: Path) -> Path:
    (d / "empty.jsonl").write_text("")
    return d / "empty.jsonl"


def _plain_dir(d: Path) -> Path:
    (d / "plain").mkdir()
    (d / "plain" / "notes.txt").write_text("not a run")
    return d / "plain"


def _anonymous(d: Path) -> Path:
    recs = [{"task_id": 0, "trial": 0, "reward": 1.0, "traj": [], "info": {}}]
    (d / "anon.json").write_text(json.dumps(recs))
    return d / "anon.json"


def test_agent_and_simulator_named_on_the_command_line(tmp_path: Path) -> None:
    f = _anonymous(tmp_path)
    a = tau2_file(tmp_path / "a.json", "gpt-4o", "gpt-4.1", {"0": [0.0]})
    rc, out, err = _cli("compare", str(f), str(a), "--agent-of", f"{f}=gpt-4o", "--simulator-of", f"{f}=old-user",
                        "--task-key", "id", "--out", str(tmp_path / "run"))  # fmt: skip
    assert rc == 0, err
    assert "gpt-4o: gpt-4.1 vs old-user: -100.0 points" in out


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared τ2 results are not in this checkout")
def test_published_tau2_runs_have_stable_ids_and_pair_alike_by_text(tmp_path: Path) -> None:
    """The published τ2 runs give each airline task id one scenario (the grok-4 run of the tighter-policy
    domain included): the ids are stable, and pairing by text pairs exactly the same trials."""
    files = sorted(str(p) for p in SHARED.glob("2025-*.json"))
    runs = {}
    for key in ("auto", "content"):
        rc, out, err = _cli("compare", *files, "--task-key", key, "--out", str(tmp_path / key))
        assert rc == 0, err
        runs[key] = json.loads((tmp_path / key / "results.json").read_text())
    assert runs["auto"]["pairing"]["task_key"] == "id" and "stable" in runs["auto"]["pairing"]["why"]
    assert runs["auto"]["pairing"]["paired_records"] == sum(n["trials"] for n in runs["auto"]["noise_floor"]) == 66
    assert runs["auto"]["noise_floor"] == runs["content"]["noise_floor"]
    assert {(n["agent"], n["simulator"]) for n in runs["auto"]["noise_floor"]} >= {("xai/grok-3", "xai/grok-3")}


def test_auto_key_keeps_ids_when_a_file_gives_one_text_to_several_tasks(tmp_path: Path) -> None:
    """A template scenario shared by every task cannot stand for the task: pairing by it would merge them."""
    same = {f"t{i}": "You are a customer. Follow the instructions." for i in range(4)}
    a = tau2_file(tmp_path / "a.json", "ag", "s1", {f"t{i}": [1.0] for i in range(4)}, same)
    b = tau2_file(tmp_path / "b.json", "ag", "s2", {f"t{i}": [0.0] for i in range(4)}, same)
    rc, out, err = _cli("compare", str(a), str(b), "--out", str(tmp_path / "run"))
    assert rc == 0, err
    assert "into 4 tasks by task id" in out and "gives one task text to several task ids" in out
    assert "ag: s2 vs s1: -100.0 points" in out and "on 4 shared tasks" in out


SAMPLES = Path(__file__).resolve().parents[1] / "collapse_probe" / "data" / "published" / "compare"
DOC = Path(__file__).resolve().parents[1] / "docs" / "compare.md"


def test_the_shipped_samples_print_what_the_docs_show(tmp_path: Path) -> None:
    """docs/compare.md's first output block is what the command prints on the shipped samples, and the
    samples' true rank flip (agent-large leads under gpt-4.1, agent-small under gpt-4.1-mini) is found."""
    files = sorted(str(p) for p in SAMPLES.glob("*.json"))
    assert len(files) == 4
    rc, out, err = _cli("compare", *files, "--reference", "gpt-4.1", "--out", str(tmp_path / "run"))
    assert rc == 0, err
    block = DOC.read_text(encoding="utf-8").split("```text\n", 1)[1].split("```", 1)[0]
    shown = [x for x in block.splitlines() if not x.startswith("results:")]
    assert shown == [x for x in out.splitlines() if not x.startswith("results:")]
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [(f["agents"], f["simulators"]) for f in data["rank_flips"]] == [
        (["agent-large", "agent-small"], ["gpt-4.1", "gpt-4.1-mini"])
    ]


def _crossplay_dir(d: Path) -> Path:
    """A cross-play run directory as ``crossplay --out`` leaves it: its config and conversation records."""
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"kind": "crossplay", "policies": ["p1"], "simulators": ["s1", "s2"]}))
    recs = []
    for sim, outcomes in (("s1", [True, True, False, None]), ("s2", [False, False, False, True])):
        for i, ok in enumerate(outcomes):
            recs.append({"task_id": f"task-{i % 2}", "rollout": i // 2, "policy": "p1", "simulator": sim,
                         "reward": None if ok is None else (0.7 if ok else 0.1), "success": ok,
                         "status": "infra_error" if ok is None else "done",
                         "infra_error": "timeout" if ok is None else None})  # fmt: skip
    (d / "conversations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d


def test_a_crossplay_run_directory_is_read_with_its_records_own_success(tmp_path: Path) -> None:
    run = _crossplay_dir(tmp_path / "xp")
    rc, out, err = _cli("compare", str(run), "--out", str(tmp_path / "cmp"))
    assert rc == 0, err
    data = json.loads((tmp_path / "cmp" / "results.json").read_text())
    assert data["success_rule"] == {"the records' own success": 7}
    assert data["pairing"]["left_out"] == {"infrastructure failure (not scored)": 1}
    [e] = data["simulator_effects"]
    # s1: task-0 [T, F] .5, task-1 [T] 1 -> .75; s2: task-0 [F, F] 0, task-1 [F, T] .5 -> .25
    assert (e["simulator"], e["reference"], e["difference"]) == ("s2", "s1", pytest.approx(-0.5))
    # with a threshold the rewards decide: 0.7 >= 0.5 is a success, as the records say
    rc, _, _ = _cli("compare", str(run), "--success-threshold", "0.8", "--out", str(tmp_path / "cmp2"))
    data = json.loads((tmp_path / "cmp2" / "results.json").read_text())
    assert data["success_rule"] == {"reward >= 0.8": 7} and data["simulator_effects"][0]["difference"] == 0.0
    # a name given on the command line replaces the run's own (every record of the directory)
    rc, out, _ = _cli("compare", str(run), "--agent-of", f"{run}=renamed", "--out", str(tmp_path / "cmp3"))
    assert rc == 0 and "renamed: s2 vs s1: -50.0 points" in out


def test_a_run_directory_of_another_kind_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"kind": "audit"}))
    a, _ = _pair(tmp_path)
    rc, _, err = _cli("compare", str(d), str(a), "--out", str(tmp_path / "cmp"))
    assert rc == 2 and "holds a run of kind 'audit'; compare reads cross-play run directories" in err


def test_one_jsonl_file_of_several_agents_and_simulators(tmp_path: Path) -> None:
    """Generic JSONL conversations naming their policy and simulator per record: one file holds the grid."""
    recs = []
    for agent, sim, rewards in (("A", "x", [1, 1, 0]), ("A", "y", [0, 1, 0]), ("B", "x", [0, 0, 0]),
                                ("B", "y", [1, 1, 1])):  # fmt: skip
        for task, r in enumerate(rewards):
            for trial in range(2):
                recs.append({"task_id": f"t{task}", "trial": trial, "policy": agent, "simulator": sim,
                             "reward": r, "messages": [{"role": "assistant", "content": "Hello"},
                                                       {"role": "user", "content": "Hi"}]})  # fmt: skip
    f = tmp_path / "grid.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rc, out, err = _cli("compare", str(f), "--n-boot", "100", "--out", str(tmp_path / "run"))
    assert rc == 0, err
    assert "A: y vs x: -33.3 points [" in out and "B: y vs x: +100.0 points [" in out
    assert "rank flip: A and B change order between x and y" in out


def test_the_report_shows_the_effects_noise_floor_and_pairing(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    assert _cli("compare", str(b), str(a), "--out", str(tmp_path / "run"))[0] == 0
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    for text in ("agent-1: gpt-4.1-mini vs gpt-4.1: +37.5 points", "Simulator effects", "Noise floor",
                 "19 of 22 conversations paired into 6 tasks by task content", "only under gpt-4.1-mini",
                 "no pair of agents changes order", "fewer than two agents"):  # fmt: skip
        assert text in page, text


@pytest.mark.parametrize("value", ["NaN", "Infinity", '"0.5"', "true"])
def test_a_crossplay_record_with_a_reward_that_is_no_number_is_refused(tmp_path: Path, value: str) -> None:
    run = _crossplay_dir(tmp_path / "xp")
    lines = (run / "conversations.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"reward": 0.7', f'"reward": {value}')
    (run / "conversations.jsonl").write_text("\n".join(lines) + "\n")
    rc, _, err = _cli("compare", str(run), "--out", str(tmp_path / "cmp"))
    assert rc == 2 and "conversations.jsonl: record 1: reward: expected a finite number or null" in err
    assert not (tmp_path / "cmp").exists()


def test_the_public_call_equals_the_command(tmp_path: Path) -> None:
    import collapse_probe
    from collapse_probe.results import CompareResults, load

    a, b = _pair(tmp_path)
    r = collapse_probe.compare([b, a], out=tmp_path / "api")
    assert isinstance(r, CompareResults) and "compare" in collapse_probe.__all__
    assert _cli("compare", str(b), str(a), "--out", str(tmp_path / "cli"))[0] == 0
    from_cli = load(tmp_path / "cli")
    assert isinstance(from_cli, CompareResults)
    assert from_cli.simulator_effects == r.simulator_effects and from_cli.noise_floor == r.noise_floor
    assert load(tmp_path / "api").to_json() == r.to_json()


def test_a_threshold_no_trial_reaches_is_noted(tmp_path: Path) -> None:
    a = tau2_file(tmp_path / "a.json", "ag", "s1", {"1": [0.5, 0.25], "2": [0.75]})
    b = tau2_file(tmp_path / "b.json", "ag", "s2", {"1": [0.5], "2": [0.0]})
    rc, out, _ = _cli("compare", str(a), str(b), "--out", str(tmp_path / "run"))
    assert rc == 0
    assert "note: every trial fails to reach the success threshold 1 (rewards from 0 to 0.75)" in out
    rc, out, _ = _cli("compare", str(a), str(b), "--success-threshold", "0.5", "--out", str(tmp_path / "run2"))
    assert rc == 0 and "success threshold" not in out and "ag: s2 vs s1: -25.0 points" in out


def test_graded_rewards_under_the_default_threshold_are_noted(tmp_path: Path) -> None:
    a = tau2_file(tmp_path / "a.json", "ag", "s1", {"1": [0.8, 1.0], "2": [0.0, 0.95]})
    b = tau2_file(tmp_path / "b.json", "ag", "s2", {"1": [1.0, 0.0], "2": [0.0, 0.0]})
    rc, out, _ = _cli("compare", str(a), str(b), "--out", str(tmp_path / "run"))
    assert rc == 0
    assert "note: 2 distinct rewards are neither 0 nor 1 (from 0.8 to 0.95)" in out and "--success-threshold" in out
    rc, out, _ = _cli("compare", str(a), str(b), "--success-threshold", "0.8", "--out", str(tmp_path / "run2"))
    assert rc == 0 and "neither 0 nor 1" not in out


def test_a_difference_that_rounds_to_zero_reads_plus_zero_and_one_task_is_singular(tmp_path: Path) -> None:
    from collapse_probe.report.compare_plots import effect_line

    row = {"agent": "ag", "simulator": "s2", "reference": "s1", "difference": -0.0002, "ci95": [-0.00001, 0.006],
           "rerun_difference_ci95": [-0.006, 0.006], "n_tasks": 200}  # fmt: skip
    assert effect_line(row) == "ag: s2 vs s1: +0.0 points [+0.0, +0.6] on 200 shared tasks; reruns alone differ by ±0.6"
    a = tau2_file(tmp_path / "a.json", "ag", "s1", {"1": [1.0, 0.0]})
    rc, out, _ = _cli("compare", str(a), "--out", str(tmp_path / "run"))
    assert rc == 0 and "into 1 task by task" in out and "flip rate 1.00 (1/1 task)" in out


def test_records_a_reader_could_not_read_are_counted_and_named(tmp_path: Path) -> None:
    a = tau2_file(tmp_path / "a.json", "ag", "s1", {"1": [1.0, 0.0], "2": [1.0]})
    data = json.loads(a.read_text())
    data["simulations"][0]["messages"] = None  # a voice run's record that lost its ticks too: nothing to read
    a.write_text(json.dumps(data))
    b = tau2_file(tmp_path / "b.json", "ag", "s2", {"1": [1.0], "2": [0.0]})
    rc, out, _ = _cli("compare", str(a), str(b), "--out", str(tmp_path / "run"))
    assert rc == 0 and out.splitlines()[0].startswith("paired 4 of 5 conversations")
    assert "left out: 1 no messages (not read)" in out.splitlines()[0]
    rc, _, err = _cli("compare", str(_only_unreadable(tmp_path)), "--out", str(tmp_path / "run2"))
    assert rc == 2 and "no scored conversation" in err and "1 no messages (not read)" in err


def _only_unreadable(d: Path) -> Path:
    f = tau2_file(d / "only.json", "ag", "s1", {"1": [1.0]})
    data = json.loads(f.read_text())
    data["simulations"][0]["messages"] = None
    f.write_text(json.dumps(data))
    return f


def test_agents_that_share_no_two_simulators_say_why_there_is_no_ranking(tmp_path: Path) -> None:
    a = tau2_file(tmp_path / "a.json", "ag", "s1", {"1": [1.0, 0.0], "2": [1.0]})
    b = tau2_file(tmp_path / "b.json", "ag", "s2", {"1": [1.0], "2": [0.0]})
    c = tau2_file(tmp_path / "c.json", "ag2", "s2", {"1": [1.0], "2": [0.0]})
    rc, out, _ = _cli("compare", str(a), str(b), str(c), "--out", str(tmp_path / "run"))
    assert rc == 0 and "note: 2 agents, but no two of them ran shared tasks under the same two simulators" in out


def test_a_rerun_range_of_zero_says_it_is_an_estimate() -> None:
    from collapse_probe.report.compare_plots import effect_line

    row = {"agent": "ag", "simulator": "s2", "reference": "s1", "difference": 0.0, "ci95": [-0.4, 0.4],
           "rerun_difference_ci95": [0.0, 0.0], "n_tasks": 3}  # fmt: skip
    assert effect_line(row).endswith("reruns alone differ by ±0.0 (every repeated task's trials agreed: the estimate "
                                     "is 0, the noise need not be)")  # fmt: skip


def test_repeated_agent_of_and_simulator_of_flags_add_up(tmp_path: Path) -> None:
    f, g = _anonymous(tmp_path), tau2_file(tmp_path / "g.json", "gpt-4o", "new-user", {"0": [0.0]})
    h = tmp_path / "anon2.json"
    h.write_bytes(f.read_bytes().replace(b'"reward": 1.0', b'"reward": 0.0'))
    rc, out, err = _cli("compare", str(f), str(h), str(g), "--agent-of", f"{f}=gpt-4o", "--agent-of", f"{h}=gpt-4o",
                        "--simulator-of", f"{f}=old-user", "--simulator-of", f"{h}=mid-user", "--out",
                        str(tmp_path / "run"))  # fmt: skip
    assert rc == 0, err
    sims = json.loads((tmp_path / "run" / "results.json").read_text())["simulators"]
    assert sorted(sims) == ["mid-user", "new-user", "old-user"]
