"""The CI gate: exit codes that follow from hand-computed cross-play matrices, the interval, point and
strict rules, could-not-judge cases (also unreadable cells), error rates on simulated runs, and
well-formed JUnit XML."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from xml.etree import ElementTree as ET

import pytest

from collapse_probe.benchmarks.p4g import P4GArena
from collapse_probe.core._records import ConversationRecord
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion, GenerationRequest, GenerationResult
from collapse_probe.pipelines.crossplay import CrossplayConfig, crossplay_results, run_crossplay
from collapse_probe.pipelines.gate import evaluate_gate, gate_run_dir
from collapse_probe.report.gate_text import headline, markdown
from collapse_probe.simulators import Participant, make_participant


class PolitenessDonor:
    """A donor that gives $2 when the persuader said "please" and $0 otherwise: rewards depend on the policy."""

    spec = "politeness-donor"

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            said = " ".join(m["content"] for m in r.messages if m["role"] == "user").lower()
            text = "Happy to help. [DONATE $2]" if "please" in said else "Not convinced. [DONATE $0]"
            out.append(GenerationResult([Completion(text=text, finish_reason="stop")] * r.n))
        return out


class BrokenModel:
    spec = "broken"

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return [GenerationResult([], error="connection reset") for _ in requests]


@pytest.fixture
def matrix(tmp_path, write_scripted):
    """polite/blunt x ($2 donor [train], $0.50 donor, politeness donor), 4 tasks x 2 rollouts.

    Hand-computed: polite = (1, 0.25, 1) -> held-out 0.625, transfer 0.625;
                   blunt  = (1, 0.25, 0) -> held-out 0.125, transfer 0.125.
    """
    polite = write_scripted([("Please donate today.", 1.0)], name="polite.json")
    blunt = write_scripted([("Give money.", 1.0)], name="blunt.json")
    give2 = write_scripted([("Sure [DONATE $2]", 1.0)], name="give2.json")
    give050 = write_scripted([("OK [DONATE $0.50]", 1.0)], name="give050.json")
    parts = {s: make_participant(s) for s in (polite, blunt, give2, give050)}
    parts["politeness"] = Participant("politeness", PolitenessDonor())
    cfg = CrossplayConfig(
        policies=[polite, blunt],
        simulators=[give2, give050, "politeness"],
        train_simulator=give2,
        tasks=4,
        rollouts=2,
        max_turns=1,
    )
    out = tmp_path / "matrix"
    res = run_crossplay(cfg, arena=P4GArena(max_turns=1), participants=parts, out=out, progress=False, report=False)
    return {"dir": out, "results": res, "polite": polite, "blunt": blunt}


def _run_cli(argv: list[str]) -> int:
    from collapse_probe.cli import gate

    parser = argparse.ArgumentParser()
    gate.add_parser(parser.add_subparsers(dest="command"))
    return gate.run(parser.parse_args(["gate", *argv]))


def test_matrix_is_as_hand_computed(matrix):
    res = matrix["results"]
    got = {(c["policy"], c["simulator"]): c["mean_reward"] for c in res["cells"]}
    p, b = matrix["polite"], matrix["blunt"]
    assert [got[(p, s)] for s in res["simulators"]] == [1.0, 0.25, 1.0]
    assert [got[(b, s)] for s in res["simulators"]] == [1.0, 0.25, 0.0]
    ratios = {t["policy"]: t["transfer_ratio"] for t in res["transfer"]}
    assert ratios == {p: 0.625, b: 0.125}
    assert res["heldout_reward"] == {p: 0.625, b: 0.125}


def test_point_rule_exit_codes_follow_from_the_matrix(matrix):
    p, b, d = matrix["polite"], matrix["blunt"], str(matrix["dir"])
    s = ["--decision", "point"]  # the rule the gate used by default before the interval rule
    assert _run_cli([d, "--policy", p, "--min-transfer", "0.6", *s]) == 0
    assert _run_cli([d, "--policy", p, "--min-transfer", "0.625", *s]) == 0  # the bound is inclusive
    assert _run_cli([d, "--policy", b, "--min-transfer", "0.6", *s]) == 1
    # blunt loses 0.625 - 0.125 = 0.5 of held-out reward against polite
    assert _run_cli([d, "--policy", b, "--baseline-policy", p, "--max-drop", "0.49", *s]) == 1
    assert _run_cli([d, "--policy", b, "--baseline-policy", p, "--max-drop", "0.5", *s]) == 0
    assert _run_cli([d, "--policy", p, "--baseline-policy", b, "--max-drop", "0", *s]) == 0


def test_small_run_cannot_be_judged_by_default(matrix):
    """4 tasks x 2 rollouts: even deterministic donors leave intervals too wide to decide 0.625 vs 0.6."""
    p, b, d = matrix["polite"], matrix["blunt"], str(matrix["dir"])
    v = evaluate_gate(matrix["results"], p, min_transfer=0.6)
    t = v.checks[-1]
    assert v.exit_code == 3 and v.decision == "interval" and v.level == 0.9 and t.rule == "interval"
    lo, hi = t.interval
    assert lo < 0.6 < hi and t.ci95[0] <= lo and hi <= t.ci95[1]  # the 90% interval inside the 95% one
    assert "could not judge" in t.message and "90% CI" in t.message and "contains 0.6" in t.message
    assert "rule: interval" in headline(v) and "90% CI" in headline(v)
    assert _run_cli([d, "--policy", p, "--min-transfer", "0.6"]) == 3
    assert _run_cli([d, "--policy", b, "--min-transfer", "0.6"]) == 1  # 0.125: the interval lies below
    # the strict rule counts what the interval rule cannot judge as a failure
    assert _run_cli([d, "--policy", p, "--min-transfer", "0.6", "--strict"]) == 1
    assert _run_cli([d, "--policy", p, "--min-transfer", "0.6", "--decision", "strict"]) == 1


def _deterministic(tasks: int, rollouts: int, rewards: dict[str, float]) -> dict:
    """Results where every conversation of cell 'policy|sim' scores ``rewards[cell]``."""
    sims = list(dict.fromkeys(k.split("|")[1] for k in rewards))
    pols = list(dict.fromkeys(k.split("|")[0] for k in rewards))
    recs = _records({k: {f"t{i}": [r] * rollouts for i in range(tasks)} for k, r in rewards.items()})
    cfg = CrossplayConfig(policies=pols, simulators=sims, train_simulator=sims[0], tasks=tasks, rollouts=rollouts)
    return crossplay_results(recs, cfg, reward_range=(0.0, 1.0))


def test_interval_rule_decides_with_enough_tasks():
    """40 tasks x 4 rollouts of deterministic donors: transfer 0.625 with a narrow interval."""
    res = _deterministic(40, 4, {"a|train": 1.0, "a|h1": 0.25, "a|h2": 1.0, "b|train": 1.0, "b|h1": 0.25, "b|h2": 0.0})
    t = next(e for e in res["transfer"] if e["policy"] == "a")
    assert t["transfer_ratio"] == 0.625 and t["ci95"][0] < 0.625 < t["ci95"][1] and t["ci95"][1] - t["ci95"][0] < 0.15
    assert "MOVER-R" in t["method"] and res["reward_range"] == [0.0, 1.0]
    assert evaluate_gate(res, "a", min_transfer=0.5).exit_code == 0
    assert evaluate_gate(res, "a", min_transfer=0.75).exit_code == 1
    undecided = evaluate_gate(res, "a", min_transfer=0.6)
    assert undecided.exit_code == 3 and "contains 0.6" in undecided.checks[-1].message
    # point rule: 0.625 >= 0.6 passes; strict: the 95% lower bound must clear
    assert evaluate_gate(res, "a", min_transfer=0.6, decision="point").exit_code == 0
    assert evaluate_gate(res, "a", min_transfer=0.6, strict=True).exit_code == 1
    # regression: b loses 0.5 of held-out reward against a
    drop = evaluate_gate(res, "b", baseline_policy="a", max_drop=0.3)
    assert drop.exit_code == 1 and drop.checks[-1].value == pytest.approx(0.5)
    assert drop.checks[-1].interval[0] > 0.3 and "lies above 0.3" in drop.checks[-1].message
    assert evaluate_gate(res, "b", baseline_policy="a", max_drop=0.6).exit_code == 0
    assert evaluate_gate(res, "b", baseline_policy="a", max_drop=0.5).exit_code == 3


def test_verdict_values_and_markdown(matrix, tmp_path, capsys):
    p, b = matrix["polite"], matrix["blunt"]
    v = evaluate_gate(matrix["results"], b, min_transfer=0.5, baseline_policy=p, max_drop=0.1, decision="point")
    checks = {c.name: c for c in v.checks}
    assert checks["transfer"].status == "fail" and checks["transfer"].value == 0.125
    assert checks["regression"].status == "fail" and checks["regression"].value == pytest.approx(0.5)
    lo, hi = checks["regression"].ci95  # a difference of rewards in [0, 1] lies in [-1, 1]
    assert -1 <= lo < 0.5 < hi <= 1 and checks["regression"].interval is None
    assert all(checks[f"infra:{q}|{s}"].status == "pass" for q in (p, b) for s in matrix["results"]["simulators"])
    assert v.exit_code == 1 and v.outcome == "fail"
    assert v.to_json()["decision"] == "point" and v.to_json()["checks"][-1]["rule"] == "point"
    md_file = tmp_path / "gate.md"
    argv = [str(matrix["dir"]), "--policy", b, "--min-transfer", "0.5", "--markdown", str(md_file)]
    assert _run_cli([*argv, "--decision", "point"]) == 1
    md = md_file.read_text()
    assert md == "<!-- collapse-probe gate report -->\n" + capsys.readouterr().out.rstrip("\n") + "\n"
    assert md.split("\n", 1)[1].startswith("### collapse-probe gate: ❌ failed: transfer 0.125 (95% CI [")
    assert "(rule: point)" in md.splitlines()[1] and "| `transfer` | ❌ fail | 0.125 |" in md
    assert _run_cli(argv) == 3  # by default: the interval over 4 tasks contains 0.5
    md = md_file.read_text()
    assert md.split("\n", 1)[1].startswith("### collapse-probe gate: ⚠️ could not judge: transfer 0.125 (90% CI [")
    assert "rule **interval**" in md and "| 90% CI |" in md


def test_junit_xml_is_well_formed(matrix, tmp_path):
    p, b = matrix["polite"], matrix["blunt"]
    junit = tmp_path / "junit.xml"
    code = _run_cli(
        [
            str(matrix["dir"]),
            "--policy",
            b,
            "--min-transfer",
            "0.5",
            "--baseline-policy",
            p,
            "--max-drop",
            "0.6",
            "--junit",
            str(junit),
            "--decision",
            "point",
        ]
    )
    assert code == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "1" and root.get("errors") == "0"
    cases = root.findall("./testsuite/testcase")
    names = [c.get("name") for c in cases]
    assert names[0] == "results" and "transfer" in names and "regression" in names
    assert len(cases) == 1 + 6 + 2  # results, one infra check per read cell, transfer, regression
    by_name = {c.get("name"): c for c in cases}
    fail = by_name["transfer"].find("failure")
    assert fail is not None and "0.125" in fail.get("message") and "< 0.5" in fail.text
    assert by_name["regression"].find("failure") is None and by_name["regression"].find("error") is None
    assert "rule=point" in by_name["transfer"].find("system-out").text
    # the default rule: the transfer interval over 4 tasks contains 0.5 -> an <error> (could not judge)
    assert _run_cli([str(matrix["dir"]), "--policy", b, "--min-transfer", "0.5", "--junit", str(junit)]) == 3
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "0" and root.get("errors") == "1"
    err = {c.get("name"): c for c in root.findall("./testsuite/testcase")}["transfer"].find("error")
    assert err is not None and err.get("type") == "could-not-judge" and "90% CI" in err.get("message")


def test_strict_needs_the_ci_to_clear_the_threshold(tmp_path, write_scripted):
    """A noisy training donor: the transfer ratio clears the threshold but its CI lower bound does not."""
    policy = write_scripted([("Please donate.", 1.0)], name="policy.json")
    coin = write_scripted([("Fine [DONATE $2]", 0.5), ("Nope [DONATE $0]", 0.5)], name="coin.json")
    give050 = write_scripted([("OK [DONATE $0.50]", 1.0)], name="give050.json")
    cfg = CrossplayConfig(
        policies=[policy], simulators=[coin, give050], train_simulator=coin, tasks=10, rollouts=1, max_turns=1
    )
    res = run_crossplay(cfg, arena=P4GArena(max_turns=1), progress=False)
    coin_cell = next(c for c in res["cells"] if c["simulator"] == coin)
    train = sum(sum(v) for v in coin_cell["task_rewards"].values()) / 10
    assert 0 < train < 1  # the coin donor really is noisy under these seeds
    t = res["transfer"][0]
    assert t["transfer_ratio"] == pytest.approx(0.25 / train)
    threshold = t["transfer_ratio"] - 1e-9
    assert t["ci95"][0] < threshold <= t["transfer_ratio"]
    assert evaluate_gate(res, policy, min_transfer=threshold, decision="point").exit_code == 0
    strict = evaluate_gate(res, policy, min_transfer=threshold, strict=True)
    assert strict.exit_code == 1 and "CI lower bound" in strict.checks[-1].message
    assert strict.strict and strict.decision == "strict" and strict.level == 0.95
    assert evaluate_gate(res, policy, min_transfer=threshold).exit_code == 3  # the interval contains it


def _records(rewards: dict[str, dict[str, list[float | None]]]) -> list[ConversationRecord]:
    """Records from {policy|simulator: {task: [reward or None for an infra failure]}}."""
    recs = []
    for cell, tasks in rewards.items():
        pol, sim = cell.split("|")
        for task, rs in tasks.items():
            for g, r in enumerate(rs):
                recs.append(
                    ConversationRecord.make(
                        policy=pol,
                        simulator=sim,
                        task_id=task,
                        rollout=g,
                        status="infra_error" if r is None else "done",
                        reward=r,
                        infra_error="timeout" if r is None else None,
                        success=None if r is None else r > 0,
                    )
                )
    return recs


def test_strict_regression_uses_the_upper_bound_of_the_drop():
    tasks = [f"t{i}" for i in range(6)]
    cand = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    recs = _records({
        "cand|train": {t: [1.0] for t in tasks}, "base|train": {t: [1.0] for t in tasks},
        "cand|h": {t: [r] for t, r in zip(tasks, cand, strict=True)}, "base|h": {t: [1.0] for t in tasks},
    })  # fmt: skip
    res = crossplay_results(
        recs,
        CrossplayConfig(
            policies=["cand", "base"], simulators=["train", "h"], train_simulator="train", tasks=6, rollouts=1
        ),
    )
    v = evaluate_gate(res, "cand", baseline_policy="base", max_drop=0.4, decision="point")
    reg = v.checks[-1]
    assert reg.name == "regression" and reg.value == pytest.approx(1 - 4 / 6) and v.exit_code == 0
    assert reg.ci95[0] <= reg.value <= reg.ci95[1] and reg.ci95[1] > 0.4
    assert evaluate_gate(res, "cand", baseline_policy="base", max_drop=0.4, strict=True).exit_code == 1
    assert evaluate_gate(res, "cand", baseline_policy="base", max_drop=0.4).exit_code == 3
    # the drop is judged on held-out simulators only: the training column (equal here) does not dilute it
    assert evaluate_gate(res, "cand", baseline_policy="base", max_drop=0.3, decision="point").exit_code == 1


def test_infra_failures_make_the_gate_unable_to_judge(tmp_path, write_scripted):
    policy = write_scripted([("Please donate.", 1.0)], name="policy.json")
    give2 = write_scripted([("Sure [DONATE $2]", 1.0)], name="give2.json")
    parts = {
        policy: make_participant(policy),
        give2: make_participant(give2),
        "broken": Participant("broken", BrokenModel()),
    }
    cfg = CrossplayConfig(
        policies=[policy], simulators=[give2, "broken"], train_simulator=give2, tasks=2, rollouts=1, max_turns=1
    )
    out = tmp_path / "run"
    run_crossplay(cfg, arena=P4GArena(max_turns=1), participants=parts, out=out, progress=False, report=False)
    # the candidate's training cell is perfect, but one cell is all infra failures: never a silent pass
    assert _run_cli([str(out), "--policy", policy, "--min-transfer", "0.5"]) == 3
    # nothing scored either
    assert _run_cli([str(out), "--policy", policy, "--min-transfer", "0.5", "--max-infra-rate", "1.0"]) == 3
    v = gate_run_dir(out, policy)
    bad = next(c for c in v.checks if c.name == f"infra:{policy}|broken")
    assert bad.status == "error" and bad.value == 1.0 and "2 of 2" in bad.message


def test_infra_rate_threshold():
    recs = _records({"p|s": {"t0": [1.0, None], "t1": [1.0, 1.0], "t2": [1.0, 1.0]}})  # 1 of 6 lost
    res = crossplay_results(recs, CrossplayConfig(policies=["p"], simulators=["s"], tasks=3, rollouts=2))
    assert evaluate_gate(res, "p", max_infra_rate=0.2).exit_code == 0
    assert evaluate_gate(res, "p", max_infra_rate=0.1).exit_code == 3


def test_could_not_judge(matrix, tmp_path, write_scripted):
    d = str(matrix["dir"])
    # no such run, no such policy, another kind of file: usage errors (exit 2), not "could not judge" (3)
    assert _run_cli([str(tmp_path / "nowhere"), "--policy", "x", "--min-transfer", "0.5"]) == 2
    assert _run_cli([d, "--policy", "someone-else", "--min-transfer", "0.5"]) == 2  # not a row: usage
    assert _run_cli([d, "--policy", matrix["blunt"], "--baseline-policy", "ghost", "--max-drop", "0.1"]) == 2  # usage
    # a missing cell (e.g. a results file cut short by hand)
    res = json.loads((matrix["dir"] / "results.json").read_text())
    res["cells"] = res["cells"][:-1]
    v = evaluate_gate(res, matrix["blunt"])
    assert v.exit_code == 3 and "missing cells" in v.checks[0].message
    # not a cross-play results file
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "collapse-probe/play/v1"}))
    assert _run_cli([str(other), "--policy", "x", "--min-transfer", "0.5"]) == 2  # another kind of run: usage
    # bad options are exit 2 with a message, never a pass
    assert _run_cli([d, "--policy", matrix["blunt"], "--baseline-policy", matrix["polite"]]) == 2
    with pytest.raises(ConfigError, match="--max-drop"):
        evaluate_gate(matrix["results"], matrix["blunt"], baseline_policy=matrix["polite"], max_drop=-1)
    # --strict is a rule of its own: with another --decision it is a contradiction, not a silent choice
    assert _run_cli([d, "--policy", matrix["blunt"], "--strict", "--decision", "point"]) == 2
    with pytest.raises(ConfigError, match="--level"):
        evaluate_gate(matrix["results"], matrix["blunt"], min_transfer=0.5, level=1.5)
    with pytest.raises(ConfigError, match="--decision"):
        evaluate_gate(matrix["results"], matrix["blunt"], decision="vote")  # type: ignore[arg-type]


def test_transfer_cannot_be_judged_without_a_defined_ratio(write_scripted):
    policy = write_scripted([("Hi.", 1.0)], name="policy.json")
    refuse = write_scripted([("No. [DONATE $0]", 1.0)], name="refuse.json")
    give2 = write_scripted([("Sure [DONATE $2]", 1.0)], name="give2.json")
    arena = P4GArena(max_turns=1)
    res = run_crossplay(
        CrossplayConfig(
            policies=[policy], simulators=[refuse, give2], train_simulator=refuse, tasks=2, rollouts=1, max_turns=1
        ),
        arena=arena,
        progress=False,
    )
    v = evaluate_gate(res, policy, min_transfer=0.5)
    assert v.exit_code == 3 and "undefined" in v.checks[-1].message
    # no training simulator in the run: a transfer threshold cannot be judged
    res2 = run_crossplay(
        CrossplayConfig(policies=[policy], simulators=[refuse, give2], tasks=2, rollouts=1, max_turns=1),
        arena=arena,
        progress=False,
    )
    assert res2["transfer"] == []
    assert evaluate_gate(res2, policy, min_transfer=0.5).exit_code == 3
    health = evaluate_gate(res2, policy)
    assert health.exit_code == 0  # nothing asked beyond a complete, healthy run
    assert health.checks[-1].name == "thresholds" and "not the policy" in health.checks[-1].message
    assert "not the policy" in markdown(health)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("mean_reward", float("nan"), "'mean_reward' is nan"),
        ("mean_reward", "0.5", "'mean_reward' is '0.5'"),
        ("n", None, "'n' is None"),
        ("n", "8", "'n' is '8'"),
        ("infra_failures", 1.5, "'infra_failures' is 1.5"),
        ("task_rewards", "lots", "'task_rewards' is 'lots'"),
        ("success_rate", "high", "'success_rate' is 'high'"),
        ("ci95", [float("nan"), 1.0], "'ci95' is [nan, 1.0]"),
        ("reward", None, "[1] is None"),
        ("reward", "1.0", "[1] is '1.0'"),
        ("reward", float("nan"), "[1] is nan"),
        ("reward", 7.0, "outside the run's reward_range [0, 1]"),
    ],
)
def test_unreadable_cells_cannot_be_judged(matrix, tmp_path, capsys, field, value, expected):
    """NaN, None or strings in a cell the gate reads: exit 2 with one line naming the cell, never a pass."""
    res = json.loads((matrix["dir"] / "results.json").read_text())
    cell = next(c for c in res["cells"] if c["policy"] == matrix["polite"] and c["simulator"] != res["train_simulator"])
    if field == "reward":
        cell["task_rewards"][res["tasks"][2]][1] = value
    else:
        cell[field] = value
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(res))  # Python writes NaN as the JSON extension it also reads
    for rule in ("interval", "point", "strict"):
        v = evaluate_gate(json.loads(path.read_text()), matrix["polite"], min_transfer=0.1, decision=rule)
        assert v.exit_code == 3 and v.checks[0].name == "results" and v.checks[0].status == "error"
        msg = v.checks[0].message
        assert f"cell {matrix['polite']} vs {cell['simulator']}" in msg and expected in msg and "\n" not in msg
    assert _run_cli([str(path), "--policy", matrix["polite"], "--min-transfer", "0.1", "--decision", "point"]) == 3
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err and expected in out.out


def test_bad_reward_range_cannot_be_judged(matrix):
    res = dict(matrix["results"].to_json(), reward_range=[1, 0])
    v = evaluate_gate(res, matrix["polite"], min_transfer=0.1)
    assert v.exit_code == 3 and "reward_range" in v.checks[0].message


def _error_rates():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "gate_error_rates.py"
    spec = importlib.util.spec_from_file_location("gate_error_rates", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is created
    spec.loader.exec_module(mod)
    return mod


def _pass_rate(mod, panel: str, tasks: int, rollouts: int, transfer: float, runs: int, **options) -> float:
    import numpy as np

    rng = np.random.default_rng([tasks, rollouts, int(100 * transfer)])
    passed = 0
    for _ in range(runs):
        res = mod.simulate_run(rng, mod.PANELS[panel], tasks, rollouts, transfer)
        passed += evaluate_gate(res, "candidate", min_transfer=0.8, **options).exit_code == 0
    return passed / runs


@pytest.mark.parametrize(("tasks", "rollouts", "point_floor"), [(10, 1, 0.3), (40, 4, 0.12)])
def test_a_policy_below_the_threshold_rarely_passes(tasks, rollouts, point_floor):
    """True transfer 0.75 against a 0.8 gate: the point rule passes it in 25-45 % of runs, the default
    in at most 10 % (measured: under 2 %; with 150 runs 10 % lies 4 standard errors away)."""
    mod = _error_rates()
    runs = 150
    assert _pass_rate(mod, "bernoulli", tasks, rollouts, 0.75, runs) <= 0.10
    assert _pass_rate(mod, "bernoulli", tasks, rollouts, 0.75, runs, decision="point") >= point_floor


def test_a_policy_that_transfers_passes_at_40_tasks_x_4_rollouts():
    """True transfer 1.0 at 40 x 4 passes the default in >= 80 % of runs, here on P4G-like donation
    rewards of tasks that mostly succeed (p_i ~ Beta(8, 1); the table in docs/ci-gate.md has the
    harder panels: 0.81 with binary rewards around 0.5)."""
    mod = _error_rates()
    assert _pass_rate(mod, "ceiling", 40, 4, 1.0, 100) >= 0.9


def test_error_rate_benchmark_prints_the_table(capsys):
    mod = _error_rates()
    assert mod.main(["--reps", "3", "--tasks", "10", "--rollouts", "1"]) == 0
    out = capsys.readouterr().out
    assert "| 10 x 1 |" in out and "pass at 0.75: default" in out
    assert mod.main(["--cells", "--reps", "3", "--tasks", "4", "--rollouts", "2", "--panel", "ceiling"]) == 0
    assert "| ceiling | 4 x 2 |" in capsys.readouterr().out
    assert mod.main(["--compare", "--reps", "2", "--tasks", "10", "--rollouts", "1"]) == 0
    out = capsys.readouterr().out
    assert "BCa bootstrap" in out and "Fieller" in out and "| 10 x 1 |" in out
    assert mod.main(["--at-threshold", "--reps", "2", "--tasks", "10", "--rollouts", "1"]) == 0
    assert "default: pass" in capsys.readouterr().out
